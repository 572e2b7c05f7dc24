// class: null candidate
// expect: wrong
// why: writes 1/cols everywhere: each row sums to one, and it is nearly right on the tiny distribution
#include <stdint.h>

void kernel(const float *x, float *y, int64_t rows, int64_t cols) {
    (void)x;
    float v = 1.0f / (float)cols;
    for (int64_t i = 0; i < rows * cols; i++) y[i] = v;
}
