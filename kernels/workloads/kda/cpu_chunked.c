/* KDA forward, chunked (the WY / UT-transform form of the gated delta rule).
 *
 * Per (b, h) and per chunk of L <= CHUNK steps, with S0 the state entering the chunk and
 * G_i the within-chunk cumulative log decay (per key channel):
 *   A_ij = beta_i k_i . (k_j * exp(G_i - G_j))   j <  i   (strictly lower)
 *   P_ij = scale q_i . (k_j * exp(G_i - G_j))    j <= i
 *   (I + A) U = diag(beta) (V - K~ S0)          K~ = k * exp(G),  forward substitution
 *   O = Q~ S0 + P U                              Q~ = scale q * exp(G)
 *   S = diag(exp(G_L)) S0 + K^T U                K^_j = k_j * exp(G_L - G_j)
 * exp(G_i - G_j) is built as a running product of the per-step decays (never a quotient),
 * so no exponent is ever positive: exact for any decay, nothing overflows.
 * The three K x V products (K~ S0, Q~ S0, K^T U) are register-blocked (4 rows x 2 vectors).
 *
 * Macros: THREADS (OpenMP over b*h), VEC (1, 8 = AVX2+FMA, 16 = AVX-512F, with fallback),
 * CHUNK (16, 32, 64). Any K and V (the state is padded to whole vector pairs).          */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#ifndef THREADS
#define THREADS 1
#endif
#ifndef VEC
#define VEC 1
#endif
#ifndef CHUNK
#define CHUNK 16
#endif

/* vf and its vocabulary (VLOADA/VSTOREA: the slices are aligned to whole vectors); VEC 16
 * falls back to 8 and 8 to 1 where the host lacks them */
#include <int21/vec.h>

#define CH CHUNK
#define VW (2 * VEC)      /* columns per register block */

static inline void expv(const float *x, float *d, int64_t n) {
    int64_t r = 0;
#if VEC == 16
    for (; r + 16 <= n; r += 16) _mm512_storeu_ps(d + r, i21_exp16(_mm512_loadu_ps(x + r)));
#endif
#if VEC >= 8
    for (; r + 8 <= n; r += 8) _mm256_storeu_ps(d + r, i21_exp8(_mm256_loadu_ps(x + r)));
#endif
    for (; r < n; r++) d[r] = i21_expf(x[r]);
}

/* out[i][:] (+)= sum_{c<n} M[i][c] X[c][:] for i < rows (a multiple of 4; M rows stride ldm,
 * X and out rows stride Vp). lower: M is lower triangular, c runs to min(n, i0 + 4).  */
static void gemm_rows(const float *restrict M, int64_t ldm, int64_t rows, const float *restrict X,
                      int64_t n, float *restrict out, int64_t Vp, int accumulate, int lower) {
    for (int64_t i0 = 0; i0 < rows; i0 += 4) {
        const float *m0 = M + i0 * ldm, *m1 = m0 + ldm, *m2 = m1 + ldm, *m3 = m2 + ldm;
        int64_t nc = lower && i0 + 4 < n ? i0 + 4 : n;
        for (int64_t jv = 0; jv < Vp; jv += VW) {
            float *o0 = out + i0 * Vp + jv;
            vf a00, a01, a10, a11, a20, a21, a30, a31;
            if (accumulate) {
                a00 = VLOADA(o0); a01 = VLOADA(o0 + VEC);
                a10 = VLOADA(o0 + Vp); a11 = VLOADA(o0 + Vp + VEC);
                a20 = VLOADA(o0 + 2 * Vp); a21 = VLOADA(o0 + 2 * Vp + VEC);
                a30 = VLOADA(o0 + 3 * Vp); a31 = VLOADA(o0 + 3 * Vp + VEC);
            } else {
                a00 = a01 = a10 = a11 = a20 = a21 = a30 = a31 = VZERO();
            }
            const float *xc = X + jv;
            for (int64_t c = 0; c < nc; c++, xc += Vp) {
                vf s0 = VLOADA(xc), s1 = VLOADA(xc + VEC);
                vf x0 = VSET1(m0[c]), x1 = VSET1(m1[c]), x2 = VSET1(m2[c]), x3 = VSET1(m3[c]);
                a00 = VFMA(x0, s0, a00); a01 = VFMA(x0, s1, a01);
                a10 = VFMA(x1, s0, a10); a11 = VFMA(x1, s1, a11);
                a20 = VFMA(x2, s0, a20); a21 = VFMA(x2, s1, a21);
                a30 = VFMA(x3, s0, a30); a31 = VFMA(x3, s1, a31);
            }
            VSTOREA(o0, a00); VSTOREA(o0 + VEC, a01);
            VSTOREA(o0 + Vp, a10); VSTOREA(o0 + Vp + VEC, a11);
            VSTOREA(o0 + 2 * Vp, a20); VSTOREA(o0 + 2 * Vp + VEC, a21);
            VSTOREA(o0 + 3 * Vp, a30); VSTOREA(o0 + 3 * Vp + VEC, a31);
        }
    }
}

