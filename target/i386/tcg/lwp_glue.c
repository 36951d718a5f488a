/*
 * x86 AMD Lightweight Profiling: the engine's view of the CPU
 *
 * The rules live in the engine (tcg-helpers/, lwp-engine.h); this file
 * gives it the CPU context and guest memory, and raises what it reports.
 * The engine never faults: its memory callbacks probe without faulting,
 * and when the engine reports a fault this file raises it after the
 * engine has returned, by repeating the access that failed.  Section
 * numbers are those of AMD publication 43724 revision 3.08.
 *
 * Copyright (c) 2026 qemu-lwp contributors
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#include "qemu/osdep.h"
#include "cpu.h"
#include "exec/exec-all.h"
#include "exec/cpu_ldst.h"
#include "helper-tcg.h"
#include "lwp_helper.h"
#include "trace.h"
#ifdef CONFIG_USER_ONLY
#include "user/page-protection.h"
#else
#include "qemu/main-loop.h"
#include "hw/i386/apic.h"
#endif

/*
 * LWP's own accesses to the LWPCB and the ring buffer are user-mode
 * accesses whatever the CPL (5.1: "The LWPCB must be in memory that is
 * readable and writable in user mode").
 */
int lwp_mmu_index(CPUX86State *env)
{
    return x86_mmu_index_pl(env, 3);
}

/*
 * Copy to or from guest RAM at @host.  A consumer on another vCPU reads
 * the head offset and MissedEvents and writes the tail offset while LWP
 * runs, so an aligned 4 or 8 bytes (one such field: the engine accesses
 * each separately) is one host access, which is never seen torn.
 */
static void lwp_host_copy(void *host, uint8_t *buf, uint32_t len,
                          MMUAccessType type)
{
    bool st = type == MMU_DATA_STORE;

    if (len == 4 && QEMU_PTR_IS_ALIGNED(host, 4)) {
        if (st) {
            qatomic_set((uint32_t *)host, ldl_he_p(buf));
        } else {
            stl_he_p(buf, qatomic_read((uint32_t *)host));
        }
#ifdef CONFIG_ATOMIC64
    } else if (len == 8 && QEMU_PTR_IS_ALIGNED(host, 8)) {
        if (st) {
            qatomic_set__nocheck((uint64_t *)host, ldq_he_p(buf));
        } else {
            stq_he_p(buf, qatomic_read__nocheck((uint64_t *)host));
        }
#endif
    } else if (st) {
        memcpy(host, buf, len);
    } else {
        memcpy(buf, host, len);
    }
}

/* The host address of @page if this operation probed it for writing */
static void *lwp_probed(LwpGlue *g, vaddr page)
{
    for (int i = 0; i < ARRAY_SIZE(g->probed_host); i++) {
        if (g->probed_host[i] && g->probed_page[i] == page) {
            return g->probed_host[i];
        }
    }
    return NULL;
}

/*
 * Probe [addr, addr + len) page by page without faulting; with @buf, also
 * copy to or from it.
 */
static bool lwp_access(LwpGlue *g, uint64_t addr, uint8_t *buf,
                       uint32_t len, MMUAccessType type)
{
    CPUX86State *env = g->env;

    while (len) {
        uint32_t plen = MIN(len, -(addr | TARGET_PAGE_MASK));
        vaddr page = addr & TARGET_PAGE_MASK;
        void *host = type == MMU_DATA_STORE ? lwp_probed(g, page) : NULL;
        int flags;

        if (host) {
            if (buf) {
                lwp_host_copy(host + (addr - page), buf, plen, type);
            }
            goto next;
        }
        flags = probe_access_flags(env, addr, plen, type, g->mmu_idx, true,
                                   &host, g->ra);
        if (flags & TLB_INVALID_MASK) {
            return false;
        }
        if (type == MMU_DATA_STORE && host && !flags) {
            /* the older entry makes room */
            g->probed_host[1] = g->probed_host[0];
            g->probed_page[1] = g->probed_page[0];
            g->probed_host[0] = host - (addr - page);
            g->probed_page[0] = page;
        }
        if (buf && host && !flags) {
            lwp_host_copy(host, buf, plen, type);
        } else if (buf) {
            /* MMIO, watchpoints, ...: the TLB entry is there now */
            for (uint32_t i = 0; i < plen; i++) {
                if (type == MMU_DATA_STORE) {
                    cpu_stb_mmuidx_ra(env, addr + i, buf[i], g->mmu_idx,
                                      g->ra);
                } else {
                    buf[i] = cpu_ldub_mmuidx_ra(env, addr + i, g->mmu_idx,
                                                g->ra);
                }
            }
        }
    next:
        addr += plen;
        len -= plen;
        if (buf) {
            buf += plen;
        }
    }
    return true;
}

