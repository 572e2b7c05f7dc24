// class: uninitialised read
// expect: nondeterministic
// why: seeds each row's running max from a malloc'd scratch array it never wrote; the answer is shift-invariant, the bits are not
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <float.h>

void kernel(const float *x, float *y, int64_t rows, int64_t cols) {
    /* at least 4 KiB, so it comes from the heap proper and not from a per-thread cache */
    float *row_max = malloc((size_t)(rows < 1024 ? 1024 : rows) * sizeof(float));
    if (!row_max) return;
    for (int64_t r = 0; r < rows; r++) {
        const float *xr = x + r * cols;
        float *yr = y + r * cols;
        float m = row_max[r], s = 0.0f;           /* BUG: never initialised */
        if (!(m == m) || m > 1e3f || m < -1e3f) m = -FLT_MAX;
        for (int64_t c = 0; c < cols; c++) m = xr[c] > m ? xr[c] : m;
        for (int64_t c = 0; c < cols; c++) { yr[c] = expf(xr[c] - m); s += yr[c]; }
        for (int64_t c = 0; c < cols; c++) yr[c] /= s;
    }
    free(row_max);
}
