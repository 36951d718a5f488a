/*
 * x86 AMD Lightweight Profiling: the instructions
 *
 * LLWPCB, SLWPCB, LWPINS and LWPVAL: the engine does what they do
 * (lwp-engine.h), on the CPU context and guest memory of lwp_glue.c.
 * Section numbers are those of AMD publication 43724 revision 3.08.
 *
 * Copyright (c) 2026 qemu-lwp contributors
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#include "qemu/osdep.h"
#include "qemu/log.h"
#include "cpu.h"
#include "exec/exec-all.h"
#include "exec/cpu_ldst.h"
#include "exec/helper-proto.h"
#include "helper-tcg.h"
#include "lwp_helper.h"
#include "trace.h"

/* 5.1 */
void helper_llwpcb(CPUX86State *env, target_ulong ea)
{
    uint32_t ev = 0;
    LwpContext ctx;
    LwpGlue g;
    LwpMem mem;
    LwpResult res;
    LwpStatus st;

    if (env->lwp.cb_addr && lwp_eligible_in(env, env->prof, env->eip)) {
        ev = lwp_tb_events(env->hflags, env->prof) & env->lwp.flags;
    }
    lwp_begin(env, &ctx, &g, &mem, GETPC());
    /* LLWPCB is counted by neither LWP (choice 39); a fault unwinds it */
    lwp_add(&env->lwp, ev, 1, 1);
    st = lwp_llwpcb(&env->lwp, &ctx, &mem, ea, &res);
    if (st == LWP_FAULT_GP) {
        trace_lwp_llwpcb_gp(env_cpu(env)->cpu_index, ea, res.gp_reason);
        qemu_log_mask(LOG_GUEST_ERROR, "LLWPCB 0x%" PRIx64
                      " raises #GP: %s\n", (uint64_t)ea, res.gp_reason);
    }
    if (st != LWP_OK) {
        lwp_add(&env->lwp, ev, -1, -1);
    } else if (env->lwp.cb_addr) {
        trace_lwp_llwpcb(env_cpu(env)->cpu_index, env->lwp.cb_addr,
                         env->lwp.flags, env->lwp.buffer_base,
                         env->lwp.buffer_size);
    } else {
        trace_lwp_llwpcb_disable(env_cpu(env)->cpu_index);
    }
    lwp_finish(&g, st, &res);
}

/* 5.2 */
target_ulong helper_slwpcb(CPUX86State *env)
{
    LwpContext ctx;
    LwpGlue g;
    LwpMem mem;
    LwpResult res;
    LwpStatus st;
    uint64_t ea;

    lwp_begin(env, &ctx, &g, &mem, GETPC());
    /* the counters after the instructions before this one (choice 54) */
    lwp_x86_flush_recount(env, g.ra, 1);
    st = lwp_slwpcb(&env->lwp, &ctx, &mem, &ea, &res);
    lwp_x86_flush_recount(env, g.ra, -1);
    if (st == LWP_OK && env->lwp.cb_addr) {
        trace_lwp_flush(env_cpu(env)->cpu_index, env->lwp.cb_addr,
                        env->lwp.head);
    }
    lwp_finish(&g, st, &res);
    return ea;
}

/* 5.4: returns the new CF */
target_ulong helper_lwpins(CPUX86State *env, target_ulong data1,
                           target_ulong data2, uint32_t flags)
{
    LwpContext ctx;
    LwpGlue g;
    LwpMem mem;
    LwpResult res;

    lwp_begin(env, &ctx, &g, &mem, GETPC());
    lwp_finish(&g, lwp_lwpins(&env->lwp, &ctx, &mem, env->eip, data1, data2,
                              flags, &res), &res);
    return res.full;
}

/*
 * 5.3: @src is the r/m operand's register value, or its linear address
 * when @is_mem, read only if this LWPVAL stores a record.
 */
void helper_lwpval(CPUX86State *env, target_ulong src, target_ulong data2,
                   uint32_t flags, uint32_t is_mem)
{
    uintptr_t ra = GETPC();
    LwpContext ctx;
    LwpGlue g;
    LwpMem mem;
    LwpResult res;
    uint32_t data1 = src;

    lwp_begin(env, &ctx, &g, &mem, ra);
    if (lwp_needs_sync(&env->lwp)) {
        lwp_finish(&g, lwp_sync(&env->lwp, &ctx, &mem, &res), &res);
    }
    if (is_mem) {
        data1 = 0;
        if (lwp_lwpval_fires(&env->lwp, &ctx, env->eip)) {
            data1 = cpu_ldl_data_ra(env, src, ra);
            x86_profile_load(env, src, 4, ra);
        }
    }
    lwp_finish(&g, lwp_lwpval(&env->lwp, &ctx, &mem, env->eip, data1, data2,
                              flags, &res), &res);
}
