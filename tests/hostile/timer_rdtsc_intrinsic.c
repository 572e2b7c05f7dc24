// class: timer read
// expect: rejected_static
// reason: timer
// why: reads the time-stamp counter through the x86 intrinsic
#include <math.h>
#include <stdint.h>
#include <float.h>
#include <x86intrin.h>
static volatile unsigned long long last;

static void softmax(const float *x, float *y, int64_t rows, int64_t cols) {
    for (int64_t r = 0; r < rows; r++) {
        const float *xr = x + r * cols;
        float *yr = y + r * cols;
        float m = -FLT_MAX, s = 0.0f;
        for (int64_t c = 0; c < cols; c++) m = xr[c] > m ? xr[c] : m;
        for (int64_t c = 0; c < cols; c++) { yr[c] = expf(xr[c] - m); s += yr[c]; }
        for (int64_t c = 0; c < cols; c++) yr[c] /= s;
    }
}

void kernel(const float *x, float *y, int64_t rows, int64_t cols) {
    last = __rdtsc();
    softmax(x, y, rows, cols);
}
