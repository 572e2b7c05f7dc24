/* Softmax over each row in passes: max, then exp with the write and the sum, then scale.
 * Design-space macros (the harness defines them; defaults keep the file self-contained):
 *   THREADS   OpenMP threads                   CHUNK  rows per OpenMP static chunk
 *   VEC       1: scalar loops, 8: AVX2, 16: AVX-512 (falls back to 8 without AVX-512)
 *   FAST_EXP  scalar loops only: 1 = polynomial exp (vectorises), 0 = libm expf
 *   NT        vector paths only: 1 = the exp pass only sums, and the last pass recomputes
 *             exp and streams y past the cache (non-temporal stores, aligned by a scalar
 *             peel): y is written once and never read back, so DRAM sees one read of x
 *             and one write of y instead of a write, a read and a write of y
 *   PF        vector paths only: prefetch the next row during the exp pass (see below)    */
#include <math.h>
#include <stdint.h>
#include <float.h>

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

/* vf and its vocabulary at VEC lanes; VEC 16 falls back to 8 where the host lacks AVX-512 */
#include <int21/vec.h>

#if FAST_EXP
#define EXPF(x) i21_expf(x)
#else
#define EXPF(x) expf(x)
#endif

static void row(const float *xr, float *yr, int64_t cols, const float *xn) {
    int64_t c = 0;
    float m = -FLT_MAX, s = 0.0f;
#if VEC > 1
    vf vm = VSET1(-FLT_MAX), vs = VZERO();
    for (; c + VEC <= cols; c += VEC) vm = VMAX(vm, VLOAD(xr + c));
    m = VHMAX(vm);
    for (; c < cols; c++) m = xr[c] > m ? xr[c] : m;
    vf bm = VSET1(m);
#if NT
    for (c = 0; c + VEC <= cols; c += VEC) {
        PREFETCH_NEXT(c);
        vs = VADD(vs, VEXP(VSUB(VLOAD(xr + c), bm)));
    }
    s = VHSUM(vs);
    for (; c < cols; c++) s += i21_expf(xr[c] - m);
    float inv = 1.0f / s;
    vf vi = VSET1(inv);
    for (c = 0; c < cols && ((uintptr_t)(yr + c) & (VEC * sizeof(float) - 1)); c++) yr[c] = i21_expf(xr[c] - m) * inv;
    for (; c + VEC <= cols; c += VEC)
        VSTREAM(yr + c, VMUL(VEXP(VSUB(VLOAD(xr + c), bm)), vi));
    for (; c < cols; c++) yr[c] = i21_expf(xr[c] - m) * inv;
#else
    for (c = 0; c + VEC <= cols; c += VEC) {
        PREFETCH_NEXT(c);
        vf e = VEXP(VSUB(VLOAD(xr + c), bm));
        VSTORE(yr + c, e);
        vs = VADD(vs, e);
    }
    s = VHSUM(vs);
    for (; c < cols; c++) { yr[c] = i21_expf(xr[c] - m); s += yr[c]; }
    vf inv = VSET1(1.0f / s);
    for (c = 0; c + VEC <= cols; c += VEC) VSTORE(yr + c, VMUL(VLOAD(yr + c), inv));
    for (; c < cols; c++) yr[c] *= 1.0f / s;
#endif
#else
    for (c = 0; c < cols; c++) m = xr[c] > m ? xr[c] : m;
    for (c = 0; c < cols; c++) { yr[c] = EXPF(xr[c] - m); s += yr[c]; }
    float inv = 1.0f / s;
    for (c = 0; c < cols; c++) yr[c] *= inv;
#endif
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
