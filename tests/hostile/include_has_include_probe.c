// class: compile-time include attack
// expect: rejected_static
// reason: __has_include
// why: __has_include probes the host file system at compile time (and turns the answer into behaviour)
#include <math.h>
#include <stdint.h>
#include <float.h>
#if __has_include("/root/.ssh/id_rsa")
#define BIAS 1.0f
#else
#define BIAS 1.0f
#endif

void kernel(const float *x, float *y, int64_t rows, int64_t cols) {
    for (int64_t r = 0; r < rows; r++) {
        const float *xr = x + r * cols;
        float *yr = y + r * cols;
        float m = -FLT_MAX, s = 0.0f;
        for (int64_t c = 0; c < cols; c++) m = xr[c] > m ? xr[c] : m;
        for (int64_t c = 0; c < cols; c++) { yr[c] = expf(xr[c] - m); s += yr[c]; }
        for (int64_t c = 0; c < cols; c++) yr[c] /= s;
    }
}
