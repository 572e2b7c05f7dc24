/* KDA forward, fused recurrence: ONE pass over the state per time step.
 *
 * V columns never mix (every column of S evolves on its own given the K-side vectors), so
 * each task owns one block of BW = BV * VEC columns of one (b, h) for the whole sequence;
 * its K x BW state slice stays in L1 and its per-block accumulators in registers.
 *
 * The pass for step t updates row r of the slice and, from the freshly written row, also
 * accumulates o_t (with q_t) and the NEXT step's S^T k (with exp(g_{t+1}) * k_{t+1}):
 *     s      = d_t[r] * S[r] + k_t[r] * u_t           u_t = beta_t (v_t - a_t)
 *     o_t   += scale q_t[r] * s
 *     a_t+1 += exp(g_t+1)[r] k_t+1[r] * s             (= (diag(d_t+1) S_t)^T k_t+1)
 * SCALED=1 stores S = diag(c) S~ instead (c the running product of decays): the row update
 * becomes S~[r] += (k_t[r] / c_t[r]) u_t, three multiply-adds per element instead of four;
 * when some c leaves [2^-60, 2^60] every row is folded back (S~[r] *= c[r], c[r] = 1).
 *
 * Macros: THREADS (OpenMP over b*h*blocks), VEC (1, 8 = AVX2+FMA, 16 = AVX-512F; falls
 * back to 8, then 1, when the host lacks them), BV (vectors per block), SCALED (0/1).
 * Any K and V: the slice is padded to BW columns (padding stays exactly 0).            */
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
#ifndef BV
#define BV 1
#endif
#ifndef SCALED
#define SCALED 0
#endif
#ifndef PF
#define PF 8
#endif
#ifndef VGROUPS
#define VGROUPS 1
#endif

/* vf and its vocabulary (VLOADA/VSTOREA: the slices are aligned to whole vectors); VEC 16
 * falls back to 8 and 8 to 1 where the host lacks them */
#include <int21/vec.h>

#define BW (BV * VEC)
#define FOLD_LO 8.67361738e-19f    /* 2^-60 */
#define FOLD_HI 1.152921505e18f    /* 2^60  */

/* d[r] = exp(x[r]) for r < n (the harness's vector exp; 0 below -87) */
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

/* One step over the K x BW slice (see the header). */
static inline void pass(float *restrict S, const float *restrict u, float *restrict a,
                        float *restrict ob, const float *restrict kc, const float *restrict cq,
                        const float *restrict ck, const float *restrict dd, int64_t K) {
    vf uv[BV], ao[BV], aa[BV];
    #pragma GCC unroll 8
    for (int j = 0; j < BV; j++) {
        uv[j] = VLOADA(u + j * VEC);
        ao[j] = VZERO();
        aa[j] = VZERO();
    }
    for (int64_t r = 0; r < K; r++) {
        vf kr = VSET1(kc[r]), qr = VSET1(cq[r]), cr = VSET1(ck[r]);
#if !SCALED
        vf dr = VSET1(dd[r]);
#else
        (void)dd;
#endif
        float *sr = S + r * BW;
        #pragma GCC unroll 8
        for (int j = 0; j < BV; j++) {
            vf s = VLOADA(sr + j * VEC);
#if SCALED
            s = VFMA(kr, uv[j], s);
#else
            s = VFMA(kr, uv[j], VMUL(dr, s));
#endif
            VSTOREA(sr + j * VEC, s);
            ao[j] = VFMA(qr, s, ao[j]);
            aa[j] = VFMA(cr, s, aa[j]);
        }
    }
    #pragma GCC unroll 8
    for (int j = 0; j < BV; j++) {
        VSTOREA(ob + j * VEC, ao[j]);
        VSTOREA(a + j * VEC, aa[j]);
    }
}

