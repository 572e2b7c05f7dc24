// class: precision loss
// expect: wrong
// why: an fp8-like output (3 mantissa bits, round to nearest): 6% relative error, yet every row still sums to about one
#include <math.h>
#include <stdint.h>
#include <string.h>
#include <float.h>

static float to_e4m3ish(float v) {
    uint32_t b; memcpy(&b, &v, 4);
    b = (b + (1u << 19)) & 0xFFF00000u;
    memcpy(&v, &b, 4);
    return v;
}

void kernel(const float *x, float *y, int64_t rows, int64_t cols) {
    for (int64_t r = 0; r < rows; r++) {
        const float *xr = x + r * cols;
        float *yr = y + r * cols;
        float m = -FLT_MAX, s = 0.0f;
        for (int64_t c = 0; c < cols; c++) m = xr[c] > m ? xr[c] : m;
        for (int64_t c = 0; c < cols; c++) { yr[c] = expf(xr[c] - m); s += yr[c]; }
        for (int64_t c = 0; c < cols; c++) yr[c] = to_e4m3ish(yr[c] / s);
    }
}
