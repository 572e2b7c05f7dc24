// class: work at load time
// expect: audit_failed
// reason: init_array
// why: places a function pointer in .init_array by hand (section attribute spelled by pasting) instead of using constructor
#include <math.h>
#include <stdint.h>
#include <float.h>

#define GLUE(a, b) a##b
#define PLACE(s) __attribute__((GLUE(sect, ion)(s), used))

static float bias;
static void at_load(void) { bias = 1.0f; }
PLACE(".init_array") static void (*const hook)(void) = at_load;

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
