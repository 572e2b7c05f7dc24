// class: hidden threads
// expect: suspicious
// settings: timing=1 timing_shape=512x2048
// params: THREADS=1
// reason: more threads than it declares
// why: its THREADS=1 param says one thread, but its loop runs on two (num_threads(2)) while the harness prices it as single-threaded
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <float.h>

void kernel(const float *x, float *y, int64_t rows, int64_t cols) {
    #pragma omp parallel for num_threads(2) schedule(static)
    for (int64_t r = 0; r < rows; r++) {
        const float *xr = x + r * cols; float *yr = y + r * cols;
        float m = -FLT_MAX, s = 0.0f;
        for (int64_t c = 0; c < cols; c++) m = xr[c] > m ? xr[c] : m;
        for (int64_t c = 0; c < cols; c++) { yr[c] = expf(xr[c] - m); s += yr[c]; }
        for (int64_t c = 0; c < cols; c++) yr[c] /= s;
        volatile double burn = 0; for (int i = 0; i < 20000; i++) burn += i;
    }
}
