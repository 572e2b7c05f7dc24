// class: distribution overfitting
// expect: wrong
// why: exp(x) / sum(exp(x)) without the max shift: fine on N(0,1) logits, overflows to inf/inf = NaN on large ones
#include <math.h>
#include <stdint.h>

void kernel(const float *x, float *y, int64_t rows, int64_t cols) {
    for (int64_t r = 0; r < rows; r++) {
        float s = 0.0f;
        for (int64_t c = 0; c < cols; c++) { y[r * cols + c] = expf(x[r * cols + c]); s += y[r * cols + c]; }
        for (int64_t c = 0; c < cols; c++) y[r * cols + c] /= s;
    }
}
