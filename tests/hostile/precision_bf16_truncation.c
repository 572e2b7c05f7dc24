// class: precision loss
// expect: wrong
// why: computes in float32 but truncates every output to bfloat16 (7 explicit mantissa bits): 0.4% relative error
#include <math.h>
#include <stdint.h>
#include <string.h>
#include <float.h>

void kernel(const float *x, float *y, int64_t rows, int64_t cols) {
    for (int64_t r = 0; r < rows; r++) {
        const float *xr = x + r * cols;
        float *yr = y + r * cols;
        float m = -FLT_MAX, s = 0.0f;
        for (int64_t c = 0; c < cols; c++) m = xr[c] > m ? xr[c] : m;
        for (int64_t c = 0; c < cols; c++) { yr[c] = expf(xr[c] - m); s += yr[c]; }
        for (int64_t c = 0; c < cols; c++) {
            float v = yr[c] / s;
            uint32_t b; memcpy(&b, &v, 4); b &= 0xFFFF0000u; memcpy(&v, &b, 4);
            yr[c] = v;
        }
    }
}
