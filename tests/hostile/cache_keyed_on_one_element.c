// class: caching across calls
// expect: wrong
// settings: timing=1
// reason: remembered|timed call
// why: keys a cache of outputs on a single element of the input (where the old harness spliced its second data set), computing only when that element changes
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
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

static float *saved;
static float key = -1.0f;
static int64_t saved_n;
void kernel(const float *x, float *y, int64_t rows, int64_t cols) {
    int64_t n = rows * cols;
    float k = x[(rows / 2) * cols];
    if (saved && saved_n == n && k == key) { memcpy(y, saved, (size_t)n * sizeof(float)); return; }
    softmax(x, y, rows, cols);
    if (!saved || saved_n != n) { free(saved); saved = malloc((size_t)n * sizeof(float)); saved_n = n; }
    memcpy(saved, y, (size_t)n * sizeof(float));
    key = k;
}
