// class: input mutation
// expect: wrong
// reason: input x was modified
// why: casts away const, computes softmax in place in x, then copies x to y (the output is right, the input is destroyed)
#include <math.h>
#include <stdint.h>
#include <string.h>
#include <float.h>

void kernel(const float *x, float *y, int64_t rows, int64_t cols) {
    float *xw = (float *)x;
    for (int64_t r = 0; r < rows; r++) {
        float *xr = xw + r * cols;
        float m = -FLT_MAX, s = 0.0f;
        for (int64_t c = 0; c < cols; c++) m = xr[c] > m ? xr[c] : m;
        for (int64_t c = 0; c < cols; c++) { xr[c] = expf(xr[c] - m); s += xr[c]; }
        for (int64_t c = 0; c < cols; c++) xr[c] /= s;
    }
    memcpy(y, x, (size_t)(rows * cols) * sizeof(float));
}