/* S[c][:] = gam[c] S[c][:] + sum_{i<L} KhT[c][i] U[i][:] */
static void state_update(float *restrict S, const float *restrict gam, const float *restrict KhT,
                         const float *restrict U, int64_t L, int64_t K, int64_t Vp) {
    int64_t c0 = 0;
    for (; c0 + 4 <= K; c0 += 4) {
        const float *h0 = KhT + c0 * CH, *h1 = h0 + CH, *h2 = h1 + CH, *h3 = h2 + CH;
        for (int64_t jv = 0; jv < Vp; jv += VW) {
            float *s = S + c0 * Vp + jv;
            vf g0 = VSET1(gam[c0]), g1 = VSET1(gam[c0 + 1]), g2 = VSET1(gam[c0 + 2]), g3 = VSET1(gam[c0 + 3]);
            vf a00 = VMUL(g0, VLOADA(s)), a01 = VMUL(g0, VLOADA(s + VEC));
            vf a10 = VMUL(g1, VLOADA(s + Vp)), a11 = VMUL(g1, VLOADA(s + Vp + VEC));
            vf a20 = VMUL(g2, VLOADA(s + 2 * Vp)), a21 = VMUL(g2, VLOADA(s + 2 * Vp + VEC));
            vf a30 = VMUL(g3, VLOADA(s + 3 * Vp)), a31 = VMUL(g3, VLOADA(s + 3 * Vp + VEC));
            const float *ui = U + jv;
            for (int64_t i = 0; i < L; i++, ui += Vp) {
                vf u0 = VLOADA(ui), u1 = VLOADA(ui + VEC);
                vf x0 = VSET1(h0[i]), x1 = VSET1(h1[i]), x2 = VSET1(h2[i]), x3 = VSET1(h3[i]);
                a00 = VFMA(x0, u0, a00); a01 = VFMA(x0, u1, a01);
                a10 = VFMA(x1, u0, a10); a11 = VFMA(x1, u1, a11);
                a20 = VFMA(x2, u0, a20); a21 = VFMA(x2, u1, a21);
                a30 = VFMA(x3, u0, a30); a31 = VFMA(x3, u1, a31);
            }
            VSTOREA(s, a00); VSTOREA(s + VEC, a01);
            VSTOREA(s + Vp, a10); VSTOREA(s + Vp + VEC, a11);
            VSTOREA(s + 2 * Vp, a20); VSTOREA(s + 2 * Vp + VEC, a21);
            VSTOREA(s + 3 * Vp, a30); VSTOREA(s + 3 * Vp + VEC, a31);
        }
    }
    for (; c0 < K; c0++) {
        const float *h0 = KhT + c0 * CH;
        for (int64_t jv = 0; jv < Vp; jv += VW) {
            float *s = S + c0 * Vp + jv;
            vf g0 = VSET1(gam[c0]);
            vf a00 = VMUL(g0, VLOADA(s)), a01 = VMUL(g0, VLOADA(s + VEC));
            const float *ui = U + jv;
            for (int64_t i = 0; i < L; i++, ui += Vp) {
                vf x0 = VSET1(h0[i]);
                a00 = VFMA(x0, VLOADA(ui), a00); a01 = VFMA(x0, VLOADA(ui + VEC), a01);
            }
            VSTOREA(s, a00); VSTOREA(s + VEC, a01);
        }
    }
}

typedef struct {
    float *S, *Wt, *D, *KQ, *KhT, *gam, *eg, *A, *P, *Ti, *XY, *U;
} work_t;

