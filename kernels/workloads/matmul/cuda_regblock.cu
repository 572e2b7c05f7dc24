/* C = A·B, float32 row-major (A m×k, B k×n, C m×n): shared-memory tiles plus register
 * blocking. A block of (BN/TN)×(BM/TM) threads computes a BM×BN tile of C; each thread
 * owns TM×TN accumulators. Per BK-deep step the block stages A (transposed, as[p][i]) and
 * B (bs[p][j]) in shared memory, zero-filled past the edges, and each thread does TM·TN
 * FMAs per k from TM + TN shared loads. A thread's rows are ty + i·(BM/TM) and its columns
 * tx + j·(BN/TN): neighbouring threads read neighbouring shared words (no bank conflicts)
 * and write neighbouring columns of C (coalesced).
 * Launch: grid (ceil(n/BN), ceil(m/BM)), block (BN/TN, BM/TM), no dynamic shared memory.
 * Macros: BM, BN (block tile), BK (k step), TM, TN (per-thread tile), MIN_BLOCKS (blocks
 * per SM promised to ptxas through __launch_bounds__: 1 leaves it all 255 registers, 2
 * halves its register budget for more resident blocks).                                */
#include <stdint.h>

#ifndef BM
#define BM 64
#endif
#ifndef BN
#define BN 64
#endif
#ifndef BK
#define BK 16
#endif
#ifndef TM
#define TM 4
#endif
#ifndef TN
#define TN 4
#endif
#ifndef MIN_BLOCKS
#define MIN_BLOCKS 1
#endif
#define RB_TX (BN / TN)
#define RB_TY (BM / TM)
#define RB_THREADS (RB_TX * RB_TY)

/* Staging: every pass over the block's threads loads one element per thread. Threads and
 * tile sizes are powers of two with RB_THREADS >= 32 >= BK, so each thread keeps one column
 * of the A tile (consecutive threads: consecutive k, coalesced) and one column of the B tile
 * (consecutive threads: consecutive columns). Bases and strides are computed once; the k
 * loop only adds p0, which keeps the unrolled loads cheap in registers.               */
#define A_ROWS (RB_THREADS / BK)                     /* A rows per pass */
#define A_PASSES ((BM + A_ROWS - 1) / A_ROWS)
#if RB_THREADS >= BN
#define B_ROWS (RB_THREADS / BN)                     /* B rows (k) per pass */
#define B_PASSES ((BK + B_ROWS - 1) / B_ROWS)
#else
#define B_SPLIT (BN / RB_THREADS)                    /* passes per B row */
#define B_PASSES (BK * B_SPLIT)
#endif

extern "C" __global__ __launch_bounds__(RB_THREADS, MIN_BLOCKS) void kernel(
        const float *__restrict__ a, const float *__restrict__ b, float *__restrict__ c,
        int64_t m, int64_t n, int64_t k) {
    static_assert(RB_THREADS % BK == 0, "the thread count must be a multiple of BK");
    __shared__ float as[BK][BM];
    __shared__ float bs[BK][BN];
    const unsigned tx = threadIdx.x, ty = threadIdx.y;
    const unsigned tid = ty * RB_TX + tx;
    const int64_t row0 = (int64_t)blockIdx.y * BM, col0 = (int64_t)blockIdx.x * BN;

    const unsigned a_p = tid % BK, a_i = tid / BK;   /* this thread's column and first row of A */
    const int64_t a_rows_left = m - row0 - a_i;      /* pass r is in range if r*A_ROWS < this */
    const float *a_base = a + (row0 + (a_rows_left > 0 ? a_i : 0)) * k + a_p;
    const int64_t a_step = (int64_t)A_ROWS * k;
#if RB_THREADS >= BN
    const unsigned b_j = tid % BN, b_p = tid / BN;
#else
    const unsigned b_j = tid, b_p = 0;
#endif
    const bool b_col_ok = col0 + b_j < n;
    const float *b_base = b + (int64_t)b_p * n + col0 + (b_col_ok ? b_j : 0);

    float acc[TM][TN];
#pragma unroll
    for (int i = 0; i < TM; i++)
#pragma unroll
        for (int j = 0; j < TN; j++) acc[i][j] = 0.0f;

    for (int64_t p0 = 0; p0 < k; p0 += BK) {
        const bool a_k_ok = p0 + a_p < k;
#pragma unroll
        for (int r = 0; r < A_PASSES; r++) {
            const unsigned i = a_i + r * A_ROWS;
            if (A_PASSES * A_ROWS == BM || i < BM) {
                const bool ok = a_k_ok && (int64_t)r * A_ROWS < a_rows_left;
                as[a_p][i] = ok ? a_base[r * a_step + p0] : 0.0f;
            }
        }
#pragma unroll
        for (int r = 0; r < B_PASSES; r++) {
#if RB_THREADS >= BN
            const unsigned p = b_p + r * B_ROWS, j = b_j;
            const bool in_tile = B_PASSES * B_ROWS == BK || p < BK;
#else
            const unsigned p = r / B_SPLIT, j = b_j + (r % B_SPLIT) * RB_THREADS;
            const bool in_tile = true;
#endif
            if (in_tile) {
                const bool ok = p0 + p < k && col0 + j < n;
                bs[p][j] = ok ? b_base[(p0 + p - b_p) * n + (j - b_j)] : 0.0f;
            }
        }
        __syncthreads();
#pragma unroll
        for (int p = 0; p < BK; p++) {
            float af[TM], bf[TN];
#pragma unroll
            for (int i = 0; i < TM; i++) af[i] = as[p][ty + i * RB_TY];
#pragma unroll
            for (int j = 0; j < TN; j++) bf[j] = bs[p][tx + j * RB_TX];
#pragma unroll
            for (int i = 0; i < TM; i++)
#pragma unroll
                for (int j = 0; j < TN; j++) acc[i][j] = fmaf(af[i], bf[j], acc[i][j]);
        }
        __syncthreads();
    }
#pragma unroll
    for (int i = 0; i < TM; i++) {
        const int64_t r = row0 + ty + i * RB_TY;
        if (r >= m) continue;
#pragma unroll
        for (int j = 0; j < TN; j++) {
            const int64_t cc = col0 + tx + j * RB_TX;
            if (cc < n) c[r * n + cc] = acc[i][j];
        }
    }
}
