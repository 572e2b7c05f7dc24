// class: caching across calls
// expect: wrong
// settings: timing=1
// reason: remembered|timed call
// why: hashes the first element of three rows in every four and returns the saved output when they match: a change of a whole eighth of the rows always reaches a hashed row, so only a change as small as two rows swapped finds the stale answer
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

#define SLOTS 16
static float *saved[SLOTS];
static uint64_t keys[SLOTS];
static int64_t sizes[SLOTS];
static unsigned next;
void kernel(const float *x, float *y, int64_t rows, int64_t cols) {
    int64_t n = rows * cols;
    uint64_t h = 1469598103934665603ull ^ (uint64_t)n;
    for (int64_t r = 0; r < rows; r++) {
        if (r % 4 == 3) continue;
        uint32_t b; memcpy(&b, &x[r * cols], 4); h = (h ^ b) * 1099511628211ull;
    }
    for (int s = 0; s < SLOTS; s++)
        if (saved[s] && sizes[s] == n && keys[s] == h) { memcpy(y, saved[s], (size_t)n * sizeof(float)); return; }
    softmax(x, y, rows, cols);
    unsigned s = next++ % SLOTS;
    free(saved[s]); saved[s] = malloc((size_t)n * sizeof(float)); sizes[s] = n; keys[s] = h;
    memcpy(saved[s], y, (size_t)n * sizeof(float));
}
