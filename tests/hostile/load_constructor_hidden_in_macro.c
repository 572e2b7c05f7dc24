// class: work at load time
// expect: audit_failed
// reason: runs code when loaded
// why: the constructor attribute is spelled by token pasting, so the source never contains the word; the .init_array check must see it
#include <math.h>
#include <stdint.h>
#include <float.h>

#define GLUE(a, b) a##b
#define AT_LOAD __attribute__((GLUE(constr, uctor)))

static float bias;

AT_LOAD static void at_load(void) { bias = 1.0f; }

void kernel(const float *x, float *y, int64_t rows, int64_t cols) {
    for (int64_t r = 0; r < rows; r++) {
        const float *xr = x + r * cols;
        float *yr = y + r * cols;
        float m = -FLT_MAX, s = 0.0f;
        for (int64_t c = 0; c < cols; c++) m = xr[c] > m ? xr[c] : m;
        for (int64_t c = 0; c < cols; c++) { yr[c] = expf(xr[c] - m) * bias; s += yr[c]; }
        for (int64_t c = 0; c < cols; c++) yr[c] /= s;
    }
}
