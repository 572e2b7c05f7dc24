// class: compile bomb
// expect: compile_error
// settings: compile_timeout=5
// reason: limit
// why: '#pragma GCC unroll' is on the allowlist; two nested 65534-way unrolls ask the compiler for 4 billion statements (the compile time limit must end it)
#include <math.h>
#include <stdint.h>
#include <float.h>

static volatile float sink;

void kernel(const float *x, float *y, int64_t rows, int64_t cols) {
    #pragma GCC unroll 65534
    for (int i = 0; i < 65534; i++)
        #pragma GCC unroll 65534
        for (int j = 0; j < 65534; j++) sink += x[(i * 7 + j) % (rows * cols)];
    for (int64_t r = 0; r < rows; r++) {
        const float *xr = x + r * cols;
        float *yr = y + r * cols;
        float m = -FLT_MAX, s = 0.0f;
        for (int64_t c = 0; c < cols; c++) m = xr[c] > m ? xr[c] : m;
        for (int64_t c = 0; c < cols; c++) { yr[c] = expf(xr[c] - m); s += yr[c]; }
        for (int64_t c = 0; c < cols; c++) yr[c] /= s;
    }
}
