/* C = A·B, float32 row-major (A m×k, B k×n, C m×n): Goto/BLIS-style blocked GEMM.
 *
 * Loops, outermost first:  jc (NC columns of B/C)  →  pc (KC-deep slice of k; B[pc:pc+kc,
 * jc:jc+nc] is packed into NR-wide panels, zero-padded at the right edge, shared by all
 * threads)  →  ic (MC rows of A/C; A[ic:ic+mc, pc:pc+kc] is packed into MR-tall panels,
 * zero-padded at the bottom)  →  jr / ir (NR / MR micro-panels)  →  an MR×NR micro-kernel
 * that keeps MR×NV vector accumulators in registers and does one broadcast of A and NV
 * vector loads of B per k step. Partial tiles (m, n not multiples of MR, NR) go through a
 * small stack tile; partial k slices are just a shorter kc. The first k slice overwrites C
 * (C arrives poisoned and is never read before it is written); later slices add to it.
 *
 * Vector width VW: 16 with AVX-512F, else 8 with AVX2/FMA, else 8-wide GCC vectors.
 * Design-space macros (the harness defines them; defaults keep the file self-contained):
 *   MR, NV     micro-tile: MR rows × NR = NV·VW columns (MR·NV accumulators)
 *   MC, KC, NC cache blocks (rows of A per packed block, depth, columns of B per panel set)
 *   THREADS    OpenMP threads;  PAR 0: threads split the rows (MR panels) of C evenly,
 *              each packing its own A blocks;  PAR 1: threads split the NR panels of each
 *              block and share one cooperatively packed A block;  PAR 2: threads take
 *              MC-row blocks from a shared queue (OpenMP dynamic schedule), each packing
 *              its own A: balances the work when a core is also busy with something else
 *   UNROLL     k-loop unroll of the micro-kernel (1, 2, 4, 8; with 12 AVX2 accumulators
 *              GCC 12 spills when unrolled, so 1 is the fast choice there)
 *   PACK_A     1: pack A into MR panels; 0: the micro-kernel broadcasts straight from A
 *              (edge tiles are still packed)
 *   ORDER      0: jr outer, ir inner (a B micro-panel stays in L1, A streams from L2);
 *              1: ir outer, jr inner (an A micro-panel stays in L1, the packed B block
 *              streams from L2/L3: size KC·NC to fit; the faster order on Zen 3)
 *   PREFETCH   0: none; 1: prefetch the C tile before the k loop; 2: also the A stream
 * The result is bit-identical whatever THREADS is: each C element is always summed by one
 * thread in the same order.                                                              */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <omp.h>
#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#endif

#ifndef THREADS
#define THREADS 1
#endif
#ifndef MR
#define MR 6
#endif
#ifndef NV
#define NV 2
#endif
#ifndef MC
#define MC 48
#endif
#ifndef KC
#define KC 384
#endif
#ifndef NC
#define NC 1536
#endif
#ifndef UNROLL
#define UNROLL 1
#endif
#ifndef PACK_A
#define PACK_A 1
#endif
#ifndef PAR
#define PAR 2
#endif
#ifndef ORDER
#define ORDER 1
#endif
#ifndef PREFETCH
#define PREFETCH 0
#endif

#if defined(__AVX512F__)
#define VW 16
typedef __m512 vf;
#define V_ZERO() _mm512_setzero_ps()
#define V_LOAD(p) _mm512_load_ps(p)
#define V_LOADU(p) _mm512_loadu_ps(p)
#define V_STOREU(p, v) _mm512_storeu_ps((p), (v))
#define V_BCAST(p) _mm512_set1_ps(*(p))
#define V_FMA(a, b, c) _mm512_fmadd_ps((a), (b), (c))
#define V_ADD(a, b) _mm512_add_ps((a), (b))
#elif defined(__AVX2__) && defined(__FMA__)
#define VW 8
typedef __m256 vf;
#define V_ZERO() _mm256_setzero_ps()
#define V_LOAD(p) _mm256_load_ps(p)
#define V_LOADU(p) _mm256_loadu_ps(p)
#define V_STOREU(p, v) _mm256_storeu_ps((p), (v))
#define V_BCAST(p) _mm256_broadcast_ss(p)
#define V_FMA(a, b, c) _mm256_fmadd_ps((a), (b), (c))
#define V_ADD(a, b) _mm256_add_ps((a), (b))
#else /* portable: GCC vector extensions */
#define VW 8
typedef float vf __attribute__((vector_size(32)));
static inline vf v_load(const float *p) { vf v; memcpy(&v, p, sizeof v); return v; }
#define V_ZERO() ((vf){0})
#define V_LOAD(p) v_load(p)
#define V_LOADU(p) v_load(p)
#define V_STOREU(p, v) do { vf v_ = (v); memcpy((p), &v_, sizeof v_); } while (0)
#define V_BCAST(p) ((vf){0} + *(p))
#define V_FMA(a, b, c) ((a) * (b) + (c))
#define V_ADD(a, b) ((a) + (b))
#endif

