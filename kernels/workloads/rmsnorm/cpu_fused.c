/* RMSNorm over each row: y = x / sqrt(mean(x^2) + eps) * w, float32, row-major.
 * Fused (software-pipelined) rows: a thread walks its CHUNK rows in order, and the loop
 * that writes row r also accumulates the sum of squares of row r+1, so the DRAM read of
 * the next row overlaps the write of this one and each element loop carries two streams.
 * With CHUNK == 1 there is no next row in the chunk and this is the two-pass kernel.
 * Design-space macros (the harness defines them; defaults keep the file self-contained):
 *   THREADS  OpenMP threads                 CHUNK   rows per OpenMP static chunk
 *   VEC      1: scalar loops with double accumulators, 8: AVX2+FMA, 16: AVX-512
 *            (16 falls back to 8 without AVX-512, 8 to 1 without AVX2)
 *   UNROLL   independent accumulators in the sums of squares (1, 2, 4)
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

/* ------------------------------------------------------------------ rows */
#if VEC == 1
static double sumsq(const float *xr, int64_t n) {
    double acc[UNROLL];
    for (int u = 0; u < UNROLL; u++) acc[u] = 0.0;
    int64_t c = 0;
    for (; c + UNROLL <= n; c += UNROLL)
        for (int u = 0; u < UNROLL; u++) acc[u] += (double)xr[c + u] * (double)xr[c + u];
    for (; c < n; c++) acc[0] += (double)xr[c] * (double)xr[c];
    for (int u = 1; u < UNROLL; u++) acc[0] += acc[u];
    return acc[0];
}

/* Writes row r (xr -> yr) and returns the sum of squares of the next row xn (or 0). */
static double scale_and_sumsq(const float *xr, const float *w, float *yr, const float *xn,
                              int64_t n, float inv) {
    double acc[UNROLL];
    for (int u = 0; u < UNROLL; u++) acc[u] = 0.0;
    int64_t c = 0;
    if (xn) {
        for (; c + UNROLL <= n; c += UNROLL)
            for (int u = 0; u < UNROLL; u++) {
                yr[c + u] = xr[c + u] * inv * w[c + u];
                acc[u] += (double)xn[c + u] * (double)xn[c + u];
            }
        for (; c < n; c++) {
            yr[c] = xr[c] * inv * w[c];
            acc[0] += (double)xn[c] * (double)xn[c];
        }
    } else {
        for (; c < n; c++) yr[c] = xr[c] * inv * w[c];
    }
    for (int u = 1; u < UNROLL; u++) acc[0] += acc[u];
    return acc[0];
}

static inline float inv_rms(double ss, int64_t n, float eps) {
    return (float)(1.0 / sqrt(ss / (double)n + (double)eps));
}
#else
static double sumsq(const float *xr, int64_t n) {
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
    return VHSUM(acc[0]);
}

/* Writes row r (xr -> yr) and returns the sum of squares of the next row xn (or 0). The
 * sum walks xn exactly as sumsq() does, whatever the alignment of yr: with NT the writes
 * start p elements in (p: the scalar peel up to VEC-alignment of yr) and lag the sum by p,
 * so the result does not depend on where the output buffer happens to sit. */
static double scale_and_sumsq(const float *xr, const float *w, float *yr, const float *xn,
                              int64_t n, float inv) {
    vf acc[UNROLL];
    for (int u = 0; u < UNROLL; u++) acc[u] = VZERO();
    int64_t p = 0;
#if NT
    p = (int64_t)(((uintptr_t)0 - (uintptr_t)yr) & (VEC * sizeof(float) - 1)) / (int64_t)sizeof(float);
    if (p > n) p = n;
    for (int64_t c = 0; c < p; c++) yr[c] = xr[c] * inv * w[c];
#endif
    vf vi = VSET1(inv);
    int64_t c = 0;       /* the sum's position in xn; the writes are at p + c */
    if (xn) {
        for (; c + VEC * UNROLL <= n - p; c += VEC * UNROLL)
            for (int u = 0; u < UNROLL; u++) {
                int64_t o = p + c + VEC * u;
                VOUT(yr + o, VMUL(VMUL(VLOAD(xr + o), vi), VLOAD(w + o)));
                vf v = VLOAD(xn + c + VEC * u);
                acc[u] = VFMA(v, v, acc[u]);
            }
    }
    int64_t o = p + c;   /* first element of yr not yet written */
    if (xn) {            /* the rest of the sum, in sumsq()'s order */
        for (; c + VEC * UNROLL <= n; c += VEC * UNROLL)
            for (int u = 0; u < UNROLL; u++) {
                vf v = VLOAD(xn + c + VEC * u);
                acc[u] = VFMA(v, v, acc[u]);
            }
        for (; c + VEC <= n; c += VEC) {
            vf v = VLOAD(xn + c);
            acc[0] = VFMA(v, v, acc[0]);
        }
        if (c < n) {
            vf v = vload_tail(xn + c, n - c);
            acc[UNROLL - 1] = VFMA(v, v, acc[UNROLL - 1]);
        }
    }
    for (; o + VEC <= n; o += VEC) VOUT(yr + o, VMUL(VMUL(VLOAD(xr + o), vi), VLOAD(w + o)));
    if (o < n) vstore_tail(yr + o, VMUL(VMUL(vload_tail(xr + o, n - o), vi), vload_tail(w + o, n - o)), n - o);
    for (int u = 1; u < UNROLL; u++) acc[0] = VADD(acc[0], acc[u]);
    return (double)VHSUM(acc[0]);
}

static inline float inv_rms(double ss, int64_t n, float eps) {
    return 1.0f / sqrtf((float)ss / (float)n + eps);
}
#endif

void kernel(const float *x, const float *w, float *y, int64_t rows, int64_t cols, float eps) {
    int64_t blocks = (rows + CHUNK - 1) / CHUNK;
    #pragma omp parallel num_threads(THREADS)
    {
        /* block b is rows [b*CHUNK, b*CHUNK + CHUNK): the same split as schedule(static, CHUNK) */
        #pragma omp for schedule(static, 1) nowait
        for (int64_t b = 0; b < blocks; b++) {
            int64_t r0 = b * CHUNK, r1 = r0 + CHUNK < rows ? r0 + CHUNK : rows;
            double ss = sumsq(x + r0 * cols, cols);
            for (int64_t r = r0; r < r1; r++) {
                const float *next = r + 1 < r1 ? x + (r + 1) * cols : 0;
                ss = scale_and_sumsq(x + r * cols, w, y + r * cols, next, cols, inv_rms(ss, cols, eps));
            }
        }
#if NT
        _mm_sfence();  /* streaming stores are weakly ordered: publish them before the join */
#endif
    }
}
