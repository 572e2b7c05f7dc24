// class: control
// expect: ok
// settings: timing=1
// why: a correct AVX2 softmax built on <int21/simd.h> (OpenMP, vector exp, scalar tail) must pass, timing included
#include <math.h>
#include <stdint.h>
#include <float.h>
#include <int21/simd.h>

static void row(const float *xr, float *yr, int64_t cols) {
    int64_t c = 0;
    float m = -FLT_MAX, s = 0.0f;
#if defined(__AVX2__) && defined(__FMA__)
    __m256 vm = _mm256_set1_ps(-FLT_MAX), vs = _mm256_setzero_ps();
    for (; c + 8 <= cols; c += 8) vm = _mm256_max_ps(vm, _mm256_loadu_ps(xr + c));
    m = i21_hmax8(vm);
    for (; c < cols; c++) m = xr[c] > m ? xr[c] : m;
    __m256 bm = _mm256_set1_ps(m);
    for (c = 0; c + 8 <= cols; c += 8) {
        __m256 e = i21_exp8(_mm256_sub_ps(_mm256_loadu_ps(xr + c), bm));
        _mm256_storeu_ps(yr + c, e);
        vs = _mm256_add_ps(vs, e);
    }
    s = i21_hsum8(vs);
#else
    for (; c < cols; c++) m = xr[c] > m ? xr[c] : m;
    c = 0;
#endif
    for (; c < cols; c++) { yr[c] = i21_expf(xr[c] - m); s += yr[c]; }
    float inv = 1.0f / s;
    for (c = 0; c < cols; c++) yr[c] *= inv;
}

void kernel(const float *x, float *y, int64_t rows, int64_t cols) {
    #pragma omp parallel for schedule(static)
    for (int64_t r = 0; r < rows; r++) row(x + r * cols, y + r * cols, cols);
}