#define NR (NV * VW)
#define ALIGN_UP(x, a) (((x) + (a) - 1) / (a) * (a))

/* One k step: acc[i][v] += A(i, p) * B(p, v*VW : v*VW+VW). A(i, p) is at pa[i*rsa]. */
static inline __attribute__((always_inline))
void step(vf acc[MR][NV], const float *pa, int64_t rsa, const float *pb) {
    vf bv[NV];
    #pragma GCC unroll 8
    for (int v = 0; v < NV; v++) bv[v] = V_LOAD(pb + v * VW);
    #pragma GCC unroll 16
    for (int i = 0; i < MR; i++) {
        vf av = V_BCAST(pa + i * rsa);
        #pragma GCC unroll 8
        for (int v = 0; v < NV; v++) acc[i][v] = V_FMA(av, bv[v], acc[i][v]);
    }
}

/* C[0:mr, 0:nr] (=|+=) A-panel · B-panel over kc. A(i, p) at pa[i*rsa + p*csa]; the packed
 * B panel is kc rows of NR floats. */
static inline __attribute__((always_inline))
void micro(int64_t kc, const float *restrict pa, int64_t rsa, int64_t csa, const float *restrict pb,
           float *restrict c, int64_t ldc, int accumulate, int64_t mr, int64_t nr) {
    vf acc[MR][NV];
    #pragma GCC unroll 16
    for (int i = 0; i < MR; i++)
        #pragma GCC unroll 8
        for (int v = 0; v < NV; v++) acc[i][v] = V_ZERO();
#if PREFETCH >= 1
    for (int64_t i = 0; i < mr; i++) {
        __builtin_prefetch(c + i * ldc, 1, 3);
        __builtin_prefetch(c + i * ldc + nr - 1, 1, 3);
    }
#endif
    int64_t p = 0;
    for (; p + UNROLL <= kc; p += UNROLL) {
#if PREFETCH >= 2
        __builtin_prefetch(pa + (p + 16) * csa, 0, 3);
#endif
        #pragma GCC unroll 8
        for (int u = 0; u < UNROLL; u++) step(acc, pa + (p + u) * csa, rsa, pb + (p + u) * NR);
    }
    for (; p < kc; p++) step(acc, pa + p * csa, rsa, pb + p * NR);

    if (mr == MR && nr == NR) {
        #pragma GCC unroll 16
        for (int i = 0; i < MR; i++)
            #pragma GCC unroll 8
            for (int v = 0; v < NV; v++) {
                float *cp = c + i * ldc + v * VW;
                vf r = accumulate ? V_ADD(acc[i][v], V_LOADU(cp)) : acc[i][v];
                V_STOREU(cp, r);
            }
    } else {
        float tile[MR * NR] __attribute__((aligned(64)));
        #pragma GCC unroll 16
        for (int i = 0; i < MR; i++)
            #pragma GCC unroll 8
            for (int v = 0; v < NV; v++) V_STOREU(tile + i * NR + v * VW, acc[i][v]);
        for (int64_t i = 0; i < mr; i++)
            for (int64_t j = 0; j < nr; j++)
                c[i * ldc + j] = accumulate ? c[i * ldc + j] + tile[i * NR + j] : tile[i * NR + j];
    }
}

/* B[0:kc, 0:nr] (row stride ldb) → kc rows of NR floats, zero beyond nr. */
static void pack_b(const float *restrict b, int64_t ldb, int64_t kc, int64_t nr, float *restrict dst) {
    if (nr == NR) {
        for (int64_t p = 0; p < kc; p++) memcpy(dst + p * NR, b + p * ldb, NR * sizeof(float));
    } else {
        for (int64_t p = 0; p < kc; p++) {
            int64_t j = 0;
            for (; j < nr; j++) dst[p * NR + j] = b[p * ldb + j];
            for (; j < NR; j++) dst[p * NR + j] = 0.0f;
        }
    }
}

