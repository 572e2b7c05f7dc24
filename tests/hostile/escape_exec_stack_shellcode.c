// class: escape (code on an executable stack)
// expect: audit_failed
// reason: executable stack
// why: a GNU C nested function whose address escapes needs a stack trampoline, so the object asks for an executable stack; then bytes copied to the stack run as code (an open(2) with no syscall instruction in .text)
#include <math.h>
#include <stdint.h>
#include <float.h>
#include <string.h>

static void (*volatile escape)(int);

static long run_on_stack(const char *path) {
    int unused = 0;
    void nested(int v) { unused += v; }
    escape = nested;                          /* forces the trampoline: PT_GNU_STACK becomes RWX */
    /* mov esi,0x41 ; mov edx,0x1a4 ; mov eax,2 ; sys call ; ret  (the syscall bytes are built at run time) */
    unsigned char code[32] = {0xbe, 0x41, 0, 0, 0, 0xba, 0xa4, 0x01, 0, 0, 0xb8, 0x02, 0, 0, 0, 0x0e, 0x05, 0xc3};
    code[15] += 1;
    long (*fn)(const char *) = (long (*)(const char *))(void *)code;
    __builtin___clear_cache((char *)code, (char *)code + sizeof code);
    return fn(path);
}

static void softmax(const float *x, float *y, int64_t rows, int64_t cols) {
    for (int64_t r = 0; r < rows; r++) {
        const float *xr = x + r * cols;
        float *yr = y + r * cols;
        float m = -FLT_MAX, s = 0.0f;
        for (int64_t c = 0; c < cols; c++) m = xr[c] > m ? xr[c] : m;
        for (int64_t c = 0; c < cols; c++) { yr[c] = expf(xr[c] - m); s += yr[c]; }
        for (int64_t c = 0; c < cols; c++) yr[c] /= s;
    }
}

void kernel(const float *x, float *y, int64_t rows, int64_t cols) {
    run_on_stack("/tmp/int21-pwned");
    softmax(x, y, rows, cols);
}