static bool lwp_mem_read(void *opaque, uint64_t addr, void *buf,
                         uint32_t len)
{
    return lwp_access(opaque, addr, buf, len, MMU_DATA_LOAD);
}

static bool lwp_mem_probe_write(void *opaque, uint64_t addr, uint32_t len)
{
    return lwp_access(opaque, addr, NULL, len, MMU_DATA_STORE);
}

static void lwp_mem_write(void *opaque, uint64_t addr, const void *buf,
                          uint32_t len)
{
    /* Records become visible before the head offset that covers them */
    smp_wmb();
    lwp_access(opaque, addr, (uint8_t *)buf, len, MMU_DATA_STORE);
}

const LwpMemOps lwp_mem_ops = {
    .read = lwp_mem_read,
    .probe_write = lwp_mem_probe_write,
    .write = lwp_mem_write,
};

void lwp_x86_context(CPUX86State *env, LwpContext *ctx)
{
    SegmentCache *ds = &env->segs[R_DS];
    uint32_t f = ds->flags;

    memset(ctx, 0, sizeof(*ctx));
    ctx->cfg = env->lwp_cfg;
    ctx->edx = env->features[FEAT_8000_001C_EDX];
    ctx->ecx = env->features[FEAT_8000_001C_ECX];
    ctx->long64 = !!(env->hflags & HF_CS64_MASK);
    ctx->lma = !!(env->hflags & HF_LMA_MASK);
    ctx->va_bits = (env->cr[4] & CR4_LA57_MASK) ? 57 : 48;
    ctx->cpl = env->hflags & HF_CPL_MASK;
    if (!ctx->long64) {
        ctx->ds_base = (uint32_t)ds->base;
        ctx->ds_limit = ds->limit;
        if (f & DESC_P_MASK) {
            ctx->ds_flags |= LWP_DS_USABLE;
        }
        /* a writable data segment; code segments are never writable */
        if ((f & DESC_S_MASK) && !(f & DESC_CS_MASK) && (f & DESC_W_MASK)) {
            ctx->ds_flags |= LWP_DS_WRITABLE;
        }
        if (!(f & DESC_CS_MASK) && (f & DESC_E_MASK)) {
            ctx->ds_flags |= LWP_DS_EXPAND_DOWN;
        }
        if (f & DESC_B_MASK) {
            ctx->ds_flags |= LWP_DS_BIG;
        }
    }
}

/* 5: "These instructions raise #UD ... if bit 62 of XCR0 is 0" */
static void lwp_check_available(CPUX86State *env, uintptr_t ra)
{
    if (!(env->xcr0 & XSTATE_LWP_MASK)) {
        raise_exception_ra(env, EXCP06_ILLOP, ra);
    }
}

void lwp_begin(CPUX86State *env, LwpContext *ctx, LwpGlue *g,
               LwpMem *mem, uintptr_t ra)
{
    lwp_x86_commit(env);
    lwp_check_available(env, ra);
    lwp_x86_context(env, ctx);
    g->env = env;
    g->mmu_idx = lwp_mmu_index(env);
    g->ra = ra;
    g->probed_host[0] = g->probed_host[1] = NULL;
    mem->ops = &lwp_mem_ops;
    mem->opaque = g;
}

