// class: test detection (behaves differently outside the harness)
// expect: wrong
// why: computes properly only when the output buffer still holds the harness's NaN poison word; otherwise (a real caller's buffer) skips every other row
#include <math.h>
#include <stdint.h>
#include <string.h>
#include <float.h>

static void softmax(const float *x, float *y, int64_t rows, int64_t cols) {
    for (int64_t r = 0; r < rows; r++) {
        const float *xr = x + r * cols;
        float *yr = y + r * cols;
        float m = -FLT_MAX, s = 0.0f;
        for (int64_t c = 0; c < cols; c++) m = xr[c] > m ? xr[c] : m;
        for (int64_t c = 0; c < cols; c++) { yr[c] = expf(xr[c] - m); s += yr[c]; }
        for (int64_t c = 0; c < cols; c++) yr[c] /= s;
    }
}

void kernel(const float *x, float *y, int64_t rows, int64_t cols) {
    uint32_t w; memcpy(&w, y, 4);
    if (w == 0x7FC0BEEFu) { softmax(x, y, rows, cols); return; }
    for (int64_t r = 0; r < rows; r += 2) softmax(x + r * cols, y + r * cols, 1, cols);
}
