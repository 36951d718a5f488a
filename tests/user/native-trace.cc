// native-trace: the instructions a program retires on the host CPU between
// two addresses, found by single-stepping it under ptrace.  This is the
// oracle of events-check.py: no emulator and nothing of this project takes
// part in it.
//
//   native-trace [-o FILE] [-m MAX_STEPS] START END PROG [ARG...]
//
// Runs PROG (no address randomisation) to a breakpoint at START (hex), then
// single-steps it until the instruction pointer reaches END (hex), and
// writes one line per event, in order:
//
//   ADDR                   the instruction at ADDR retired
//   # fault ADDR SIGNO     the instruction at ADDR raised SIGNO and did not
//                          retire; the signal is delivered to PROG
//   # handler ADDR         PROG's handler for that signal starts at ADDR
//   # end STEPS            END reached after STEPS single steps
//
// ADDR is lowercase hex without 0x.  A step that completes an instruction
// retired it: a SYSCALL step (which includes the whole system call) and
// the rt_sigreturn that resumes a faulting instruction are listed like any
// other instruction.  A REP string instruction traps after every iteration
// with the instruction pointer unchanged; only its last step, the one that
// leaves it, retires it.  After END, PROG runs on untraced; native-trace
// exits with 0 when PROG exits with 0.
//
// SPDX-License-Identifier: GPL-2.0-or-later

#include <cerrno>
#include <csignal>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <sys/personality.h>
#include <sys/ptrace.h>
#include <sys/types.h>
#include <sys/user.h>
#include <sys/wait.h>
#include <unistd.h>

namespace
{

[[noreturn]] void die(const char *what)
{
    std::fprintf(stderr, "native-trace: %s: %s\n", what, std::strerror(errno));
    std::exit(2);
}

[[noreturn]] void fail(const std::string &msg)
{
    std::fprintf(stderr, "native-trace: %s\n", msg.c_str());
    std::exit(2);
}

uint64_t parse_hex(const char *s)
{
    char *end;
    errno = 0;
    unsigned long long v = std::strtoull(s, &end, 16);
    if (errno || end == s || *end) {
        fail(std::string("not a hex address: ") + s);
    }
    return v;
}

const long kRipOffset = offsetof(struct user_regs_struct, rip);

// PTRACE_PEEKUSER or PTRACE_PEEKTEXT, which return the word read
uint64_t peek_word(enum __ptrace_request req, pid_t pid, uint64_t addr,
                   const char *what)
{
    errno = 0;
    long v = ptrace(req, pid, addr, nullptr);
    if (errno) {
        die(what);
    }
    return static_cast<uint64_t>(v);
}

uint64_t get_rip(pid_t pid)
{
    return peek_word(PTRACE_PEEKUSER, pid, kRipOffset, "PTRACE_PEEKUSER rip");
}

void set_rip(pid_t pid, uint64_t rip)
{
    if (ptrace(PTRACE_POKEUSER, pid, kRipOffset, rip) != 0) {
        die("PTRACE_POKEUSER rip");
    }
}

uint64_t peek(pid_t pid, uint64_t addr)
{
    return peek_word(PTRACE_PEEKTEXT, pid, addr, "PTRACE_PEEKTEXT");
}

// Is the instruction at addr a string instruction with a REP, REPE or
// REPNE prefix (legacy prefixes and REX allowed before the opcode)?
bool is_rep_string(pid_t pid, uint64_t addr)
{
    uint8_t b[16];
    uint64_t w0 = peek(pid, addr), w1 = peek(pid, addr + 8);
    std::memcpy(b, &w0, 8);
    std::memcpy(b + 8, &w1, 8);
    bool rep = false;
    unsigned i = 0;
    for (; i < 15; i++) {
        uint8_t p = b[i];
        if (p == 0xf2 || p == 0xf3) {
            rep = true;
        } else if (!(p == 0x66 || p == 0x67 || p == 0xf0 || p == 0x2e ||
                     p == 0x36 || p == 0x3e || p == 0x26 || p == 0x64 ||
                     p == 0x65)) {
            break;
        }
    }
    if ((b[i] & 0xf0) == 0x40) {
        i++;
    }
    uint8_t op = b[i];
    bool string_op = (op >= 0xa4 && op <= 0xa7) || (op >= 0xaa && op <= 0xaf) ||
                     (op >= 0x6c && op <= 0x6f);
    return rep && string_op;
}

int wait_stop(pid_t pid)
{
    int st;
    if (waitpid(pid, &st, 0) != pid) {
        die("waitpid");
    }
    return st;
}

// PTRACE_CONT or PTRACE_SINGLESTEP delivering sig; the signal of the next
// stop.  The program must not end before it stops again.
int resume(enum __ptrace_request req, pid_t pid, int sig, const char *until)
{
    if (ptrace(req, pid, nullptr, sig) != 0) {
        die(req == PTRACE_CONT ? "PTRACE_CONT" : "PTRACE_SINGLESTEP");
    }
    int st = wait_stop(pid);
    if (!WIFSTOPPED(st)) {
        fail(std::string("the program ended before reaching ") + until);
    }
    return WSTOPSIG(st);
}

} // namespace

