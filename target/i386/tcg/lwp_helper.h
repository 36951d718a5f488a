/*
 * x86 AMD Lightweight Profiling: what the LWP helpers share
 *
 * Copyright (c) 2026 qemu-lwp contributors
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#ifndef I386_LWP_HELPER_H
#define I386_LWP_HELPER_H

/* lwp_glue.c */
typedef struct LwpGlue {
    CPUX86State *env;
    int mmu_idx;
    uintptr_t ra;
    /*
     * RAM pages that a probe for writing found in this operation (a record
     * and the head): its writes, which come after it with no guest code in
     * between, do not look them up again.  NULL: none.
     */
    void *probed_host[2];
    vaddr probed_page[2];
} LwpGlue;

int lwp_mmu_index(CPUX86State *env);
extern const LwpMemOps lwp_mem_ops;
void lwp_begin(CPUX86State *env, LwpContext *ctx, LwpGlue *g,
               LwpMem *mem, uintptr_t ra);
void lwp_threshold_interrupt(CPUX86State *env);
void lwp_finish(LwpGlue *g, LwpStatus st, const LwpResult *res);

/* lwp_count_helper.c */
uint32_t lwp_tb_events(uint32_t tb_flags, uint64_t prof);
bool lwp_eligible_in(CPUX86State *env, uint64_t prof,
                     target_ulong eip);
void lwp_add(LwpState *s, uint32_t ev, int32_t insns, int32_t clocks);
void lwp_store_due(CPUX86State *env, const LwpEventInfo *ev);

/* lwp_dme_helper.c */
void lwp_dme_take(CPUX86State *env, LwpEventInfo *ev);

#endif /* I386_LWP_HELPER_H */
