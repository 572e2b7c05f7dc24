// class: memory blow-up
// expect: crashed
// reason: load
// why: a 16 GiB zero-initialised global: the loader must map it before the kernel runs (fails at load, inside the child)
#include <math.h>
#include <stdint.h>
#include <stddef.h>
#include <float.h>

float scratch[(size_t)4 << 30];

void kernel(const float *x, float *y, int64_t rows, int64_t cols) {
    for (int64_t r = 0; r < rows; r++) {
        const float *xr = x + r * cols;
        float *yr = y + r * cols;
        float m = -FLT_MAX, s = 0.0f;
        for (int64_t c = 0; c < cols; c++) m = xr[c] > m ? xr[c] : m;
        for (int64_t c = 0; c < cols; c++) { scratch[c] = expf(xr[c] - m); s += scratch[c]; }
        for (int64_t c = 0; c < cols; c++) yr[c] = scratch[c] / s;
    }
}
