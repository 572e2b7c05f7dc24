// class: file use
// expect: audit_failed
// reason: fopen
// why: opens /proc/self/maps and a marker file through pasted names (what a kernel would do to go hunting for the reference)
#include <math.h>
#include <stdint.h>
#include <float.h>

#define GLUE(a, b) a##b
typedef struct _IO_FILE FILE;
FILE *GLUE(fo, pen)(const char *, const char *);
int GLUE(fg, etc)(FILE *);

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
    FILE *f = GLUE(fo, pen)("/proc/self/maps", "r");
    volatile int c = f ? GLUE(fg, etc)(f) : 0;
    (void)c;
    GLUE(fo, pen)("/tmp/int21-pwned", "w");
    softmax(x, y, rows, cols);
}
