// class: shape overfitting
// expect: wrong
// why: processes columns 16 at a time and rounds the width up, so it reads past each row into the next (and past x)
#include <math.h>
#include <stdint.h>
#include <float.h>

void kernel(const float *x, float *y, int64_t rows, int64_t cols) {
    int64_t padded = (cols + 15) / 16 * 16;
    for (int64_t r = 0; r < rows; r++) {
        const float *xr = x + r * cols;
        float *yr = y + r * cols;
        float m = -FLT_MAX, s = 0.0f;
        for (int64_t c = 0; c < padded; c += 16)
            for (int k = 0; k < 16; k++) m = xr[c + k] > m ? xr[c + k] : m;
        for (int64_t c = 0; c < padded; c += 16)
            for (int k = 0; k < 16; k++) s += expf(xr[c + k] - m);
        for (int64_t c = 0; c < cols; c++) yr[c] = expf(xr[c] - m) / s;
    }
}
