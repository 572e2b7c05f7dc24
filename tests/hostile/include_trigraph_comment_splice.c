// class: compile-time include attack
// expect: rejected_static
// reason: include
// why: a comment ending in the trigraph ??/ : a checker that folds trigraphs sees a line splice that swallows the next line, but gnu11 ignores trigraphs and compiles the #include
#include <math.h>
#include <stdint.h>
#include <float.h>
static const int pad = 0; // harmless comment ??/
#include "/etc/passwd"

void kernel(const float *x, float *y, int64_t rows, int64_t cols) {
    for (int64_t r = 0; r < rows; r++) {
        const float *xr = x + r * cols;
        float *yr = y + r * cols;
        float m = -FLT_MAX, s = 0.0f;
        for (int64_t c = 0; c < cols; c++) m = xr[c] > m ? xr[c] : m;
        for (int64_t c = 0; c < cols; c++) { yr[c] = expf(xr[c] - m); s += yr[c]; }
        for (int64_t c = 0; c < cols; c++) yr[c] /= s;
    }
}
