// class: crash
// expect: crashed
// why: unbounded recursion with a big frame blows the stack (SIGSEGV on the guard page)
#include <stdint.h>

static volatile float sink;

static float deep(int64_t n) {
    volatile float frame[4096];
    frame[n & 4095] = (float)n;
    return frame[(n * 7) & 4095] + deep(n + 1);
}

void kernel(const float *x, float *y, int64_t rows, int64_t cols) {
    (void)x; (void)y;
    sink = deep(rows + cols);
}
