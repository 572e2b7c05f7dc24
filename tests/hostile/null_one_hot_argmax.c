// class: null candidate
// expect: wrong
// why: a hard argmax (one-hot at the row max): exact when one logit dominates, wrong otherwise
#include <stdint.h>

void kernel(const float *x, float *y, int64_t rows, int64_t cols) {
    for (int64_t r = 0; r < rows; r++) {
        int64_t best = 0;
        for (int64_t c = 0; c < cols; c++) {
            if (x[r * cols + c] > x[r * cols + best]) best = c;
        }
        for (int64_t c = 0; c < cols; c++) y[r * cols + c] = c == best ? 1.0f : 0.0f;
    }
}
