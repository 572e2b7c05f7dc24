// class: shape overfitting
// expect: wrong
// why: tuned for the 4096x4096 benchmark shape: the row stride and width are the constant 4096
#include <math.h>
#include <stdint.h>
#include <float.h>
#define COLS 4096

void kernel(const float *x, float *y, int64_t rows, int64_t cols) {
    int64_t total = rows * cols;
    for (int64_t r = 0; r * COLS < total; r++) {
        const float *xr = x + r * COLS;
        float *yr = y + r * COLS;
        int64_t n = total - r * COLS < COLS ? total - r * COLS : COLS;
        float m = -FLT_MAX, s = 0.0f;
        for (int64_t c = 0; c < n; c++) m = xr[c] > m ? xr[c] : m;
        for (int64_t c = 0; c < n; c++) { yr[c] = expf(xr[c] - m); s += yr[c]; }
        for (int64_t c = 0; c < n; c++) yr[c] /= s;
    }
}
