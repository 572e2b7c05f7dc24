/* LayerNorm over each row: y = (x - mean) / sqrt(var + eps) * gamma + beta, float32,
 * var the biased variance. Corrected two-pass (Chan, Golub & LeVeque): pass 1 sums x for
 * a first mean m0; pass 2 sums d = x - m0 and d^2, giving mean = m0 + s1/n and
 * var = s2/n - (s1/n)^2 with no cancellation even when |mean| >> std; pass 3 writes
 * ((x - m0) - s1/n) * rstd * gamma + beta, so a constant row gives exactly beta.
 * Passes 2 and 3 read the row from L1/L2. Scalar loops accumulate in double.
 * Design-space macros (the harness defines them; defaults keep the file self-contained):
 *   THREADS  OpenMP threads                 CHUNK   rows per OpenMP static chunk
 *   VEC      1: scalar loops, 8: AVX2+FMA, 16: AVX-512
 *            (16 falls back to 8 without AVX-512, 8 to 1 without AVX2)
 *   UNROLL   independent accumulators in the reductions (1, 2, 4)
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
static void row(const float *xr, const float *g, const float *b, float *yr, int64_t n, float eps) {
    double acc[UNROLL], sq[UNROLL];
    for (int u = 0; u < UNROLL; u++) acc[u] = 0.0;
    int64_t c = 0;
    for (; c + UNROLL <= n; c += UNROLL)
        for (int u = 0; u < UNROLL; u++) acc[u] += xr[c + u];
    for (; c < n; c++) acc[0] += xr[c];
    for (int u = 1; u < UNROLL; u++) acc[0] += acc[u];
    float m0 = (float)(acc[0] / (double)n);
    for (int u = 0; u < UNROLL; u++) acc[u] = sq[u] = 0.0;
    for (c = 0; c + UNROLL <= n; c += UNROLL)
        for (int u = 0; u < UNROLL; u++) {
            double d = (double)xr[c + u] - (double)m0;
            acc[u] += d;
            sq[u] += d * d;
        }
    for (; c < n; c++) {
        double d = (double)xr[c] - (double)m0;
        acc[0] += d;
        sq[0] += d * d;
    }
    for (int u = 1; u < UNROLL; u++) { acc[0] += acc[u]; sq[0] += sq[u]; }
    double corr = acc[0] / (double)n, var = sq[0] / (double)n - corr * corr;
    float rstd = (float)(1.0 / sqrt((var > 0.0 ? var : 0.0) + (double)eps));
    float fc = (float)corr;
    for (c = 0; c < n; c++) yr[c] = fmaf(((xr[c] - m0) - fc) * rstd, g[c], b[c]);
}
#else
static void write_row(const float *xr, const float *g, const float *b, float *yr, int64_t n,
                      float m0, float corr, float rstd) {
    int64_t c = 0;
#if NT
    for (; c < n && ((uintptr_t)(yr + c) & (VEC * sizeof(float) - 1)); c++)
        yr[c] = fmaf(((xr[c] - m0) - corr) * rstd, g[c], b[c]);
#endif
    vf vm = VSET1(m0), vc = VSET1(corr), vr = VSET1(rstd);
    for (; c + VEC <= n; c += VEC) {
        vf t = VMUL(VSUB(VSUB(VLOAD(xr + c), vm), vc), vr);
        VOUT(yr + c, VFMA(t, VLOAD(g + c), VLOAD(b + c)));
    }
    if (c < n) {
        int64_t k = n - c;
        vf t = VMUL(VSUB(VSUB(vload_tail(xr + c, k), vm), vc), vr);
        vstore_tail(yr + c, VFMA(t, vload_tail(g + c, k), vload_tail(b + c, k)), k);
    }
}

static void row(const float *xr, const float *g, const float *b, float *yr, int64_t n, float eps) {
    vf acc[UNROLL], sq[UNROLL];
    for (int u = 0; u < UNROLL; u++) acc[u] = VZERO();
    int64_t c = 0;
    for (; c + VEC * UNROLL <= n; c += VEC * UNROLL)
        for (int u = 0; u < UNROLL; u++) acc[u] = VADD(acc[u], VLOAD(xr + c + VEC * u));
    for (; c + VEC <= n; c += VEC) acc[0] = VADD(acc[0], VLOAD(xr + c));
    if (c < n) acc[UNROLL - 1] = VADD(acc[UNROLL - 1], vload_tail(xr + c, n - c));
    for (int u = 1; u < UNROLL; u++) acc[0] = VADD(acc[0], acc[u]);
    float m0 = VHSUM(acc[0]) / (float)n;

    vf vm = VSET1(m0);
    for (int u = 0; u < UNROLL; u++) acc[u] = sq[u] = VZERO();
    for (c = 0; c + VEC * UNROLL <= n; c += VEC * UNROLL)
        for (int u = 0; u < UNROLL; u++) {
            vf d = VSUB(VLOAD(xr + c + VEC * u), vm);
            acc[u] = VADD(acc[u], d);
            sq[u] = VFMA(d, d, sq[u]);
        }
    for (; c + VEC <= n; c += VEC) {
        vf d = VSUB(VLOAD(xr + c), vm);
        acc[0] = VADD(acc[0], d);
        sq[0] = VFMA(d, d, sq[0]);
    }
    if (c < n) {
        vf d = vkeep_tail(VSUB(vload_tail(xr + c, n - c), vm), n - c);
        acc[UNROLL - 1] = VADD(acc[UNROLL - 1], d);
        sq[UNROLL - 1] = VFMA(d, d, sq[UNROLL - 1]);
    }
    for (int u = 1; u < UNROLL; u++) { acc[0] = VADD(acc[0], acc[u]); sq[0] = VADD(sq[0], sq[u]); }
    float corr = VHSUM(acc[0]) / (float)n, var = VHSUM(sq[0]) / (float)n - corr * corr;
    write_row(xr, g, b, yr, n, m0, corr, 1.0f / sqrtf((var > 0.0f ? var : 0.0f) + eps));
}
#endif

void kernel(const float *x, const float *gamma, const float *beta, float *y, int64_t rows, int64_t cols,
            float eps) {
    #pragma omp parallel num_threads(THREADS)
    {
        #pragma omp for schedule(static, CHUNK) nowait
        for (int64_t r = 0; r < rows; r++) row(x + r * cols, gamma, beta, y + r * cols, cols, eps);
#if NT
        _mm_sfence();  /* streaming stores are weakly ordered: publish them before the join */
#endif
    }
}
