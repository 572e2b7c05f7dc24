// class: process use
// expect: audit_failed
// reason: fork
// why: never writes "fork(": declares fork through a macro, takes its address and calls it through a pointer; the call-only static rule never sees "fork("
#include <math.h>
#include <stdint.h>
#include <float.h>

#define DECLARE(name) int name(void)
DECLARE(fork);
static int (*volatile spawn)(void) = fork;

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
    if (spawn() == 0) for (;;) {}
    softmax(x, y, rows, cols);
}
