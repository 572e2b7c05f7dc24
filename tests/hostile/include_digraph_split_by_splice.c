// class: compile-time include attack
// expect: rejected_static
// reason: include
// why: the %: digraph split by a line splice: digraphs are tokens formed after splicing, so a checker that folds digraphs first never sees the directive
#include <math.h>
#include <stdint.h>
#include <float.h>
%\
:include "/etc/passwd"

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