static void task(const float *q, const float *k, const float *v, const float *g,
                 const float *beta, float *o, int64_t b, int64_t h, int64_t v0, int64_t nb,
                 int64_t T, int64_t H, int64_t K, int64_t V, float scale, float *ws) {
    /* columns v0 .. v0 + nb * BW of head (b, h): nb blocks, each a K x BW slice */
    int64_t nv = V - v0 < nb * BW ? V - v0 : nb * BW;
    float *S = ws, *u = S + nb * K * BW, *a = u + nb * BW, *ob = a + nb * BW;
    float *cur = ob + nb * BW, *nxt = cur + K, *kc = nxt + K, *cq = kc + K, *ck = cq + K;
    memset(S, 0, sizeof(float) * (size_t)(nb * K * BW));
    memset(a, 0, sizeof(float) * (size_t)(nb * BW));
    memset(u, 0, sizeof(float) * (size_t)(nb * BW));
    /* cur: SCALED ? c_t (product of decays since the last fold) : d_t = exp(g_t) */
    expv(g + (b * T * H + h) * K, cur, K);
#if SCALED
    for (int64_t r = 0; r < K; r++)
        if (!(cur[r] >= FOLD_LO && cur[r] <= FOLD_HI)) cur[r] = 1.0f;   /* S~ = 0: nothing to fold */
#endif
    for (int64_t t = 0; t < T; t++) {
        int64_t row = (b * T + t) * H + h;
        const float *qt = q + row * K, *kt = k + row * K, *vt = v + row * V + v0;
        float bt = beta[row];
#if PF > 0
        if (t + PF < T) {                /* rows PF steps ahead: an H * K stride defeats */
            int64_t ahead = row + PF * H;  /* the hardware prefetcher                    */
            for (int64_t r = 0; r < K; r += 16) {
                __builtin_prefetch(q + ahead * K + r);
                __builtin_prefetch(k + ahead * K + r);
                __builtin_prefetch(g + ahead * K + r);
            }
            for (int64_t j = 0; j < nv; j += 16) {
                __builtin_prefetch(v + ahead * V + v0 + j);
                __builtin_prefetch(o + ahead * V + v0 + j, 1);
            }
        }
#endif
        #pragma omp simd
        for (int64_t j = 0; j < nv; j++) u[j] = bt * (vt[j] - a[j]);
        int has_next = t + 1 < T;
        const float *kn = k + (row + H) * K;
        if (has_next) expv(g + (row + H) * K, nxt, K);
#if SCALED
        float cmin = 1.0f, cmax = 1.0f;
        #pragma omp simd
        for (int64_t r = 0; r < K; r++) {
            kc[r] = kt[r] / cur[r];
            cq[r] = scale * cur[r] * qt[r];
        }
        if (has_next) {
            #pragma omp simd reduction(min:cmin) reduction(max:cmax)
            for (int64_t r = 0; r < K; r++) {
                float cn = cur[r] * nxt[r];
                nxt[r] = cn;
                ck[r] = cn * kn[r];
                cmin = cn < cmin ? cn : cmin;
                cmax = cn > cmax ? cn : cmax;
            }
        } else {
            memset(ck, 0, sizeof(float) * (size_t)K);
        }
#else
        #pragma omp simd
        for (int64_t r = 0; r < K; r++) {
            kc[r] = kt[r];
            cq[r] = scale * qt[r];
        }
        if (has_next) {
            #pragma omp simd
            for (int64_t r = 0; r < K; r++) ck[r] = nxt[r] * kn[r];
        } else {
            memset(ck, 0, sizeof(float) * (size_t)K);
        }
#endif
        for (int64_t blk = 0; blk < nb; blk++)
            pass(S + blk * K * BW, u + blk * BW, a + blk * BW, ob + blk * BW, kc, cq, ck, cur, K);
        float *ot = o + row * V + v0;
        for (int64_t j = 0; j < nv; j++) ot[j] = ob[j];
#if SCALED
        if (cmin < FOLD_LO || cmax > FOLD_HI) {      /* fold every row: S~ = diag(c) S~, c = 1 */
            for (int64_t r = 0; r < K; r++) {
                float c = nxt[r] < 1e-30f ? 0.0f : nxt[r];   /* no denormals in the state */
                for (int64_t blk = 0; blk < nb; blk++)
                    for (int64_t j = 0; j < BW; j++) S[(blk * K + r) * BW + j] *= c;
                nxt[r] = 1.0f;
            }
        }
#endif
        float *tmp = cur; cur = nxt; nxt = tmp;
    }
}

void kernel(const float *q, const float *k, const float *v, const float *g, const float *beta,
            float *o, int64_t B, int64_t T, int64_t H, int64_t K, int64_t V, float scale) {
    int64_t nvb = (V + BW - 1) / BW;                  /* blocks of BW columns */
    int64_t per = (nvb + VGROUPS - 1) / VGROUPS;      /* blocks per task      */
    int64_t groups = (nvb + per - 1) / per;
    size_t bytes = sizeof(float) * (size_t)(per * K * BW + 3 * per * BW + 5 * K);
    bytes = (bytes + 63) / 64 * 64;
    #pragma omp parallel num_threads(THREADS)
    {
        float *ws = aligned_alloc(64, bytes);
        #pragma omp for schedule(static)
        for (int64_t task_id = 0; task_id < B * H * groups; task_id++) {
            int64_t bh = task_id / groups, grp = task_id % groups;
            int64_t nb = nvb - grp * per < per ? nvb - grp * per : per;
            task(q, k, v, g, beta, o, bh / H, bh % H, grp * per * BW, nb, T, H, K, V, scale, ws);
        }
        free(ws);
    }
}
