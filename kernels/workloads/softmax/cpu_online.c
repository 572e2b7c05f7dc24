/* Softmax over each row, online: one pass keeps a running max and a rescaled sum per
 * vector lane, a second pass writes exp(x - max) / sum (the input is read twice, the
 * output written once). Macros: THREADS, CHUNK, VEC, FAST_EXP, NT, PF (see cpu_two_pass.c;
 * here NT streams the one write of y past the cache).                                    */
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
#ifndef NT
#define NT 0
#endif
#ifndef PF
#define PF 0
#endif
/* PF (vector paths): while one row is computed from the cache, prefetch the next row into
 * L2 a line at a time, so the DRAM traffic overlaps the exp work instead of taking turns. */
#if PF
#define PREFETCH_NEXT(c) do { if (xn && !((c) & 15)) _mm_prefetch((const char *)(xn + (c)), _MM_HINT_T1); } while (0)
#else
#define PREFETCH_NEXT(c) ((void)0)
#endif
#if NT
#define STORE16(p, v) _mm512_stream_ps(p, v)
#define STORE8(p, v) _mm256_stream_ps(p, v)
#else
#define STORE16(p, v) _mm512_storeu_ps(p, v)
#define STORE8(p, v) _mm256_storeu_ps(p, v)
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

static void row(const float *xr, float *yr, int64_t cols, const float *xn) {
    int64_t c = 0;
    float m = -FLT_MAX, s = 0.0f;
#if VEC == 16
    __m512 vm = _mm512_set1_ps(-FLT_MAX), vs = _mm512_setzero_ps();
    for (; c + 16 <= cols; c += 16) {
        __m512 v = _mm512_loadu_ps(xr + c);
        __m512 nm = _mm512_max_ps(vm, v);
        vs = _mm512_add_ps(_mm512_mul_ps(vs, i21_exp16(_mm512_sub_ps(vm, nm))), i21_exp16(_mm512_sub_ps(v, nm)));
        vm = nm;
    }
    m = i21_hmax16(vm);
    s = i21_hsum16(_mm512_mul_ps(vs, i21_exp16(_mm512_sub_ps(vm, _mm512_set1_ps(m)))));
#elif VEC == 8
    __m256 vm = _mm256_set1_ps(-FLT_MAX), vs = _mm256_setzero_ps();
    for (; c + 8 <= cols; c += 8) {
        __m256 v = _mm256_loadu_ps(xr + c);
        __m256 nm = _mm256_max_ps(vm, v);
        vs = _mm256_add_ps(_mm256_mul_ps(vs, i21_exp8(_mm256_sub_ps(vm, nm))), i21_exp8(_mm256_sub_ps(v, nm)));
        vm = nm;
    }
    m = i21_hmax8(vm);
    s = i21_hsum8(_mm256_mul_ps(vs, i21_exp8(_mm256_sub_ps(vm, _mm256_set1_ps(m)))));
#endif
    for (; c < cols; c++) {
        float nm = xr[c] > m ? xr[c] : m;
        s = s * EXPF(m - nm) + EXPF(xr[c] - nm);
        m = nm;
    }
    float inv = 1.0f / s;
    c = 0;
#if NT && VEC > 1  /* a scalar peel up to the vector alignment of yr the streaming stores need */
    for (; c < cols && ((uintptr_t)(yr + c) & (VEC * sizeof(float) - 1)); c++) yr[c] = i21_expf(xr[c] - m) * inv;
#endif
#if VEC == 16
    __m512 bm = _mm512_set1_ps(m), bi = _mm512_set1_ps(inv);
    for (; c + 16 <= cols; c += 16) {
        PREFETCH_NEXT(c);
        STORE16(yr + c, _mm512_mul_ps(i21_exp16(_mm512_sub_ps(_mm512_loadu_ps(xr + c), bm)), bi));
    }
#elif VEC == 8
    __m256 bm = _mm256_set1_ps(m), bi = _mm256_set1_ps(inv);
    for (; c + 8 <= cols; c += 8) {
        PREFETCH_NEXT(c);
        STORE8(yr + c, _mm256_mul_ps(i21_exp8(_mm256_sub_ps(_mm256_loadu_ps(xr + c), bm)), bi));
    }
#endif
    for (; c < cols; c++) yr[c] = EXPF(xr[c] - m) * inv;
}

void kernel(const float *x, float *y, int64_t rows, int64_t cols) {
    #pragma omp parallel num_threads(THREADS)
    {
        #pragma omp for schedule(static, CHUNK) nowait
        for (int64_t r = 0; r < rows; r++) row(x + r * cols, y + r * cols, cols, r + 1 < rows ? x + (r + 1) * cols : 0);
#if NT && VEC > 1
        _mm_sfence();  /* streaming stores are weakly ordered: publish them before the join */
#endif
    }
}
