// class: work at load time
// expect: rejected_static
// why: __attribute__((constructor)) runs code when the shared object is loaded, before any check
#include <math.h>
#include <stdint.h>
#include <float.h>

static float table[256];

__attribute__((constructor)) static void warm_up(void) {
    for (int i = 0; i < 256; i++) table[i] = expf(-(float)i / 16.0f);
}

void kernel(const float *x, float *y, int64_t rows, int64_t cols) {
    for (int64_t r = 0; r < rows; r++) {
        const float *xr = x + r * cols;
        float *yr = y + r * cols;
        float m = -FLT_MAX, s = 0.0f;
        for (int64_t c = 0; c < cols; c++) m = xr[c] > m ? xr[c] : m;
        for (int64_t c = 0; c < cols; c++) { yr[c] = expf(xr[c] - m) * table[0]; s += yr[c]; }
        for (int64_t c = 0; c < cols; c++) yr[c] /= s;
    }
}
