/*
 * Block stepping through ptrace, as debuggers use it: PTRACE_SINGLEBLOCK
 * resumes the tracee with EFLAGS.TF and, on x86, IA32_DEBUGCTL.BTF, so
 * that it stops after the next branch it takes (Intel SDM Vol. 3B
 * 17.4.3), not after the next instruction.  The tracer block-steps its
 * child from the SIGSTOP it raises until the child calls work(), a
 * function of known control flow, then through work(), and prints where
 * each stop inside work() was, as offsets from work, beside the targets
 * of the branches that work() takes, from its listing; then, on the
 * child's second call of work(), steps it instruction by instruction
 * (PTRACE_SINGLESTEP) and prints how many steps work() took (13: its
 * instructions as they execute):
 *
 *   blockstep want=W1,W2,... got=G1,G2,... steps=N
 *
 * tests/linux/run.sh checks got = want and steps = 13.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ptrace.h>
#include <sys/types.h>
#include <sys/user.h>
#include <sys/wait.h>
#include <unistd.h>

/*
 * work: a JMP, a Jcc not taken, a CALL, the callee's RET, an indirect
 * JMP, LOOP taken twice then not, and the RET to the caller.  The
 * targets of the branches taken inside it are work_1, work_f, work_2,
 * work_3 three times; its 13 instructions as executed: MOV, NOP, JMP,
 * CMP, JNE, CALL, RET, LEA, JMP, LOOP three times, RET.
 */
extern char work[], work_1[], work_2[], work_3[], work_f[], work_end[];
void work_call(void);
asm(".text\n"
    ".globl work, work_1, work_2, work_3, work_f, work_end\n"
    "work: mov $3, %ecx\n\t"
    "nop\n\t"
    "jmp work_1\n"
    "work_1: cmp $3, %ecx\n\t"
    "jne work_never\n\t"
    "call work_f\n"
    "work_2: lea work_3(%rip), %rax\n\t"
    "jmp *%rax\n"
    "work_3: loop work_3\n\t"
    "ret\n"
    "work_f: ret\n"
    "work_never: ud2\n"
    "work_end:\n"
    ".globl work_call\n"
    "work_call: call work\n\t"
    "ret\n");

#define MAX_STOPS 10000

static unsigned long rip_of(pid_t pid)
{
    struct user_regs_struct regs;

    if (ptrace(PTRACE_GETREGS, pid, NULL, &regs) < 0) {
        perror("PTRACE_GETREGS");
        exit(1);
    }
    return regs.rip;
}

/* Resume @pid with @req, wait for its next stop: its RIP, 0 if it ended */
static unsigned long step(pid_t pid, enum __ptrace_request req)
{
    int status;

    if (ptrace(req, pid, NULL, NULL) < 0) {
        perror("ptrace");
        exit(1);
    }
    if (waitpid(pid, &status, 0) != pid || !WIFSTOPPED(status)) {
        return 0;
    }
    if (WSTOPSIG(status) != SIGTRAP) {
        fprintf(stderr, "blockstep: stopped by signal %d\n",
                WSTOPSIG(status));
        exit(1);
    }
    return rip_of(pid);
}

static int in_work(unsigned long rip)
{
    return rip >= (unsigned long)work && rip < (unsigned long)work_end;
}

int main(void)
{
    const char *want[] = { work_1, work_f, work_2, work_3, work_3, work_3 };
    char got[512] = "", w[512] = "";
    unsigned long rip;
    unsigned i, n, steps;
    int status;
    pid_t pid = fork();

    if (pid == 0) {
        ptrace(PTRACE_TRACEME, 0, NULL, NULL);
        raise(SIGSTOP);
        work_call();
        work_call();
        _exit(0);
    }
    if (pid < 0 || waitpid(pid, &status, 0) != pid || !WIFSTOPPED(status)) {
        fprintf(stderr, "blockstep: no child stopped\n");
        return 1;
    }
    /* to the CALL of work: a branch, so the stop is at work */
    for (n = 0; n < MAX_STOPS; n++) {
        rip = step(pid, PTRACE_SINGLEBLOCK);
        if (!rip || rip == (unsigned long)work) {
            break;
        }
    }
    if (rip != (unsigned long)work) {
        fprintf(stderr, "blockstep: never stopped at work (%lx)\n", rip);
        return 1;
    }
    /* through work, to the RET to its caller */
    for (n = 0; n < MAX_STOPS; n++) {
        rip = step(pid, PTRACE_SINGLEBLOCK);
        if (!in_work(rip)) {
            break;
        }
        snprintf(got + strlen(got), sizeof(got) - strlen(got), "%s%lx",
                 n ? "," : "", rip - (unsigned long)work);
    }
    /* to the second call, then each instruction of work */
    for (n = 0; n < MAX_STOPS && rip != (unsigned long)work; n++) {
        rip = step(pid, PTRACE_SINGLEBLOCK);
        if (!rip) {
            break;
        }
    }
    for (steps = 0; steps < MAX_STOPS && in_work(rip); steps++) {
        rip = step(pid, PTRACE_SINGLESTEP);
    }
    for (i = 0; i < sizeof(want) / sizeof(want[0]); i++) {
        snprintf(w + strlen(w), sizeof(w) - strlen(w), "%s%lx",
                 i ? "," : "", (unsigned long)(want[i] - work));
    }
    printf("blockstep want=%s got=%s steps=%u\n", w, got, steps);
    ptrace(PTRACE_CONT, pid, NULL, NULL);
    waitpid(pid, &status, 0);
    return 0;
}
