// qemu-lwp engine: CPUID Fn8000_001C and the LWP MSRs (spec 3.3, 4.2, 4.3)
//
// SPDX-License-Identifier: GPL-2.0-or-later

#include "lwp-engine.hh"

namespace lwp
{
namespace
{

constexpr uint64_t kXcr0Lwp = uint64_t{1} << LWP_XSTATE_BIT;

// Highest EventId whose bit is set in the supported set (Table 3-1,
// LwpMaxEvents); 0 when no event is supported.
constexpr uint32_t max_event(uint32_t edx)
{
    uint32_t events = edx & LWP_FEAT_EVENTS_MASK;
    uint32_t id = 0;
    for (uint32_t n = 1; n <= LWP_NUM_EVENTS; n++) {
        if (events & (1u << n)) {
            id = n;
        }
    }
    return id;
}

static_assert(max_event(0x8000000f) == 3, "Bulldozer reports 3 events");
static_assert(max_event(LWP_FEAT_AVAIL) == 0, "no event, no EventId");

} // namespace
} // namespace lwp

extern "C" {

// Table 3-1, EBX.  LwpCbSize is the minimum the spec allows: the fixed
// part up to LwpEventOffset plus one quadword (EventInterval, EventCounter)
// per EventId up to LwpMaxEvents.
uint32_t lwp_cpuid_ebx(uint32_t edx)
{
    uint32_t n = lwp::max_event(edx);
    uint32_t cb_qwords = LWP_EVENT_OFFSET / 8 + n;

    return cb_qwords << LWP_CPUID_EBX_CBSIZE_SHIFT |
           uint32_t{LWP_EVENT_RECORD_SIZE} << LWP_CPUID_EBX_EVENTSIZE_SHIFT |
           n << LWP_CPUID_EBX_MAXEVENTS_SHIFT |
           uint32_t{LWP_EVENT_OFFSET} << LWP_CPUID_EBX_EVENTOFFSET_SHIFT;
}

// Table 3-1, ECX: the latency, data address and cache filtering fields
// are 0 without the DCache miss event; LwpBranchPrediction is 0 without
// the branches retired event.
uint32_t lwp_cpuid_ecx(uint32_t ecx_caps, uint32_t edx)
{
    uint32_t caps =
        ecx_caps & ~(LWP_CAP_VERSION_MASK | LWP_CAP_MIN_BUFFER_MASK);

    if (!(edx & LWP_FEAT_DME)) {
        caps &= ~LWP_CAP_DME_ONLY_MASK;
    }
    if (!(edx & LWP_FEAT_BRE)) {
        caps &= ~LWP_CAP_BRANCH_PREDICTION;
    }
    return caps | uint32_t{LWP_VERSION} << LWP_CAP_VERSION_SHIFT |
           uint32_t{LWP_ENGINE_MIN_BUFFER} << LWP_CAP_MIN_BUFFER_SHIFT;
}

// spec 3.3: "Bit 0 of EAX is a copy of bit 62 from XFEATURE_ENABLED_MASK";
// bits 31:1 are the LWP_CFG features, a subset of EDX.  A feature is
// available only while LWP itself is (Glossary, "Available"), so EAX is 0
// whenever XCR0[62] is clear, as Xen computed it.
uint32_t lwp_cpuid_eax(uint64_t xcr0, uint64_t lwp_cfg, uint32_t edx)
{
    if (!(xcr0 & lwp::kXcr0Lwp)) {
        return 0;
    }
    return LWP_FEAT_AVAIL |
           (static_cast<uint32_t>(lwp_cfg & LWP_CFG_FEATURES_MASK) & edx);
}

// spec 4.2: "Only bits for supported features (those that are set in CPUID
// Fn8000_001C_EDX) can be turned on in LWP_CFG.  Attempting to set other
// bits causes a #GP fault."  Bit 0 and bits 63:48 are write-ignored and
// read as zero, as on the FX-8150 (prior-art).
LwpStatus lwp_cfg_write(uint64_t value, uint32_t edx, uint64_t *cfg)
{
    if (value & LWP_CFG_FEATURES_MASK & ~uint64_t{edx}) {
        return LWP_FAULT_GP;
    }
    *cfg = value & ~LWP_CFG_IGNORED_MASK;
    return LWP_OK;
}

// spec 4.3: "WRMSR to this register with a non-zero value generates a #GP
// fault"; writing zero disables LWP (the caller discards the state).
LwpStatus lwp_cbaddr_write(uint64_t value)
{
    return value ? LWP_FAULT_GP : LWP_OK;
}

} // extern "C"
