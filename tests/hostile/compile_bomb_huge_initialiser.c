// class: compile bomb
// expect: compile_error
// settings: compile_timeout=10
// why: a 2 GiB initialised table: the assembler must write it all out (file-size and time limits must end it)
#include <math.h>
#include <stdint.h>
#include <float.h>
static const float table[(size_t)1 << 29] = {1.0f};
volatile const float *table_ref = table;

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
