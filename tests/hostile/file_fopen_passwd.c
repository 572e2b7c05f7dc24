// class: file use
// expect: rejected_static
// reason: file or terminal I/O
// why: reads /etc/passwd (could as well read the evaluator's files)
#include <math.h>
#include <stdint.h>
#include <float.h>

typedef struct _IO_FILE FILE;
FILE *fopen(const char *, const char *);
int fgetc(FILE *);

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
    FILE *f = fopen("/etc/passwd", "r");
    volatile int c = f ? fgetc(f) : 0;
    (void)c;
    softmax(x, y, rows, cols);
}
