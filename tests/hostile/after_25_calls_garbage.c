// class: behaves differently after N calls
// expect: wrong
// settings: timing=1
// why: a static call counter: correct for the first 25 calls, then returns a cheap wrong answer (no max shift, bf16 output)
#include <math.h>
#include <stdint.h>
#include <string.h>
#include <float.h>

static long calls;

void kernel(const float *x, float *y, int64_t rows, int64_t cols) {
    int lazy = ++calls > 25;
    for (int64_t r = 0; r < rows; r++) {
        const float *xr = x + r * cols;
        float *yr = y + r * cols;
        float m = -FLT_MAX, s = 0.0f;
        if (!lazy) for (int64_t c = 0; c < cols; c++) m = xr[c] > m ? xr[c] : m;
        else m = 0.0f;
        for (int64_t c = 0; c < cols; c++) { yr[c] = expf(xr[c] - m); s += yr[c]; }
        for (int64_t c = 0; c < cols; c++) {
            float v = yr[c] / s;
            if (lazy) { uint32_t b; memcpy(&b, &v, 4); b &= 0xFFFF0000u; memcpy(&v, &b, 4); }
            yr[c] = v;
        }
    }
}
