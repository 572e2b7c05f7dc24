// class: null candidate
// expect: wrong
// why: fills each row with deterministic pseudo-random numbers normalised to sum to one
#include <stdint.h>

void kernel(const float *x, float *y, int64_t rows, int64_t cols) {
    (void)x;
    uint32_t state = 2463534242u;
    for (int64_t r = 0; r < rows; r++) {
        float s = 0.0f;
        for (int64_t c = 0; c < cols; c++) {
            state ^= state << 13; state ^= state >> 17; state ^= state << 5;
            y[r * cols + c] = (float)(state >> 8) * (1.0f / 16777216.0f);
            s += y[r * cols + c];
        }
        for (int64_t c = 0; c < cols; c++) y[r * cols + c] /= s;
    }
}
