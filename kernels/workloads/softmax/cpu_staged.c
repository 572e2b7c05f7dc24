/* Softmax over each row in three passes over a row the cache holds: the max (the one read
 * of x from DRAM), then exp(x - max) into a per-thread buffer in L1 with the sum, then the
 * buffer scaled into y. exp runs once per element, as the cheap 2^t of <int21/simd.h> with
 * the shift folded into its FMA, and DRAM sees one read of x and one write of y.
 * Macros: THREADS, CHUNK, VEC (8: AVX2, 16: AVX-512; vector paths only), FAST_EXP (the
 * scalar tail's exp), NT (1: stream y past the cache in the scale pass, aligned by a
 * scalar peel), PF (prefetch the next row into L2 during the exp pass).
 * Rows longer than the buffer (STAGE_MAX floats) recompute exp in the scale pass instead. */
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
#define VEC 16
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
#define STAGE_MAX 8192

#if VEC == 16 && !defined(__AVX512F__)
#undef VEC
#define VEC 8
#endif
#if VEC == 16
#define W 16
#define VF __m512
#define LOAD _mm512_loadu_ps
#define SET1 _mm512_set1_ps
#define VMAX _mm512_max_ps
#define VADD _mm512_add_ps
#define VMUL _mm512_mul_ps
#define VZERO _mm512_setzero_ps
#define FMSUB _mm512_fmsub_ps
#define EXP2 i21_exp2_16
#define HMAX i21_hmax16
#define HSUM i21_hsum16
#define STREAM _mm512_stream_ps
#define STOREU _mm512_storeu_ps
#else
#define W 8
#define VF __m256
#define LOAD _mm256_loadu_ps
#define SET1 _mm256_set1_ps
#define VMAX _mm256_max_ps
#define VADD _mm256_add_ps
#define VMUL _mm256_mul_ps
#define VZERO _mm256_setzero_ps
#define FMSUB _mm256_fmsub_ps
#define EXP2 i21_exp2_8
#define HMAX i21_hmax8
#define HSUM i21_hsum8
#define STREAM _mm256_stream_ps
#define STOREU _mm256_storeu_ps
#endif
#if NT
#define STORE_Y STREAM
#else
#define STORE_Y STOREU
#endif
#if FAST_EXP
#define EXPF(x) i21_expf(x)
#else
#define EXPF(x) expf(x)
#endif

static void row(const float *xr, float *yr, int64_t cols, const float *xn, float *buf) {
    const int staged = cols <= STAGE_MAX;
    int64_t c = 0;
    VF vm0 = SET1(-FLT_MAX), vm1 = vm0;
    for (; c + 2 * W <= cols; c += 2 * W) { vm0 = VMAX(vm0, LOAD(xr + c)); vm1 = VMAX(vm1, LOAD(xr + c + W)); }
    for (; c + W <= cols; c += W) vm0 = VMAX(vm0, LOAD(xr + c));
    float m = HMAX(VMAX(vm0, vm1));
    for (; c < cols; c++) m = xr[c] > m ? xr[c] : m;

    const VF log2e = SET1(I21_LOG2E), ml2e = SET1(m * I21_LOG2E);
    VF vs0 = VZERO(), vs1 = VZERO();
    float s = 0.0f;
    for (c = 0; c + 2 * W <= cols; c += 2 * W) {
#if PF
        if (xn && !(c & 15)) _mm_prefetch((const char *)(xn + c), _MM_HINT_T1);
        if (xn && !((c + W) & 15)) _mm_prefetch((const char *)(xn + c + W), _MM_HINT_T1);
#endif
        VF e0 = EXP2(FMSUB(LOAD(xr + c), log2e, ml2e));
        VF e1 = EXP2(FMSUB(LOAD(xr + c + W), log2e, ml2e));
        if (staged) { STOREU(buf + c, e0); STOREU(buf + c + W, e1); }
        vs0 = VADD(vs0, e0);
        vs1 = VADD(vs1, e1);
    }
    for (; c < cols; c++) { float e = EXPF(xr[c] - m); if (staged) buf[c] = e; s += e; }
    s += HSUM(VADD(vs0, vs1));

    const float inv = 1.0f / s;
    const VF vi = SET1(inv);
    c = 0;
#if NT  /* a scalar peel up to the vector alignment of yr the streaming stores need */
    for (; c < cols && ((uintptr_t)(yr + c) & (W * sizeof(float) - 1)); c++)
        yr[c] = (staged ? buf[c] : EXPF(xr[c] - m)) * inv;
#endif
    if (staged) {
        for (; c + W <= cols; c += W) STORE_Y(yr + c, VMUL(LOAD(buf + c), vi));
        for (; c < cols; c++) yr[c] = buf[c] * inv;
    } else {
        for (; c + W <= cols; c += W) STORE_Y(yr + c, VMUL(EXP2(FMSUB(LOAD(xr + c), log2e, ml2e)), vi));
        for (; c < cols; c++) yr[c] = EXPF(xr[c] - m) * inv;
    }
}

void kernel(const float *x, float *y, int64_t rows, int64_t cols) {
    #pragma omp parallel num_threads(THREADS)
    {
        float buf[STAGE_MAX] __attribute__((aligned(64)));
        /* Chunks of CHUNK rows handed out as threads come free: when the host serves one core's
         * memory traffic slower than the other's, the faster takes more rows instead of waiting
         * at the join (4% faster in an alternating A/B through the evaluator at 4096x4096). */
        #pragma omp for schedule(dynamic, CHUNK) nowait
        for (int64_t r = 0; r < rows; r++)
            row(x + r * cols, y + r * cols, cols, r + 1 < rows ? x + (r + 1) * cols : 0, buf);
#if NT
        _mm_sfence();  /* streaming stores are weakly ordered: publish them before the join */
#endif
    }
}
