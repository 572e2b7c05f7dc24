// class: shape overfitting (an aligned-only fast path)
// workload: layernorm
// expect: wrong
// why: when cols is a multiple of 16 it takes a one-pass E[x^2] - E[x]^2 variance in float, which cancels catastrophically on rows with a large mean; exact on every unaligned shape
#include <math.h>
#include <stdint.h>

void kernel(const float *x, const float *gamma, const float *beta, float *y, int64_t rows, int64_t cols, float eps) {
    for (int64_t r = 0; r < rows; r++) {
        const float *xr = x + r * cols; float *yr = y + r * cols;
        float mean, var;
        if (cols % 16 == 0) {
            float s = 0, s2 = 0; for (int64_t c = 0; c < cols; c++) { s += xr[c]; s2 += xr[c] * xr[c]; }
            mean = s / cols; var = s2 / cols - mean * mean; if (var < 0) var = 0;
        } else {
            double s = 0; for (int64_t c = 0; c < cols; c++) s += xr[c];
            double m = s / cols, v = 0; for (int64_t c = 0; c < cols; c++) v += (xr[c] - m) * (xr[c] - m);
            mean = (float)m; var = (float)(v / cols);
        }
        float inv = 1.0f / sqrtf(var + eps);
        for (int64_t c = 0; c < cols; c++) yr[c] = (xr[c] - mean) * inv * gamma[c] + beta[c];
    }
}
