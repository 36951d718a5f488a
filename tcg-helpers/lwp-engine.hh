// qemu-lwp engine: lwp-engine.h for C++ (the engine and its tests).  The
// API has C linkage; lwp-engine.h itself is plain C, as QEMU includes it.
//
// Copyright (c) 2026 qemu-lwp contributors
// SPDX-License-Identifier: GPL-2.0-or-later

#ifndef LWP_ENGINE_HH
#define LWP_ENGINE_HH

extern "C" {
#include "lwp-engine.h"
}

#endif
