/*
 * qemu-lwp engine: the rules of AMD Lightweight Profiling
 *
 * This is the engine's whole interface.  It is plain C (scalar types,
 * status codes), implemented in C++17 without exceptions, and it never
 * touches guest memory: the QEMU glue reads and writes the guest and hands
 * the engine values.  Section numbers refer to AMD publication 43724
 * revision 3.08 ("spec").
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#ifndef LWP_ENGINE_H
#define LWP_ENGINE_H

#include <stdint.h>

#include "lwp/lwp-arch.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum LwpStatus {
    LWP_OK = 0,
    LWP_FAULT_GP,           /* the instruction raises #GP(0) */
} LwpStatus;

/*
 * CPUID Fn8000_001C (spec 3.3, Table 3-1).  @edx is the supported feature
 * set (LwpAvail plus events and LwpInt), @ecx_caps the capability flags the
 * CPU model asks for.
 */

/* EBX: LWPCB size, record size, highest EventId, event area offset */
uint32_t lwp_cpuid_ebx(uint32_t edx);
/*
 * The smallest ring buffer LLWPCB accepts, in units of 32 records
 * (LwpMinBufferSize): 1, as on every Family 15h part.
 */
#define LWP_ENGINE_MIN_BUFFER       1
/*
 * ECX: @ecx_caps with the flags the spec ties to an absent event cleared,
 * plus LwpVersion and LwpMinBufferSize.
 */
uint32_t lwp_cpuid_ecx(uint32_t ecx_caps, uint32_t edx);
/* EAX: what is available: XCR0[62] in bit 0, LWP_CFG & EDX above it */
uint32_t lwp_cpuid_eax(uint64_t xcr0, uint64_t lwp_cfg, uint32_t edx);

/*
 * WRMSR LWP_CFG (spec 4.2): LWP_FAULT_GP when @value turns on a feature
 * bit that @edx does not report, leaving *@cfg unchanged; otherwise the
 * value without its write-ignored bits is stored in *@cfg.
 */
LwpStatus lwp_cfg_write(uint64_t value, uint32_t edx, uint64_t *cfg);

/* WRMSR LWP_CBADDR (spec 4.3): only zero may be written */
LwpStatus lwp_cbaddr_write(uint64_t value);

#ifdef __cplusplus
}
#endif

#endif /* LWP_ENGINE_H */
