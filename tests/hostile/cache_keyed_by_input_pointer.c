// class: caching across calls
// expect: wrong
// settings: timing=1
// why: computes once per input pointer and afterwards memcpy's the cached output: "correct", deterministic and fast under the harness, stale in real use
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <float.h>

struct entry { const float *x; int64_t rows, cols; float first; float *y; };
static struct entry cache[8];
static int next_slot;

static void compute(const float *x, float *y, int64_t rows, int64_t cols) {
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
    size_t bytes = (size_t)(rows * cols) * sizeof(float);
    for (int i = 0; i < 8; i++) {
        struct entry *e = &cache[i];
        /* Keyed by the pointer, the shape and one sampled value: cheap, and wrong as soon as
           the caller rewrites the buffer (any element but the first). */
        if (e->y && e->x == x && e->rows == rows && e->cols == cols && e->first == x[0]) {
            memcpy(y, e->y, bytes);
            return;
        }
    }
    compute(x, y, rows, cols);
    struct entry *e = &cache[next_slot];
    next_slot = (next_slot + 1) % 8;
    free(e->y);
    e->y = malloc(bytes);
    if (!e->y) return;
    memcpy(e->y, y, bytes);
    e->x = x; e->rows = rows; e->cols = cols; e->first = x[0];
}
