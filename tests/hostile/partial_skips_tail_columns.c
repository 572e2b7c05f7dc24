// class: partial write
// expect: wrong
// why: a vector loop without its scalar tail: columns past the last multiple of 8 are neither read nor written
#include <math.h>
#include <stdint.h>
#include <float.h>

void kernel(const float *x, float *y, int64_t rows, int64_t cols) {
    int64_t body = cols & ~(int64_t)7;
    for (int64_t r = 0; r < rows; r++) {
        const float *xr = x + r * cols;
        float *yr = y + r * cols;
        float m = -FLT_MAX, s = 0.0f;
        for (int64_t c = 0; c < body; c++) m = xr[c] > m ? xr[c] : m;
        for (int64_t c = 0; c < body; c++) { yr[c] = expf(xr[c] - m); s += yr[c]; }
        for (int64_t c = 0; c < body; c++) yr[c] /= s;
    }
}
