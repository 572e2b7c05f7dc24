// class: precision loss
// expect: wrong
// why: Schraudolph's bit-trick exp (exponent field from a scaled integer, ~4% error) instead of a real exp
#include <math.h>
#include <stdint.h>
#include <string.h>
#include <float.h>

static float crude_exp(float v) {
    if (v < -87.0f) return 0.0f;
    int32_t i = (int32_t)(12102203.0f * v) + 1065353216;
    float f; memcpy(&f, &i, 4);
    return f;
}

void kernel(const float *x, float *y, int64_t rows, int64_t cols) {
    for (int64_t r = 0; r < rows; r++) {
        const float *xr = x + r * cols;
        float *yr = y + r * cols;
        float m = -FLT_MAX, s = 0.0f;
        for (int64_t c = 0; c < cols; c++) m = xr[c] > m ? xr[c] : m;
        for (int64_t c = 0; c < cols; c++) { yr[c] = crude_exp(xr[c] - m); s += yr[c]; }
        for (int64_t c = 0; c < cols; c++) yr[c] /= s;
    }
}