/* A[0:mr, 0:kc] (row stride lda) → kc columns of MR floats, zero beyond mr. */
static void pack_a(const float *restrict a, int64_t lda, int64_t kc, int64_t mr, float *restrict dst) {
    if (mr == MR) {
        for (int64_t p = 0; p < kc; p++)
            #pragma GCC unroll 16
            for (int i = 0; i < MR; i++) dst[p * MR + i] = a[i * lda + p];
    } else {
        for (int64_t p = 0; p < kc; p++)
            for (int i = 0; i < MR; i++) dst[p * MR + i] = i < mr ? a[i * lda + p] : 0.0f;
    }
}

/* One micro-tile: rows ir..ir+mr of the mc block, NR panel jp of the packed B block. */
static inline __attribute__((always_inline))
void tile(int64_t ir, int64_t mr, int64_t jp, int64_t nr, int64_t kc, const float *pa_blk,
          const float *a_blk, int64_t lda, const float *pb_blk, float *c_blk, int64_t ldc,
          int accumulate, float *edge) {
    const float *pb = pb_blk + jp * kc * NR;
    float *cp = c_blk + ir * ldc + jp * NR;
#if PACK_A
    (void)a_blk; (void)lda; (void)edge;
    micro(kc, pa_blk + ir * kc, 1, MR, pb, cp, ldc, accumulate, mr, nr);
#else
    (void)pa_blk;
    if (mr == MR) {
        micro(kc, a_blk + ir * lda, lda, 1, pb, cp, ldc, accumulate, mr, nr);
    } else {
        pack_a(a_blk + ir * lda, lda, kc, mr, edge);
        micro(kc, edge, 1, MR, pb, cp, ldc, accumulate, mr, nr);
    }
#endif
}

/* All micro-tiles of an mc × (NR panels jp_lo..jp_hi) block. */
static void macro(int64_t mc, int64_t nc, int64_t kc, int64_t jp_lo, int64_t jp_hi, const float *pa_blk,
                  const float *a_blk, int64_t lda, const float *pb_blk, float *c_blk, int64_t ldc,
                  int accumulate, float *edge) {
#if ORDER == 0
    for (int64_t jp = jp_lo; jp < jp_hi; jp++) {
        int64_t nr = nc - jp * NR < NR ? nc - jp * NR : NR;
        for (int64_t ir = 0; ir < mc; ir += MR) {
            int64_t mr = mc - ir < MR ? mc - ir : MR;
            tile(ir, mr, jp, nr, kc, pa_blk, a_blk, lda, pb_blk, c_blk, ldc, accumulate, edge);
        }
    }
#else
    for (int64_t ir = 0; ir < mc; ir += MR) {
        int64_t mr = mc - ir < MR ? mc - ir : MR;
        for (int64_t jp = jp_lo; jp < jp_hi; jp++) {
            int64_t nr = nc - jp * NR < NR ? nc - jp * NR : NR;
            tile(ir, mr, jp, nr, kc, pa_blk, a_blk, lda, pb_blk, c_blk, ldc, accumulate, edge);
        }
    }
#endif
}

/* Used only if the scratch allocation fails: slow but correct. */
static void fallback(const float *a, const float *b, float *c, int64_t m, int64_t n, int64_t k) {
    for (int64_t i = 0; i < m; i++) {
        for (int64_t j = 0; j < n; j++) c[i * n + j] = 0.0f;
        for (int64_t p = 0; p < k; p++)
            for (int64_t j = 0; j < n; j++) c[i * n + j] += a[i * k + p] * b[p * n + j];
    }
}

