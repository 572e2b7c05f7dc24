// class: caching across calls
// expect: wrong
// settings: timing=1
// reason: timed call|timed shape
// why: reads no input after its first two timed calls: answers even and odd calls from two saved outputs (the old harness alternated two fixed data sets)
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

static float *saved[2];
static size_t sizes[2];
static unsigned long calls;
void kernel(const float *x, float *y, int64_t rows, int64_t cols) {
    size_t n = (size_t)(rows * cols);
    unsigned long i = calls++;
    if (rows >= 128 && i >= 40 && saved[i & 1] && sizes[i & 1] == n) { memcpy(y, saved[i & 1], n * sizeof(float)); return; }
    softmax(x, y, rows, cols);
    if (rows >= 128) {
        if (sizes[i & 1] != n) { free(saved[i & 1]); saved[i & 1] = malloc(n * sizeof(float)); sizes[i & 1] = n; }
        memcpy(saved[i & 1], y, n * sizeof(float));
    }
}
