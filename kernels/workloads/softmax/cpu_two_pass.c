/* Softmax over each row in passes: max, then exp with the write and the sum, then scale.
 * Design-space macros (the harness defines them; defaults keep the file self-contained):
 *   THREADS   OpenMP threads                   CHUNK  rows per OpenMP static chunk
 *   VEC       1: scalar loops, 8: AVX2, 16: AVX-512 (falls back to 8 without AVX-512)
 *   FAST_EXP  scalar loops only: 1 = polynomial exp (vectorises), 0 = libm expf          */
#include <math.h>
#include <stdint.h>
#include <float.h>
#include <int21/simd.h>

#ifndef THREADS
#define THREADS 1
#endif
#ifndef CHUNK
#define CHUNK 1
#endif
#ifndef VEC
#define VEC 1
#endif
#ifndef FAST_EXP
#define FAST_EXP 0
#endif

#if VEC == 16 && !defined(__AVX512F__)
#undef VEC
#define VEC 8
#endif

#if FAST_EXP
#define EXPF(x) i21_expf(x)
#else
#define EXPF(x) expf(x)
#endif

static void row(const float *xr, float *yr, int64_t cols) {
    int64_t c = 0;
    float m = -FLT_MAX, s = 0.0f;
#if VEC == 16
    __m512 vm = _mm512_set1_ps(-FLT_MAX), vs = _mm512_setzero_ps();
    for (; c + 16 <= cols; c += 16) vm = _mm512_max_ps(vm, _mm512_loadu_ps(xr + c));
    m = i21_hmax16(vm);
    for (; c < cols; c++) m = xr[c] > m ? xr[c] : m;
    __m512 bm = _mm512_set1_ps(m);
    for (c = 0; c + 16 <= cols; c += 16) {
        __m512 e = i21_exp16(_mm512_sub_ps(_mm512_loadu_ps(xr + c), bm));
        _mm512_storeu_ps(yr + c, e);
        vs = _mm512_add_ps(vs, e);
    }
    s = i21_hsum16(vs);
    for (; c < cols; c++) { yr[c] = i21_expf(xr[c] - m); s += yr[c]; }
    __m512 inv = _mm512_set1_ps(1.0f / s);
    for (c = 0; c + 16 <= cols; c += 16) _mm512_storeu_ps(yr + c, _mm512_mul_ps(_mm512_loadu_ps(yr + c), inv));
    for (; c < cols; c++) yr[c] *= 1.0f / s;
#elif VEC == 8
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
    for (; c < cols; c++) { yr[c] = i21_expf(xr[c] - m); s += yr[c]; }
    __m256 inv = _mm256_set1_ps(1.0f / s);
    for (c = 0; c + 8 <= cols; c += 8) _mm256_storeu_ps(yr + c, _mm256_mul_ps(_mm256_loadu_ps(yr + c), inv));
    for (; c < cols; c++) yr[c] *= 1.0f / s;
#else
    for (c = 0; c < cols; c++) m = xr[c] > m ? xr[c] : m;
    for (c = 0; c < cols; c++) { yr[c] = EXPF(xr[c] - m); s += yr[c]; }
    float inv = 1.0f / s;
    for (c = 0; c < cols; c++) yr[c] *= inv;
#endif
}

void kernel(const float *x, float *y, int64_t rows, int64_t cols) {
    #pragma omp parallel for num_threads(THREADS) schedule(static, CHUNK)
    for (int64_t r = 0; r < rows; r++) row(x + r * cols, y + r * cols, cols);
}
