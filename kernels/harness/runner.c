/* The candidate runner: the only process that ever executes CPU candidate code.
 *
 * Trusted C, built once per compiler (kernels/harness/runner.py) and linked with the
 * candidate's audited object and a generated call shim into one executable per candidate.
 * There is no Python interpreter, no baseline and no harness secret in its address space:
 * whatever the candidate reaches (libc's symbol tables, this process's memory), it finds
 * nothing trusted to patch and nothing to forge. The parent (the evaluator) owns every
 * judgement: it times each call with its own clock, reads the outputs from shared memory,
 * checks the guard words, counts this process's CPU time and threads from /proc, and stops
 * this process (SIGSTOP) whenever it is not the candidate's turn.
 *
 * Descriptors: 3 status (write), 4 control (read), 5 inputs (a memfd opened read-only: the
 * candidate cannot write its inputs, nor map them writable), 6 outputs (read-write).
 *
 * Before any candidate code can run (the audit refused load-time sections, so none runs
 * inside the loader): map the buffers, leave the network, drop to the session's unprivileged
 * user, set limits, no_new_privs, not dumpable, fault handlers on an alternate stack, then
 * install the seccomp program the parent sent (kernels/harness/seccomp.py). Only then is
 * "ready" written and the first "call" obeyed.
 *
 * Protocol (text lines):
 *   parent → runner  setup <in_bytes> <out_bytes> <uid> <gid> <cpu_s> <nofile> <netns> <bpf_len>\n<bpf>
 *   runner → parent  ready <in_base> <out_base> <mxcsr> <omp_max_threads> <isolation words…>
 *   parent → runner  call <seq> <perturb> <ncalls> <nargs> <token>…   (token: i<hex> o<hex> d<int> f<hexbits>)
 *   runner → parent  done <seq> <mxcsr> <omp_max_threads> <omp_level> <omp_in_parallel>
 *   parent → runner  exit
 *   runner → parent  fault <signal> <address>        (a fault in a call; then it exits)
 * Anything else the parent reads is the candidate's doing, and the verdict is "suspicious". */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <malloc.h>
#include <omp.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <unistd.h>
#if defined(__x86_64__)
#include <xmmintrin.h>
#endif

#define STATUS_FD 3
#define CONTROL_FD 4
#define INPUTS_FD 5
#define OUTPUTS_FD 6
#define MAX_TOKENS 8192
#define LINE_BYTES (MAX_TOKENS * 24 + 256)

void i21_call(const uint64_t *args);   /* the generated shim: calls kernel(...) with the ABI */

static char i21_line[LINE_BYTES];
static size_t i21_have;
static uint64_t i21_args[MAX_TOKENS];
static char *i21_in_base, *i21_out_base;
static size_t i21_in_bytes, i21_out_bytes;
static char i21_altstack[1 << 16];

static void i21_write_all(const char *s, size_t n) {
    while (n) {
        ssize_t w = write(STATUS_FD, s, n);
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0) _exit(90);
        s += w;
        n -= (size_t)w;
    }
}

static void i21_say(const char *s) { i21_write_all(s, strlen(s)); }

/* One line from the control pipe into i21_line (NUL-terminated, newline removed). */
static char *i21_read_line(void) {
    for (;;) {
        char *nl = memchr(i21_line, '\n', i21_have);
        if (nl) {
            size_t len = (size_t)(nl - i21_line);
            static char out[LINE_BYTES];
            memcpy(out, i21_line, len);
            out[len] = 0;
            memmove(i21_line, nl + 1, i21_have - len - 1);
            i21_have -= len + 1;
            return out;
        }
        if (i21_have == sizeof i21_line) _exit(91);        /* a line longer than any plan */
        ssize_t r = read(CONTROL_FD, i21_line + i21_have, sizeof i21_line - i21_have);
        if (r < 0 && errno == EINTR) continue;
        if (r <= 0) _exit(0);                                /* the parent went away */
        i21_have += (size_t)r;
    }
}

