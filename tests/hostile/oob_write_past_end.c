// class: out-of-bounds write
// expect: wrong
// reason: out of bounds
// why: correct output, plus a store to y[rows*cols] (one past the end, the classic <= loop)
#include <math.h>
#include <stdint.h>
#include <float.h>

void kernel(const float *x, float *y, int64_t rows, int64_t cols) {
    for (int64_t r = 0; r < rows; r++) {
        const float *xr = x + r * cols;
        float *yr = y + r * cols;
        float m = -FLT_MAX, s = 0.0f;
        for (int64_t c = 0; c < cols; c++) m = xr[c] > m ? xr[c] : m;
        for (int64_t c = 0; c < cols; c++) { yr[c] = expf(xr[c] - m); s += yr[c]; }
        for (int64_t c = 0; c <= cols; c++) yr[c] = c < cols ? yr[c] / s : 0.0f;
    }
}
