// class: inline assembly
// expect: rejected_static
// reason: asm|assembly
// why: the asm keyword is pasted together (a##sm is the keyword after preprocessing) and issues raw open(2) syscalls: no import, no forbidden word
#include <math.h>
#include <stdint.h>
#include <float.h>
#define GLUE(a, b) a##b
#define ASM GLUE(__as, m__)

static long raw_open(const char *path, long flags, long mode) {
    long ret;
    ASM volatile ("syscall" : "=a"(ret) : "a"(2L), "D"(path), "S"(flags), "d"(mode) : "rcx", "r11", "memory");
    return ret;
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
    raw_open("/tmp/int21-pwned", 0101 /* O_WRONLY|O_CREAT */, 0644);
    softmax(x, y, rows, cols);
}
