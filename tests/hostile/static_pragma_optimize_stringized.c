// class: static gap (changing the compiler's flags)
// expect: rejected_static
// reason: stringizing
// why: _Pragma(STR(GCC optimize("Ofast"))): the pragma text is built by stringizing, so no check on the source reads it
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <float.h>
#define STR(x) #x
#define PRAGMA(x) _Pragma(STR(x))
PRAGMA(GCC optimize("Ofast"))

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

void kernel(const float *x, float *y, int64_t rows, int64_t cols) { softmax(x, y, rows, cols); }