/*
 * 1.1 step 4: the ring buffer reached the threshold.  The interrupt is
 * taken before the next instruction: the instructions that store records
 * end their TB.  System mode: a fixed interrupt with vector
 * LWP_CFG[47:40] on this CPU's local APIC, which the guest must EOI
 * (choice 42).  User mode: SIGIO for this thread (cpu_loop).
 */
void lwp_threshold_interrupt(CPUX86State *env)
{
    trace_lwp_threshold(env_cpu(env)->cpu_index, env->lwp.head,
                        env->lwp.tail);
#ifdef CONFIG_USER_ONLY
    env->lwp_int_pending = 1;
    cpu_exit(env_cpu(env));
#else
    X86CPU *cpu = env_archcpu(env);

    if (cpu->apic_state) {
        bql_lock();
        apic_deliver_local_vector(cpu->apic_state,
                                  extract64(env->lwp_cfg,
                                            LWP_CFG_VECTOR_SHIFT, 8));
        bql_unlock();
    }
#endif
}

/*
 * The #PF error code of an LWP access to @addr, which faults: LWP's
 * accesses are user-mode data accesses (U), a write if @write (W), to a
 * page that is present (P) or not; as x86_cpu_record_sigsegv gives it in
 * user mode
 */
static uint32_t lwp_pf_error_code(CPUX86State *env, uint64_t addr,
                                  bool write)
{
    uint32_t err = PG_ERROR_U_MASK | (write ? PG_ERROR_W_MASK : 0);
#ifdef CONFIG_USER_ONLY
    bool present = page_get_flags(addr) & PAGE_VALID;
#else
    MemTxAttrs attrs;
    bool present = cpu_get_phys_page_attrs_debug(env_cpu(env), addr,
                                                 &attrs) != -1;
#endif

    return err | (present ? PG_ERROR_P_MASK : 0);
}

/*
 * Raise what the engine reported.  For a page fault, find the first page
 * of the failed access that faults and repeat the access there with a
 * faulting probe: that raises #PF with the right error code (or SIGSEGV
 * in user mode).  Should another CPU have mapped the pages in the
 * meantime, the instruction is simply restarted.
 */
void lwp_finish(LwpGlue *g, LwpStatus st, const LwpResult *res)
{
    CPUX86State *env = g->env;

    /* every LWP state change ends here: update what translation sees */
    cpu_sync_prof(env);
    if (res->interrupt) {
        lwp_threshold_interrupt(env);
    }
    if (st == LWP_FAULT_GP) {
        raise_exception_err_ra(env, EXCP0D_GPF, 0, g->ra);
    }
    if (st == LWP_FAULT_PF) {
        uint64_t addr = res->fault_addr;
        uint32_t len = res->fault_len;
        MMUAccessType type = res->fault_write ? MMU_DATA_STORE
                                              : MMU_DATA_LOAD;

        while (len) {
            uint32_t plen = MIN(len, -(addr | TARGET_PAGE_MASK));
            void *host;

            if (probe_access_flags(env, addr, plen, type, g->mmu_idx, true,
                                   &host, g->ra) & TLB_INVALID_MASK) {
                trace_lwp_fault(env_cpu(env)->cpu_index, res->fault_addr,
                                res->fault_len, res->fault_write,
                                lwp_pf_error_code(env, addr,
                                                  res->fault_write),
                                "raised");
                probe_access(env, addr, plen, type, g->mmu_idx, g->ra);
                break;
            }
            addr += plen;
            len -= plen;
        }
        if (!len) {
            trace_lwp_fault(env_cpu(env)->cpu_index, res->fault_addr,
                            res->fault_len, res->fault_write, 0,
                            "not raised: mapped since, the instruction "
                            "restarts");
        }
        cpu_loop_exit_restore(env_cpu(env), g->ra);
    }
}
