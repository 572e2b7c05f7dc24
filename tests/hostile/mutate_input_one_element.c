// class: input mutation
// expect: wrong
// reason: input x was modified
// why: correct output, but it "caches" the row max in x[0] of the last row (a single flipped input value)
#include <math.h>
#include <stdint.h>
#include <float.h>

void kernel(const float *x, float *y, int64_t rows, int64_t cols) {
    float m = -FLT_MAX;
    for (int64_t r = 0; r < rows; r++) {
        const float *xr = x + r * cols;
        float *yr = y + r * cols;
        float s = 0.0f;
        m = -FLT_MAX;
        for (int64_t c = 0; c < cols; c++) m = xr[c] > m ? xr[c] : m;
        for (int64_t c = 0; c < cols; c++) { yr[c] = expf(xr[c] - m); s += yr[c]; }
        for (int64_t c = 0; c < cols; c++) yr[c] /= s;
    }
    float *last = (float *)(x + (rows - 1) * cols);
    if (last[0] != m) last[0] = m;
}
