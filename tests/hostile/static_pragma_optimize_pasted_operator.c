// class: static gap (changing the compiler's flags)
// expect: rejected_static
// reason: GCC optimize
// why: the _Pragma operator itself pasted together (_Pra ## gma) with an Ofast literal: the preprocessed text shows the #pragma it became
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <float.h>
#define GLUE(a, b) a##b
GLUE(_Pra, gma)("GCC optimize(\"Ofast\")")

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
