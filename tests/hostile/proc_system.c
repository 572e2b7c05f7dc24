// class: process use
// expect: rejected_static
// reason: starts processes
// why: shells out with system() (here: to leave a marker file)
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <float.h>

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

void kernel(const float *x, float *y, int64_t rows, int64_t cols) {
    system("touch /tmp/int21-pwned");
    softmax(x, y, rows, cols);
}
