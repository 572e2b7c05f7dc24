// class: precision loss
// expect: wrong
// why: a 3-term Taylor exp clamped at zero: good near 0 (tiny logits), badly wrong a few units away
#include <math.h>
#include <stdint.h>
#include <float.h>

void kernel(const float *x, float *y, int64_t rows, int64_t cols) {
    for (int64_t r = 0; r < rows; r++) {
        const float *xr = x + r * cols;
        float *yr = y + r * cols;
        float m = -FLT_MAX, s = 0.0f;
        for (int64_t c = 0; c < cols; c++) m = xr[c] > m ? xr[c] : m;
        for (int64_t c = 0; c < cols; c++) {
            float t = xr[c] - m;
            float e = 1.0f + t + 0.5f * t * t;
            yr[c] = (t < -2.0f) ? 0.0f : e;
            s += yr[c];
        }
        for (int64_t c = 0; c < cols; c++) yr[c] /= s;
    }
}
