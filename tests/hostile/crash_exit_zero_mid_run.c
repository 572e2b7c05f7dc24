// class: crash
// expect: crashed
// reason: exited with code 0
// why: exit(0) after a few correct calls: a clean exit code must not pass for success
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <float.h>

static int calls;

void kernel(const float *x, float *y, int64_t rows, int64_t cols) {
    for (int64_t r = 0; r < rows; r++) {
        const float *xr = x + r * cols;
        float *yr = y + r * cols;
        float m = -FLT_MAX, s = 0.0f;
        for (int64_t c = 0; c < cols; c++) m = xr[c] > m ? xr[c] : m;
        for (int64_t c = 0; c < cols; c++) { yr[c] = expf(xr[c] - m); s += yr[c]; }
        for (int64_t c = 0; c < cols; c++) yr[c] /= s;
    }
    if (++calls == 7) exit(0);
}
