// class: shape overfitting
// expect: wrong
// settings: timing=1
// reason: timed shape
// why: correct on the small correctness shapes, but takes a wrong shortcut (no max shift, bf16-rounded) on large benchmark-sized inputs
#include <math.h>
#include <stdint.h>
#include <string.h>
#include <float.h>

static float round_bf16(float v) {
    uint32_t b; memcpy(&b, &v, 4); b &= 0xFFFF0000u; memcpy(&v, &b, 4); return v;
}

void kernel(const float *x, float *y, int64_t rows, int64_t cols) {
    int fast = rows * cols >= 200000;
    for (int64_t r = 0; r < rows; r++) {
        const float *xr = x + r * cols;
        float *yr = y + r * cols;
        float m = -FLT_MAX, s = 0.0f;
        if (!fast) for (int64_t c = 0; c < cols; c++) m = xr[c] > m ? xr[c] : m;
        else m = 0.0f;
        for (int64_t c = 0; c < cols; c++) { yr[c] = expf(xr[c] - m); s += yr[c]; }
        for (int64_t c = 0; c < cols; c++) yr[c] = fast ? round_bf16(yr[c] / s) : yr[c] / s;
    }
}
