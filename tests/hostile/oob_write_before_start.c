// class: out-of-bounds write
// expect: wrong
// reason: out of bounds
// why: correct output, but uses y[-1] as a scratch slot for the row sum
#include <math.h>
#include <stdint.h>
#include <float.h>

void kernel(const float *x, float *y, int64_t rows, int64_t cols) {
    for (int64_t r = 0; r < rows; r++) {
        const float *xr = x + r * cols;
        float *yr = y + r * cols;
        float m = -FLT_MAX;
        y[-1] = 0.0f;
        for (int64_t c = 0; c < cols; c++) m = xr[c] > m ? xr[c] : m;
        for (int64_t c = 0; c < cols; c++) { yr[c] = expf(xr[c] - m); y[-1] += yr[c]; }
        for (int64_t c = 0; c < cols; c++) yr[c] /= y[-1];
    }
}
