#!/usr/bin/env python3
"""Validate a speedscope file: speedscope's own JSON schema
(speedscope-file-format-schema.json, from the npm package speedscope
1.25.0, dist/release/file-format-schema.json, MIT licence), then what the
schema cannot say and speedscope's importer relies on: every frame index
is in range, samples and weights have the same length, weights are
positive and endValue - startValue is their sum.  Then what lwp-prof
promises (docs/lwp-prof.md): a run of equal stacks is one sample, so no
two consecutive samples of a profile are the same stack, and the weights
add up to the events the samples stand for.

usage: check-speedscope.py [--functions] FILE [EXPECTED_WEIGHT]
Prints "speedscope: N profiles, N samples, weight N, N frames"; exits 1
if invalid.  --functions prints, first, a line "FUNCTION WEIGHT" for each
frame that ends a stack: its weight over every profile.
"""
import json
import os
import sys

import jsonschema

HERE = os.path.dirname(os.path.abspath(__file__))


def main():
    args = sys.argv[1:]
    functions = args[:1] == ["--functions"]
    if functions:
        args = args[1:]
    with open(os.path.join(HERE, "speedscope-file-format-schema.json")) as f:
        schema = json.load(f)
    with open(args[0]) as f:
        doc = json.load(f)
    jsonschema.validate(doc, schema)
    nframes = len(doc["shared"]["frames"])
    total = weight = 0
    by_frame = {}
    for p in doc["profiles"]:
        if p["type"] != "sampled":
            sys.exit("only sampled profiles are expected")
        if len(p["samples"]) != len(p["weights"]):
            sys.exit("%s: %d samples, %d weights" %
                     (p["name"], len(p["samples"]), len(p["weights"])))
        for stack in p["samples"]:
            for ix in stack:
                if not (isinstance(ix, int) and 0 <= ix < nframes):
                    sys.exit("%s: frame index %r out of range" % (p["name"], ix))
        if any(w <= 0 for w in p["weights"]):
            sys.exit("%s: a weight is not positive" % p["name"])
        if p["endValue"] - p["startValue"] != sum(p["weights"]):
            sys.exit("%s: endValue - startValue is not the sum of the weights"
                     % p["name"])
        for i in range(1, len(p["samples"])):
            if p["samples"][i] == p["samples"][i - 1]:
                sys.exit("%s: samples %d and %d are the same stack" %
                         (p["name"], i - 1, i))
        total += len(p["samples"])
        weight += sum(p["weights"])
        for stack, w in zip(p["samples"], p["weights"]):
            if stack:
                by_frame[stack[-1]] = by_frame.get(stack[-1], 0) + w
    if len(args) > 1 and weight != int(args[1]):
        sys.exit("weight %d, expected %s" % (weight, args[1]))
    if functions:
        for ix, w in sorted(by_frame.items()):
            print(doc["shared"]["frames"][ix]["name"], w)
    print("speedscope: %d profiles, %d samples, weight %d, %d frames" %
          (len(doc["profiles"]), total, weight, nframes))


if __name__ == "__main__":
    main()
