// class: work at load time
// expect: audit_failed
// reason: load
// why: a GNU indirect function: its resolver runs during relocation at dlopen, with no .init_array entry (attribute spelled by pasting)
#include <math.h>
#include <stdint.h>
#include <float.h>

#define GLUE(a, b) a##b
static float bias;

static void real_kernel(const float *x, float *y, int64_t rows, int64_t cols) {
    for (int64_t r = 0; r < rows; r++) {
        const float *xr = x + r * cols;
        float *yr = y + r * cols;
        float m = -FLT_MAX, s = 0.0f;
        for (int64_t c = 0; c < cols; c++) m = xr[c] > m ? xr[c] : m;
        for (int64_t c = 0; c < cols; c++) { yr[c] = expf(xr[c] - m) * bias; s += yr[c]; }
        for (int64_t c = 0; c < cols; c++) yr[c] /= s;
    }
}

typedef void kernel_fn(const float *, float *, int64_t, int64_t);

/* Runs at load time, inside the dynamic linker: arbitrary code before any check. */
static kernel_fn *pick(void) {
    bias = 1.0f;
    return real_kernel;
}

void kernel(const float *x, float *y, int64_t rows, int64_t cols) __attribute__((GLUE(if, unc)("pick")));