void kernel(const float *a, const float *b, float *c, int64_t m, int64_t n, int64_t k) {
    if (m <= 0 || n <= 0) return;
    if (k <= 0) { for (int64_t i = 0; i < m * n; i++) c[i] = 0.0f; return; }
    const int64_t kc_max = k < KC ? k : KC;
    const int64_t nc_max = ALIGN_UP(n < NC ? n : NC, NR);
    const int64_t mc_max = ALIGN_UP(m < MC ? m : MC, MR);
    /* PAR 0 and 2 double-buffer the packed B block: block i+1 is packed into the other
     * buffer while slow threads may still read block i, so one barrier per block (after
     * packing) orders everything; PAR 1 also shares A and needs its barriers anyway.   */
    const int64_t b_blocks = PAR == 1 ? 1 : 2;
    const int64_t a_blocks = PAR == 1 ? 1 : THREADS;
    const size_t b_bytes = ALIGN_UP((size_t)kc_max * nc_max * sizeof(float), 64);
    const size_t a_bytes = ALIGN_UP((size_t)mc_max * kc_max * sizeof(float), 64);
    const size_t e_bytes = ALIGN_UP((size_t)MR * kc_max * sizeof(float), 64);
    const size_t a_off = b_blocks * b_bytes, e_off = a_off + a_blocks * a_bytes;
    char *scratch = aligned_alloc(64, e_off + THREADS * e_bytes);
    if (!scratch) { fallback(a, b, c, m, n, k); return; }

    #pragma omp parallel num_threads(THREADS)
    {
        const int t = omp_get_thread_num(), nt = omp_get_num_threads();
        float *edge = (float *)(scratch + e_off + t * e_bytes);
        float *pa_blk = (float *)(scratch + a_off + (PAR == 1 ? 0 : t * a_bytes));
#if PAR == 0
        const int64_t panels = (m + MR - 1) / MR;              /* MR panels of C, split evenly */
        const int64_t r0 = panels * t / nt * MR;
        const int64_t r1 = panels * (t + 1) / nt * MR < m ? panels * (t + 1) / nt * MR : m;
#endif
        (void)pa_blk; (void)edge; (void)nt;
        int64_t block = 0;
        for (int64_t jc = 0; jc < n; jc += NC) {
            const int64_t nc = n - jc < NC ? n - jc : NC;
            const int64_t npanels = (nc + NR - 1) / NR;
            for (int64_t pc = 0; pc < k; pc += KC, block++) {
                const int64_t kc = k - pc < KC ? k - pc : KC;
                const int accumulate = pc > 0;
                float *pb_blk = (float *)(scratch + (block % b_blocks) * b_bytes);
#if PAR == 2
                #pragma omp for schedule(dynamic, 4)
#else
                #pragma omp for schedule(static)
#endif
                for (int64_t jp = 0; jp < npanels; jp++) {
                    const int64_t nr = nc - jp * NR < NR ? nc - jp * NR : NR;
                    pack_b(b + pc * n + jc + jp * NR, n, kc, nr, pb_blk + jp * kc * NR);
                }   /* implicit barrier: this B block is complete, and every thread is done
                       with the previous block (so C rows are never updated by two threads) */
#if PAR == 0
                for (int64_t ic = r0; ic < r1; ic += MC) {
                    const int64_t mc = r1 - ic < MC ? r1 - ic : MC;
                    const float *a_blk = a + ic * k + pc;
#if PACK_A
                    for (int64_t ir = 0; ir < mc; ir += MR)
                        pack_a(a_blk + ir * k, k, kc, mc - ir < MR ? mc - ir : MR, pa_blk + ir * kc);
#endif
                    macro(mc, nc, kc, 0, npanels, pa_blk, a_blk, k, pb_blk, c + ic * n + jc, n, accumulate, edge);
                }
#elif PAR == 2
                #pragma omp for schedule(dynamic, 1) nowait
                for (int64_t ic = 0; ic < m; ic += MC) {
                    const int64_t mc = m - ic < MC ? m - ic : MC;
                    const float *a_blk = a + ic * k + pc;
#if PACK_A
                    for (int64_t ir = 0; ir < mc; ir += MR)
                        pack_a(a_blk + ir * k, k, kc, mc - ir < MR ? mc - ir : MR, pa_blk + ir * kc);
#endif
                    macro(mc, nc, kc, 0, npanels, pa_blk, a_blk, k, pb_blk, c + ic * n + jc, n, accumulate, edge);
                }
#else
                const int64_t jp0 = npanels * t / nt, jp1 = npanels * (t + 1) / nt;
                for (int64_t ic = 0; ic < m; ic += MC) {
                    const int64_t mc = m - ic < MC ? m - ic : MC;
                    const float *a_blk = a + ic * k + pc;
#if PACK_A
                    const int64_t apanels = (mc + MR - 1) / MR;
                    #pragma omp for schedule(static)
                    for (int64_t q = 0; q < apanels; q++)
                        pack_a(a_blk + q * MR * k, k, kc, mc - q * MR < MR ? mc - q * MR : MR, pa_blk + q * MR * kc);
#endif
                    macro(mc, nc, kc, jp0, jp1, pa_blk, a_blk, k, pb_blk, c + ic * n + jc, n, accumulate, edge);
                    #pragma omp barrier   /* the shared A block is repacked next */
                }
                #pragma omp barrier       /* the shared B block is repacked next */
#endif
            }
        }
    }
    free(scratch);
}
