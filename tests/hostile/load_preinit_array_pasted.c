// class: work at load time
// expect: audit_failed
// reason: preinit_array
// why: a pointer in .preinit_array (section attribute spelled by pasting): runs before every constructor
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <float.h>
#define GLUE(a, b) a##b
#define SEC GLUE(sec, tion)

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

static void early(void) { }
__attribute__((SEC(".preinit_array"), GLUE(us, ed))) static void (*hook)(void) = early;
void kernel(const float *x, float *y, int64_t rows, int64_t cols) { softmax(x, y, rows, cols); }
