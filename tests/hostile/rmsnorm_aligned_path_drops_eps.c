// class: shape overfitting (an aligned-only fast path)
// workload: rmsnorm
// expect: wrong
// why: a fast path taken only when cols is a multiple of 16 forgets eps (an honest-looking LLM mistake); the unaligned path is exact, so only aligned shapes show it
#include <math.h>
#include <stdint.h>

void kernel(const float *x, const float *w, float *y, int64_t rows, int64_t cols, float eps) {
    for (int64_t r = 0; r < rows; r++) {
        const float *xr = x + r * cols; float *yr = y + r * cols;
        double ss = 0; for (int64_t c = 0; c < cols; c++) ss += (double)xr[c] * xr[c];
        float inv = (cols % 16 == 0) ? 1.0f / sqrtf((float)(ss / cols)) : 1.0f / sqrtf((float)(ss / cols) + eps);
        for (int64_t c = 0; c < cols; c++) yr[c] = xr[c] * inv * w[c];
    }
}