static void i21_read_exact(char *dst, size_t n) {
    size_t from_buffer = n < i21_have ? n : i21_have;
    memcpy(dst, i21_line, from_buffer);
    memmove(i21_line, i21_line + from_buffer, i21_have - from_buffer);
    i21_have -= from_buffer;
    for (size_t got = from_buffer; got < n;) {
        ssize_t r = read(CONTROL_FD, dst + got, n - got);
        if (r < 0 && errno == EINTR) continue;
        if (r <= 0) _exit(92);
        got += (size_t)r;
    }
}

static void i21_fault(int sig, siginfo_t *info, void *ctx) {
    (void)ctx;
    char msg[96];
    unsigned long addr = (unsigned long)(uintptr_t)info->si_addr;
    /* async-signal-safe formatting: no stdio */
    const char *hex = "0123456789abcdef";
    char num[20];
    int n = 0;
    do { num[n++] = hex[addr & 15]; addr >>= 4; } while (addr && n < 16);
    int k = 0;
    const char *head = "fault ";
    for (const char *p = head; *p; p++) msg[k++] = *p;
    if (sig >= 10) msg[k++] = (char)('0' + sig / 10);
    msg[k++] = (char)('0' + sig % 10);
    msg[k++] = ' ';
    msg[k++] = '0';
    msg[k++] = 'x';
    while (n) msg[k++] = num[--n];
    msg[k++] = '\n';
    ssize_t ignored = write(STATUS_FD, msg, (size_t)k);
    (void)ignored;
    _exit(128 + sig);
}

static void i21_handlers(void) {
    stack_t ss = {.ss_sp = i21_altstack, .ss_size = sizeof i21_altstack, .ss_flags = 0};
    sigaltstack(&ss, NULL);
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = i21_fault;
    sa.sa_flags = SA_SIGINFO | SA_ONSTACK | SA_RESETHAND;
    sigemptyset(&sa.sa_mask);
    int sigs[] = {SIGSEGV, SIGBUS, SIGFPE, SIGILL};
    for (unsigned i = 0; i < sizeof sigs / sizeof sigs[0]; i++) sigaction(sigs[i], &sa, NULL);
}

static unsigned i21_mxcsr(void) {
#if defined(__x86_64__)
    return _mm_getcsr();
#else
    return 0;
#endif
}

static void i21_set_mxcsr(unsigned v) {
#if defined(__x86_64__)
    _mm_setcsr(v);
#else
    (void)v;
#endif
}

static uint64_t i21_token(const char *t) {
    char *end = NULL;
    switch (t[0]) {
    case 'i': {
        uint64_t off = strtoull(t + 1, &end, 16);
        if (off > i21_in_bytes) _exit(93);
        return (uint64_t)(uintptr_t)(i21_in_base + off);
    }
    case 'o': {
        uint64_t off = strtoull(t + 1, &end, 16);
        if (off > i21_out_bytes) _exit(93);
        return (uint64_t)(uintptr_t)(i21_out_base + off);
    }
    case 'd': return (uint64_t)strtoll(t + 1, &end, 10);
    case 'f': return strtoull(t + 1, &end, 16);
    default: _exit(94);
    }
}