int main(int argc, char **argv)
{
    const char *out_path = nullptr;
    unsigned long long max_steps = 100000000ull;
    int opt;
    while ((opt = getopt(argc, argv, "+o:m:")) != -1) {
        if (opt == 'o') {
            out_path = optarg;
        } else if (opt == 'm') {
            max_steps = std::strtoull(optarg, nullptr, 0);
        } else {
            fail("usage: native-trace [-o FILE] [-m MAX_STEPS] START END "
                 "PROG [ARG...]");
        }
    }
    if (argc - optind < 3) {
        fail("usage: native-trace [-o FILE] [-m MAX_STEPS] START END "
             "PROG [ARG...]");
    }
    uint64_t start = parse_hex(argv[optind]);
    uint64_t end = parse_hex(argv[optind + 1]);
    char **prog = argv + optind + 2;

    FILE *out = stdout;
    if (out_path && !(out = std::fopen(out_path, "w"))) {
        die(out_path);
    }
    static char outbuf[1 << 20];
    std::setvbuf(out, outbuf, _IOFBF, sizeof(outbuf));
    std::fflush(stdout);

    pid_t pid = fork();
    if (pid < 0) {
        die("fork");
    }
    if (pid == 0) {
        if (ptrace(PTRACE_TRACEME, 0, nullptr, nullptr) != 0) {
            std::fprintf(stderr,
                         "native-trace: PTRACE_TRACEME is not permitted: "
                         "%s\n",
                         std::strerror(errno));
            _exit(126);
        }
        personality(ADDR_NO_RANDOMIZE);
        execv(prog[0], prog);
        std::fprintf(stderr, "native-trace: exec %s: %s\n", prog[0],
                     std::strerror(errno));
        _exit(127);
    }

    // The SIGTRAP of the exec
    int st = wait_stop(pid);
    if (!WIFSTOPPED(st)) {
        fail(WIFEXITED(st) && WEXITSTATUS(st) == 126
                 ? "ptrace is not permitted here"
                 : "the program did not start under ptrace");
    }
    if (ptrace(PTRACE_SETOPTIONS, pid, nullptr, PTRACE_O_EXITKILL) != 0) {
        die("PTRACE_SETOPTIONS");
    }

    // Breakpoint at START; signals before it go to the program as usual
    uint64_t orig = peek(pid, start);
    if (ptrace(PTRACE_POKETEXT, pid, start, (orig & ~0xffull) | 0xcc) != 0) {
        die("PTRACE_POKETEXT");
    }
    int sig = 0;
    for (;;) {
        sig = resume(PTRACE_CONT, pid, sig, "START");
        if (sig == SIGTRAP && get_rip(pid) == start + 1) {
            break;
        }
    }
    if (ptrace(PTRACE_POKETEXT, pid, start, orig) != 0) {
        die("PTRACE_POKETEXT");
    }
    set_rip(pid, start);

    // Single steps from START to END
    uint64_t pc = start;
    unsigned long long steps = 0;
    int inject = 0;
    while (pc != end) {
        if (++steps > max_steps) {
            fail("END not reached within the step limit");
        }
        sig = resume(PTRACE_SINGLESTEP, pid, inject, "END");
        uint64_t npc = get_rip(pid);
        if (sig == SIGTRAP && inject) {
            // The kernel set up the frame of the injected signal and
            // stopped at the handler's first instruction: nothing retired
            std::fprintf(out, "# handler %llx\n",
                         static_cast<unsigned long long>(npc));
            inject = 0;
        } else if (sig == SIGTRAP) {
            if (npc != pc || !is_rep_string(pid, pc)) {
                std::fprintf(out, "%llx\n",
                             static_cast<unsigned long long>(pc));
            }
        } else {
            if (npc != pc) {
                fail("a signal moved the instruction pointer");
            }
            std::fprintf(out, "# fault %llx %d\n",
                         static_cast<unsigned long long>(pc), sig);
            inject = sig;
        }
        pc = npc;
    }
    std::fprintf(out, "# end %llu\n", steps);
    if (std::fflush(out) != 0) {
        die("write");
    }

    if (ptrace(PTRACE_DETACH, pid, nullptr, nullptr) != 0) {
        die("PTRACE_DETACH");
    }
    st = wait_stop(pid);
    if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) {
        fail("the program did not exit with status 0 after END");
    }
    return 0;
}
