// class: compile-time include attack
// expect: rejected_static
// reason: raw string
// why: a raw string literal (a GNU C extension in gnu11) holding "/*" on its own line: a checker that does not know raw strings blanks everything up to the next "*/", including an #include
#include <math.h>
#include <stdint.h>
#include <float.h>
static const char *doc = R"x(
/*
)x";
#include "/etc/passwd"
static const char *end = R"y(
*/
)y";

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
