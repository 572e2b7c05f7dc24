// class: returns the result by other means
// expect: wrong
// reason: non-finite
// why: writes the answer into an exported global array named like the output instead of into y
#include <math.h>
#include <stdint.h>
#include <float.h>

float y_out[1 << 20];

void kernel(const float *x, float *y, int64_t rows, int64_t cols) {
    (void)y;
    for (int64_t r = 0; r < rows && (r + 1) * cols <= (1 << 20); r++) {
        const float *xr = x + r * cols;
        float *yr = y_out + r * cols;
        float m = -FLT_MAX, s = 0.0f;
        for (int64_t c = 0; c < cols; c++) m = xr[c] > m ? xr[c] : m;
        for (int64_t c = 0; c < cols; c++) { yr[c] = expf(xr[c] - m); s += yr[c]; }
        for (int64_t c = 0; c < cols; c++) yr[c] /= s;
    }
}
