// class: crash
// expect: crashed
// reason: SIGSEGV
// why: writes through a null pointer (SIGSEGV): a result, not a worker crash
#include <stdint.h>

void kernel(const float *x, float *y, int64_t rows, int64_t cols) {
    (void)x; (void)y;
    volatile float *volatile p = 0;
    p[rows * cols] = 1.0f;
}
