// class: work at load time
// expect: audit_failed
// reason: unloaded|fini_array
// why: a destructor (spelled by pasting) runs when the object is unloaded, after the checks
#include <math.h>
#include <stdint.h>
#include <float.h>

#define GLUE(a, b) a##b
static volatile float sink;
__attribute__((GLUE(destr, uctor))) static void at_unload(void) { sink = 1.0f; }

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
