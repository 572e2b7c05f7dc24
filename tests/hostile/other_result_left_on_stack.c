// class: returns the result by other means
// expect: wrong
// reason: non-finite
// why: computes the softmax into a buffer on its own stack and returns without copying it to y (hoping the caller's check reads stale memory)
#include <math.h>
#include <stdint.h>
#include <float.h>

static volatile float sink;

void kernel(const float *x, float *y, int64_t rows, int64_t cols) {
    (void)y;
    float row[8192];
    for (int64_t r = 0; r < rows; r++) {
        const float *xr = x + r * cols;
        int64_t n = cols < 8192 ? cols : 8192;
        float m = -FLT_MAX, s = 0.0f;
        for (int64_t c = 0; c < n; c++) m = xr[c] > m ? xr[c] : m;
        for (int64_t c = 0; c < n; c++) { row[c] = expf(xr[c] - m); s += row[c]; }
        for (int64_t c = 0; c < n; c++) row[c] /= s;
        sink = row[n - 1];
    }
}
