/*
 * lwp-events: the assembly blocks whose records lwp-events.c prints
 *
 * Each block ev_X(lwpcb, trips) runs "llwpcb lwpcb" (not counted), then
 * the code from label ev_X_start up to label ev_X_stop, where
 * "llwpcb 0" disables LWP (not counted either; choice 39).  Everything
 * from ev_X_start up to ev_X_stop retires with LWP enabled, so it is
 * what native-trace records when it single-steps the block on the host.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#ifndef LWP_EVENTS_H
#define LWP_EVENTS_H

#include <signal.h>
#include <stdint.h>

/* Every branch kind, far transfers, SYSCALL, REP strings; trips >= 1 */
void ev_main(void *lwpcb, uint64_t trips);
/* Nothing but branches, for large intervals */
void ev_dense(void *lwpcb, uint64_t trips);
/* A store to a read-only page, restarted after a SIGSEGV handler */
void ev_sig(void *lwpcb, uint64_t trips);
/* Stores into its own translation block (self-modifying code) */
void ev_smc(void *lwpcb, uint64_t trips);
/* Straight-line LWPVAL and LWPINS; trips is ignored (not run natively) */
void ev_val(void *lwpcb, uint64_t trips);

/* The SIGSEGV handler of ev_sig (SA_SIGINFO) */
void ev_segv_handler(int sig, siginfo_t *info, void *uc);
/* Called by ev_segv_handler for a fault it does not expect */
void ev_unexpected_segv(void *info);

/* The page ev_sig stores to */
extern void *ev_sig_page;
/* ev_smc: the sum of the immediates its MOV loaded */
extern uint32_t ev_smc_sum;

/* Labels, for BaseIP and LimitIP and for the tracer's range */
extern const char ev_main_start[], ev_main_stop[];
extern const char ev_dense_start[], ev_dense_stop[];
extern const char ev_sig_start[], ev_sig_stop[];
extern const char ev_val_start[], ev_val_stop[];
extern const char ev_smc_start[], ev_smc_stop[];
extern const char ev_ipf_a[], ev_ipf_b[], ev_ipf_c[];
extern const char ev_val_mid[];

#endif
