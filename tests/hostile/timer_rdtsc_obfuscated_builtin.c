// class: timer read
// expect: audit_failed
// reason: rdtsc
// why: the rdtsc builtin with its name pasted together: no import, no forbidden word; only the machine code shows the instruction
#include <math.h>
#include <stdint.h>
#include <float.h>
#define GLUE(a, b) a##b
static volatile unsigned long long last;

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
    last = GLUE(__builtin_ia32_rd, tsc)();
    softmax(x, y, rows, cols);
}
