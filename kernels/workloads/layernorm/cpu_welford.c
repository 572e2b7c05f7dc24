/* LayerNorm over each row: y = (x - mean) / sqrt(var + eps) * gamma + beta, float32,
 * var the biased variance. Welford: one pass over the row keeps a running mean and M2 per
 * vector lane (and per accumulator), on data shifted by the row's first element so the
 * float32 means stay small when |mean| >> std; the lanes are merged with Chan's formula
 * (in double: a few dozen values per row), then a second pass writes
 * ((x - K) - mean_K) * rstd * gamma + beta, so a constant row gives exactly beta.
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
/* Scalar: the running state is double, as in the other scalar seeds (a float32 running
 * mean drifts by ~ulp(|mean - K|) * sqrt(n) when the shift K happens to be an outlier). */
static void row(const float *xr, const float *g, const float *b, float *yr, int64_t n, float eps) {
    const float K = xr[0];
    double mean[UNROLL], m2[UNROLL];
    for (int u = 0; u < UNROLL; u++) mean[u] = m2[u] = 0.0;
    int64_t c = 0, k = 0;
    for (; c + UNROLL <= n; c += UNROLL) {
        double rk = 1.0 / (double)(++k);
        for (int u = 0; u < UNROLL; u++) {
            double v = (double)xr[c + u] - (double)K, d = v - mean[u];
            mean[u] += d * rk;
            m2[u] += d * (v - mean[u]);
        }
    }
    /* merge the UNROLL accumulators (k values each), then the tail one value at a time */
    double cnt = (double)k * UNROLL, mu = 0.0, M2 = 0.0;
    for (int u = 0; u < UNROLL; u++) mu += mean[u];
    mu = k ? mu / UNROLL : 0.0;
    for (int u = 0; u < UNROLL; u++) M2 += m2[u] + (double)k * (mean[u] - mu) * (mean[u] - mu);
    for (; c < n; c++) {
        double v = (double)xr[c] - (double)K, d = v - mu;
        cnt += 1.0;
        mu += d / cnt;
        M2 += d * (v - mu);
    }
    double var = M2 / (double)n;
    float rstd = (float)(1.0 / sqrt((var > 0.0 ? var : 0.0) + (double)eps)), fm = (float)mu;
    for (c = 0; c < n; c++) yr[c] = fmaf(((xr[c] - K) - fm) * rstd, g[c], b[c]);
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
    const float K = xr[0];
    vf vk = VSET1(K), mean[UNROLL], m2[UNROLL];
    for (int u = 0; u < UNROLL; u++) mean[u] = m2[u] = VZERO();
    int64_t c = 0, k = 0;
    for (; c + VEC * UNROLL <= n; c += VEC * UNROLL) {
        vf rk = VSET1(1.0f / (float)(++k));
        for (int u = 0; u < UNROLL; u++) {
            vf v = VSUB(VLOAD(xr + c + VEC * u), vk), d = VSUB(v, mean[u]);
            mean[u] = VFMA(d, rk, mean[u]);
            m2[u] = VFMA(d, VSUB(v, mean[u]), m2[u]);
        }
    }
    /* merge the VEC * UNROLL lanes (k values each) in double, then the tail one at a time */
    float lm[VEC * UNROLL], lq[VEC * UNROLL];
    for (int u = 0; u < UNROLL; u++) { VSTORE(lm + VEC * u, mean[u]); VSTORE(lq + VEC * u, m2[u]); }
    double cnt = (double)k * VEC * UNROLL, mu = 0.0, M2 = 0.0;
    if (k) {
        for (int i = 0; i < VEC * UNROLL; i++) mu += lm[i];
        mu /= VEC * UNROLL;
        for (int i = 0; i < VEC * UNROLL; i++) M2 += lq[i] + (double)k * ((double)lm[i] - mu) * ((double)lm[i] - mu);
    }
    for (; c < n; c++) {
        double v = (double)xr[c] - (double)K, d = v - mu;
        cnt += 1.0;
        mu += d / cnt;
        M2 += d * (v - mu);
    }
    double var = M2 / (double)n;
    write_row(xr, g, b, yr, n, K, (float)mu, (float)(1.0 / sqrt((var > 0.0 ? var : 0.0) + (double)eps)));
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
