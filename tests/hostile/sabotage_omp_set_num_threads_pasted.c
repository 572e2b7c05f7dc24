// class: baseline sabotage (OpenMP state)
// expect: rejected_static
// reason: OpenMP settings
// why: the same, with the name pasted together so no check on the raw source sees it; the preprocessed text is checked (and the name is off the import allowlist)
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <float.h>
#define GLUE(a, b) a##b
void GLUE(omp_set_num_, threads)(int);

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

void kernel(const float *x, float *y, int64_t rows, int64_t cols) { softmax(x, y, rows, cols); GLUE(omp_set_num_, threads)(1); }