int main(void) {
    pid_t evaluator = getppid();
    char *line = i21_read_line();
    unsigned long long in_bytes, out_bytes, cpu_s, nofile, netns, bpf_len;
    long long uid, gid;
    if (sscanf(line, "setup %llu %llu %lld %lld %llu %llu %llu %llu", &in_bytes, &out_bytes, &uid, &gid,
               &cpu_s, &nofile, &netns, &bpf_len) != 8 || bpf_len == 0 || bpf_len > 65536 || bpf_len % 8)
        _exit(95);
    char *bpf = malloc(bpf_len);
    if (!bpf) _exit(96);
    i21_read_exact(bpf, bpf_len);

    i21_in_bytes = in_bytes;
    i21_out_bytes = out_bytes;
    i21_in_base = mmap(NULL, in_bytes ? in_bytes : 4096, PROT_READ, MAP_SHARED, INPUTS_FD, 0);
    i21_out_base = mmap(NULL, out_bytes ? out_bytes : 4096, PROT_READ | PROT_WRITE, MAP_SHARED, OUTPUTS_FD, 0);
    if (i21_in_base == MAP_FAILED || i21_out_base == MAP_FAILED) _exit(97);
    close(INPUTS_FD);
    close(OUTPUTS_FD);

    char isolation[256] = "";
    if (netns) {
        if (geteuid() == 0) {
            if (unshare(CLONE_NEWNET) == 0) strcat(isolation, " no_network");
        } else if (unshare(CLONE_NEWUSER | CLONE_NEWNET) == 0) {
            strcat(isolation, " no_network");
        }
    }
    if (geteuid() == 0 && uid > 0) {
        if (setgroups(0, NULL) == 0 && setresgid((gid_t)gid, (gid_t)gid, (gid_t)gid) == 0 &&
            setresuid((uid_t)uid, (uid_t)uid, (uid_t)uid) == 0) {
            char word[40];
            snprintf(word, sizeof word, " uid_%lld", uid);
            strcat(isolation, word);
        } else {
            _exit(98);                                      /* never run a candidate as root */
        }
    }
    /* The evaluator's death ends the runner, even while it is stopped between calls (set after
       the change of user, which clears it; the evaluator gone already: end now). */
    prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0);
    if (getppid() != evaluator) _exit(97);
    struct rlimit core = {0, 0}, fsize = {0, 0};
    struct rlimit cpu = {(rlim_t)cpu_s, (rlim_t)cpu_s + 5}, files = {(rlim_t)nofile, (rlim_t)nofile};
    setrlimit(RLIMIT_CORE, &core);
    setrlimit(RLIMIT_FSIZE, &fsize);
    setrlimit(RLIMIT_CPU, &cpu);
    setrlimit(RLIMIT_NOFILE, &files);
    prctl(PR_SET_DUMPABLE, 0, 0, 0, 0);
    if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) == 0) strcat(isolation, " no_new_privs");
    /* Correctness calls perturb fresh heap memory (M_PERTURB, set per call) so a read of memory
       the kernel never wrote differs between its two runs; large blocks stay on the heap. */
    mallopt(M_MMAP_THRESHOLD, 32 * 1024 * 1024);
    mallopt(M_TRIM_THRESHOLD, 1 << 30);
    i21_handlers();
    struct sock_fprog prog = {.len = (unsigned short)(bpf_len / 8), .filter = (struct sock_filter *)bpf};
    if (prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog, 0, 0) != 0) _exit(99);
    strcat(isolation, " seccomp");

    const unsigned mxcsr = i21_mxcsr();
    char msg[512];
    snprintf(msg, sizeof msg, "ready %lx %lx %x %d%s\n", (unsigned long)(uintptr_t)i21_in_base,
             (unsigned long)(uintptr_t)i21_out_base, mxcsr, omp_get_max_threads(), isolation);
    i21_say(msg);

    for (;;) {
        line = i21_read_line();
        if (strcmp(line, "exit") == 0) _exit(0);
        char *save = NULL;
        char *word = strtok_r(line, " ", &save);
        if (!word || strcmp(word, "call") != 0) _exit(94);
        char *f[4];
        for (int i = 0; i < 4; i++)
            if (!(f[i] = strtok_r(NULL, " ", &save))) _exit(94);
        unsigned long long seq = strtoull(f[0], NULL, 10);
        int perturb = atoi(f[1]);
        long ncalls = atol(f[2]);
        long nargs = atol(f[3]);
        if (ncalls < 1 || nargs < 0 || ncalls * nargs > MAX_TOKENS) _exit(94);
        for (long i = 0; i < ncalls * nargs; i++) {
            char *t = strtok_r(NULL, " ", &save);
            if (!t) _exit(94);
            i21_args[i] = i21_token(t);
        }
        mallopt(M_PERTURB, perturb);
        for (long c = 0; c < ncalls; c++) {
            i21_set_mxcsr(mxcsr);               /* every call starts in the caller's FP environment */
            i21_call(i21_args + c * nargs);
        }
        unsigned after = i21_mxcsr();
        snprintf(msg, sizeof msg, "done %llu %x %d %d %d\n", seq, after, omp_get_max_threads(),
                 omp_get_level(), omp_in_parallel());
        i21_say(msg);
    }
}