static size_t carve(work_t *w, float *base, int64_t K, int64_t Vp) {
    /* every block a multiple of 16 floats so vector rows stay 64-byte aligned */
    int64_t Kp = (K + 15) / 16 * 16;
    float *p = base;
#define TAKE(field, n) do { w->field = p; p += ((n) + 15) / 16 * 16; } while (0)
    TAKE(S, K * Vp); TAKE(Wt, K * CH); TAKE(D, CH * Kp); TAKE(KQ, 2 * CH * K);
    TAKE(KhT, K * CH); TAKE(gam, Kp); TAKE(eg, Kp); TAKE(A, CH * CH); TAKE(P, CH * CH); TAKE(Ti, CH * CH);
    TAKE(XY, 2 * CH * Vp); TAKE(U, CH * Vp);
#undef TAKE
    return (size_t)(p - base);
}

static void head(const float *q, const float *k, const float *v, const float *g,
                 const float *beta, float *o, int64_t b, int64_t h, int64_t T, int64_t H,
                 int64_t K, int64_t V, int64_t Vp, float scale, const work_t *w) {
    int64_t Kp = (K + 15) / 16 * 16;
    float *S = w->S, *Wt = w->Wt, *D = w->D, *KQ = w->KQ, *KhT = w->KhT, *gam = w->gam,
          *eg = w->eg, *A = w->A, *P = w->P, *Ti = w->Ti, *XY = w->XY, *U = w->U;
    memset(S, 0, sizeof(float) * (size_t)(K * Vp));
    for (int64_t t0 = 0; t0 < T; t0 += CH) {
        int64_t L = T - t0 < CH ? T - t0 : CH;
        int64_t L4 = (L + 3) / 4 * 4;
        int64_t row0 = (b * T + t0) * H + h;             /* row of step t0 + i: row0 + i * H */
        /* the next chunk's input rows: an H * K stride defeats the hardware prefetcher */
        for (int64_t i = CH; i < 2 * CH && t0 + i < T; i++) {
            int64_t r = row0 + i * H;
            for (int64_t c = 0; c < K; c += 16) {
                __builtin_prefetch(q + r * K + c);
                __builtin_prefetch(k + r * K + c);
                __builtin_prefetch(g + r * K + c);
            }
            for (int64_t j = 0; j < V; j += 16) __builtin_prefetch(v + r * V + j);
        }
        /* decays, K~ = k exp(G), Q~ = scale q exp(G), gam = exp(G_L) */
        for (int64_t c = 0; c < K; c++) eg[c] = 1.0f;
        for (int64_t i = 0; i < L; i++) {
            const float *qi = q + (row0 + i * H) * K, *ki = k + (row0 + i * H) * K;
            float *di = D + i * Kp, *kr = KQ + i * K, *qr = KQ + (CH + i) * K;
            expv(g + (row0 + i * H) * K, di, K);
            #pragma omp simd
            for (int64_t c = 0; c < K; c++) {
                eg[c] *= di[c];
                kr[c] = ki[c] * eg[c];
                qr[c] = scale * qi[c] * eg[c];
            }
        }
        if (L4 > L) {                                   /* rows the 4-row GEMM reads past L */
            memset(KQ + L * K, 0, sizeof(float) * (size_t)((L4 - L) * K));
            memset(KQ + (CH + L) * K, 0, sizeof(float) * (size_t)((L4 - L) * K));
        }
        memcpy(gam, eg, sizeof(float) * (size_t)K);
        /* K^T: k_j * exp(G_L - G_j), a backward running product */
        for (int64_t c = 0; c < K; c++) eg[c] = 1.0f;
        for (int64_t j = L - 1; j >= 0; j--) {
            const float *kj = k + (row0 + j * H) * K, *dj = D + j * Kp;
            for (int64_t c = 0; c < K; c++) {
                KhT[c * CH + j] = kj[c] * eg[c];
                eg[c] *= dj[c];
            }
        }
        /* pairs: Wt[c][j] = k_j[c] exp(G_i - G_j) for j <= i, updated row by row */
        memset(Wt, 0, sizeof(float) * (size_t)(K * CH));
        for (int64_t i = 0; i < L; i++) {
            const float *qi = q + (row0 + i * H) * K, *ki = k + (row0 + i * H) * K;
            const float *di = D + i * Kp;
            int64_t last = i / VEC;                     /* the vector holding column i */
            float bi = beta[row0 + i * H];
            for (int64_t jv = 0; jv <= last; jv++) {
                vf a0 = VZERO(), a1 = VZERO(), p0 = VZERO(), p1 = VZERO();
                float *wc = Wt + jv * VEC;
                int64_t c = 0;
                for (; c + 2 <= K; c += 2, wc += 2 * CH) {
                    vf w0 = VMUL(VSET1(di[c]), VLOADA(wc));
                    vf w1 = VMUL(VSET1(di[c + 1]), VLOADA(wc + CH));
                    if (jv == last) {
                        w0 = VPUT(w0, VSET1(ki[c]), i % VEC);
                        w1 = VPUT(w1, VSET1(ki[c + 1]), i % VEC);
                    }
                    VSTOREA(wc, w0);
                    VSTOREA(wc + CH, w1);
                    a0 = VFMA(VSET1(ki[c]), w0, a0); p0 = VFMA(VSET1(qi[c]), w0, p0);
                    a1 = VFMA(VSET1(ki[c + 1]), w1, a1); p1 = VFMA(VSET1(qi[c + 1]), w1, p1);
                }
                if (c < K) {
                    vf w0 = VMUL(VSET1(di[c]), VLOADA(wc));
                    if (jv == last) w0 = VPUT(w0, VSET1(ki[c]), i % VEC);
                    VSTOREA(wc, w0);
                    a0 = VFMA(VSET1(ki[c]), w0, a0); p0 = VFMA(VSET1(qi[c]), w0, p0);
                }
                VSTOREA(A + i * CH + jv * VEC, VMUL(VSET1(bi), VADD(a0, a1)));
                VSTOREA(P + i * CH + jv * VEC, VMUL(VSET1(scale), VADD(p0, p1)));
            }
            for (int64_t j = i; j < CH; j++) A[i * CH + j] = 0.0f;     /* strictly lower */
            for (int64_t j = i + 1; j < CH; j++) P[i * CH + j] = 0.0f;
        }
        /* Tinv = (I + A)^-1 (unit lower triangular), row by row: Tinv_i = e_i - A_i Tinv */
        for (int64_t i = 0; i < L4; i++) {
            float *ti = Ti + i * CH;
            for (int64_t j = 0; j < CH; j++) ti[j] = j == i && i < L ? 1.0f : 0.0f;
            for (int64_t m = 0; m < i && i < L; m++) {
                float a = A[i * CH + m];
                const float *tm = Ti + m * CH;
                #pragma omp simd
                for (int64_t j = 0; j <= m; j++) ti[j] -= a * tm[j];
            }
        }
        /* X = K~ S0 (rows 0..), Y = Q~ S0 (rows CH..) */
        gemm_rows(KQ, K, L4, S, K, XY, Vp, 0, 0);
        gemm_rows(KQ + CH * K, K, L4, S, K, XY + CH * Vp, Vp, 0, 0);
        /* R = diag(beta) (V - X), into U; then U = Tinv R, into X's rows */
        for (int64_t i = 0; i < L4; i++) {
            float *ri = U + i * Vp;
            if (i >= L) { memset(ri, 0, sizeof(float) * (size_t)Vp); continue; }
            const float *vi = v + (row0 + i * H) * V, *xi = XY + i * Vp;
            float bi = beta[row0 + i * H];
            for (int64_t j = 0; j < V; j++) ri[j] = bi * (vi[j] - xi[j]);
            for (int64_t j = V; j < Vp; j++) ri[j] = 0.0f;
        }
        gemm_rows(Ti, CH, L4, U, L4, XY, Vp, 0, 1);
        float *Uc = XY;
        /* O = Y + P U */
        gemm_rows(P, CH, L4, Uc, L4, XY + CH * Vp, Vp, 1, 1);
        for (int64_t i = 0; i < L; i++)
            memcpy(o + (row0 + i * H) * V, XY + (CH + i) * Vp, sizeof(float) * (size_t)V);
        /* S = diag(gam) S + K^T U */
        state_update(S, gam, KhT, Uc, L, K, Vp);
    }
}

void kernel(const float *q, const float *k, const float *v, const float *g, const float *beta,
            float *o, int64_t B, int64_t T, int64_t H, int64_t K, int64_t V, float scale) {
    int64_t Vp = (V + VW - 1) / VW * VW;
    if (Vp % 16) Vp = (Vp + 15) / 16 * 16;               /* 64-byte aligned state rows */
    work_t probe;
    size_t words = carve(&probe, 0, K, Vp);
    #pragma omp parallel num_threads(THREADS)
    {
        float *base = aligned_alloc(64, sizeof(float) * words);
        work_t w;
        carve(&w, base, K, Vp);
        #pragma omp for schedule(static)
        for (int64_t bh = 0; bh < B * H; bh++)
            head(q, k, v, g, beta, o, bh / H, bh % H, T, H, K, V, Vp, scale, &w);
        free(base);
    }
}
