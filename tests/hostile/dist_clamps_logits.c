// class: distribution overfitting
// expect: wrong
// why: clamps logits to [-10, 10] "because inputs are roughly standard normal": breaks on large and mixed logits
#include <math.h>
#include <stdint.h>
#include <float.h>

void kernel(const float *x, float *y, int64_t rows, int64_t cols) {
    for (int64_t r = 0; r < rows; r++) {
        float m = -FLT_MAX, s = 0.0f;
        for (int64_t c = 0; c < cols; c++) {
            float v = fminf(fmaxf(x[r * cols + c], -10.0f), 10.0f);
            m = v > m ? v : m;
        }
        for (int64_t c = 0; c < cols; c++) {
            float v = fminf(fmaxf(x[r * cols + c], -10.0f), 10.0f);
            y[r * cols + c] = expf(v - m); s += y[r * cols + c];
        }
        for (int64_t c = 0; c < cols; c++) y[r * cols + c] /= s;
    }
}
