// class: compile-time include attack (probing the compile host)
// expect: rejected_static
// reason: dependency
// why: a pasted _Pragma("GCC dependency ...") makes the preprocessor stat a host file; whether it exists would show as compiles-or-not
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <float.h>
#define GLUE(a, b) a##b
GLUE(_Pra, gma)("GCC dependency \"/etc/shadow\"")

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
