// class: behaves differently after N calls
// expect: wrong
// settings: timing=1
// reason: timed call
// why: counts calls per (buffer, input): correctness calls each case twice, timing calls one case many times; from the 4th call it writes only half the rows
#include <math.h>
#include <stdint.h>
#include <string.h>
#include <float.h>

struct key { const float *x; float *y; int64_t rows, cols; uint32_t first, last; };
static struct key seen[256];
static long count[256];

void kernel(const float *x, float *y, int64_t rows, int64_t cols) {
    struct key k = { x, y, rows, cols, 0, 0 };
    memcpy(&k.first, x, 4);
    memcpy(&k.last, x + rows * cols - 1, 4);
    int slot = -1;
    for (int i = 0; i < 256; i++) if (!memcmp(&seen[i], &k, sizeof k)) { slot = i; break; }
    if (slot < 0) for (int i = 0; i < 256; i++) if (!seen[i].y) { seen[i] = k; slot = i; break; }
    long n = slot >= 0 ? ++count[slot] : 1;
    int64_t upto = n > 3 ? (rows + 1) / 2 : rows;
    for (int64_t r = 0; r < upto; r++) {
        const float *xr = x + r * cols;
        float *yr = y + r * cols;
        float m = -FLT_MAX, s = 0.0f;
        for (int64_t c = 0; c < cols; c++) m = xr[c] > m ? xr[c] : m;
        for (int64_t c = 0; c < cols; c++) { yr[c] = expf(xr[c] - m); s += yr[c]; }
        for (int64_t c = 0; c < cols; c++) yr[c] /= s;
    }
}
