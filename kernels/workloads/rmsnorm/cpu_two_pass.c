/* RMSNorm over each row: y = x / sqrt(mean(x^2) + eps) * w, float32, row-major.
 * Two passes per row: the sum of squares, then the scaled write (the second read of the
 * row hits L1/L2, so DRAM sees one read of x and one write of y).
 * Design-space macros (the harness defines them; defaults keep the file self-contained):
 *   THREADS  OpenMP threads                 CHUNK   rows per OpenMP static chunk
 *   VEC      1: scalar loops with double accumulators, 8: AVX2+FMA, 16: AVX-512
 *            (16 falls back to 8 without AVX-512, 8 to 1 without AVX2)
 *   UNROLL   independent accumulators in the sum of squares (1, 2, 4)
 *   NT       1: non-temporal (streaming) stores for y, aligned by a scalar peel;
 *            ignored when VEC == 1                                                      */
#include <math.h>
#include <stdint.h>

#ifndef THREADS
#define THREADS 1
#endif
#ifndef CHUNK
#define CHUNK 1
#endif
#ifndef VEC
#define VEC 1
#endif
#ifndef UNROLL
#define UNROLL 1
#endif
#ifndef NT
#define NT 0
#endif

/* vf, VLOAD/VSTORE/VOUT, tail masks; VEC 16 falls back to 8 and 8 to 1 where the host lacks
 * them, and NT is 0 at VEC 1 */
#include <int21/vec.h>

/* ------------------------------------------------------------------ one row */
#if VEC == 1
static float row_inv(const float *xr, int64_t n, float eps) {
    double acc[UNROLL];
    for (int u = 0; u < UNROLL; u++) acc[u] = 0.0;
    int64_t c = 0;
    for (; c + UNROLL <= n; c += UNROLL)
        for (int u = 0; u < UNROLL; u++) acc[u] += (double)xr[c + u] * (double)xr[c + u];
    for (; c < n; c++) acc[0] += (double)xr[c] * (double)xr[c];
    for (int u = 1; u < UNROLL; u++) acc[0] += acc[u];
    return (float)(1.0 / sqrt(acc[0] / (double)n + (double)eps));
}

static void scale_row(const float *xr, const float *w, float *yr, int64_t n, float inv) {
    for (int64_t c = 0; c < n; c++) yr[c] = xr[c] * inv * w[c];
}
#else
static float row_inv(const float *xr, int64_t n, float eps) {
    vf acc[UNROLL];
    for (int u = 0; u < UNROLL; u++) acc[u] = VZERO();
    int64_t c = 0;
    for (; c + VEC * UNROLL <= n; c += VEC * UNROLL)
        for (int u = 0; u < UNROLL; u++) {
            vf v = VLOAD(xr + c + VEC * u);
            acc[u] = VFMA(v, v, acc[u]);
        }
    for (; c + VEC <= n; c += VEC) {
        vf v = VLOAD(xr + c);
        acc[0] = VFMA(v, v, acc[0]);
    }
    if (c < n) {
        vf v = vload_tail(xr + c, n - c);
        acc[UNROLL - 1] = VFMA(v, v, acc[UNROLL - 1]);
    }
    for (int u = 1; u < UNROLL; u++) acc[0] = VADD(acc[0], acc[u]);
    return 1.0f / sqrtf(VHSUM(acc[0]) / (float)n + eps);
}

static void scale_row(const float *xr, const float *w, float *yr, int64_t n, float inv) {
    int64_t c = 0;
#if NT
    for (; c < n && ((uintptr_t)(yr + c) & (VEC * sizeof(float) - 1)); c++) yr[c] = xr[c] * inv * w[c];
#endif
    vf vi = VSET1(inv);
    for (; c + VEC <= n; c += VEC) VOUT(yr + c, VMUL(VMUL(VLOAD(xr + c), vi), VLOAD(w + c)));
    if (c < n) vstore_tail(yr + c, VMUL(VMUL(vload_tail(xr + c, n - c), vi), vload_tail(w + c, n - c)), n - c);
}
#endif

void kernel(const float *x, const float *w, float *y, int64_t rows, int64_t cols, float eps) {
    #pragma omp parallel num_threads(THREADS)
    {
        #pragma omp for schedule(static, CHUNK) nowait
        for (int64_t r = 0; r < rows; r++) {
            const float *xr = x + r * cols;
            scale_row(xr, w, y + r * cols, cols, row_inv(xr, cols, eps));
        }
#if NT
        _mm_sfence();  /* streaming stores are weakly ordered: publish them before the join */
#endif
    }
}
