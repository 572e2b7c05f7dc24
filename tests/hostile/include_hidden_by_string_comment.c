// class: compile-time include attack
// expect: rejected_static
// reason: include
// why: a "/*" inside a string literal makes a comment-stripper that ignores strings blank the next lines, hiding the #include from the static check
#include <math.h>
#include <stdint.h>
#include <float.h>
static const char *open_marker = "/*";
#include "/etc/passwd"
static const char *close_marker = "*/";

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
