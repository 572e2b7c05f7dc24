/* KDA forward on the GPU, state in shared memory (any K). One block per (b*h, slice of
 * BLOCK_V value columns). Thread (column j, row group rg) owns rows rg, rg + RG, ... of
 * column j of the K x BLOCK_V state slice. Per step: the block stages k, scale*q and
 * exp(g) in shared memory, each thread decays its rows and sums k.S, the RG partial sums
 * meet in shared memory, then each thread applies the rank-1 update and sums q.S.
 * Three barriers per step (two reduction buffers, so no write-after-read hazards).
 *
 * Macros: BLOCK_V (columns per block), RG (row groups). Launch: grid (ceil(V / BLOCK_V),
 * B * H), block (BLOCK_V * RG), dynamic shared memory 4 * (K * BLOCK_V + 3 K + 2 RG BLOCK_V).
 */
#include <stdint.h>

#ifndef BLOCK_V
#define BLOCK_V 32
#endif
#ifndef RG
#define RG 4
#endif

#define NTHREADS (BLOCK_V * RG)

extern "C" __global__ __launch_bounds__(NTHREADS) void
kernel(const float *__restrict__ q, const float *__restrict__ k, const float *__restrict__ v,
       const float *__restrict__ g, const float *__restrict__ beta, float *__restrict__ o,
       int64_t B, int64_t T, int64_t H, int64_t K, int64_t V, float scale) {
    extern __shared__ float smem[];
    float *S = smem;                         /* K x BLOCK_V */
    float *sk = S + K * BLOCK_V;             /* K */
    float *sq = sk + K;                      /* K, times scale */
    float *sd = sq + K;                      /* K, exp(g) */
    float *red_a = sd + K;                   /* RG x BLOCK_V */
    float *red_o = red_a + RG * BLOCK_V;     /* RG x BLOCK_V */

    const int tid = threadIdx.x;
    const int j = tid % BLOCK_V;
    const int rg = tid / BLOCK_V;
    const int64_t col = (int64_t)blockIdx.x * BLOCK_V + j;
    const int64_t bh = blockIdx.y;
    const int64_t b = bh / H, h = bh % H;
    const bool active = col < V;

    for (int64_t r = rg; r < K; r += RG) S[r * BLOCK_V + j] = 0.0f;

    for (int64_t t = 0; t < T; t++) {
        const int64_t row = (b * T + t) * H + h;
        for (int64_t r = tid; r < K; r += NTHREADS) {
            sk[r] = k[row * K + r];
            sq[r] = scale * q[row * K + r];
            sd[r] = expf(g[row * K + r]);
        }
        __syncthreads();
        float a = 0.0f;
        for (int64_t r = rg; r < K; r += RG) {
            const float x = S[r * BLOCK_V + j] * sd[r];
            S[r * BLOCK_V + j] = x;
            a = fmaf(sk[r], x, a);
        }
        red_a[rg * BLOCK_V + j] = a;
        __syncthreads();
        a = 0.0f;
#pragma unroll
        for (int i = 0; i < RG; i++) a += red_a[i * BLOCK_V + j];
        const float vv = active ? v[row * V + col] : 0.0f;
        const float u = beta[row] * (vv - a);
        float acc = 0.0f;
        for (int64_t r = rg; r < K; r += RG) {
            const float x = fmaf(sk[r], u, S[r * BLOCK_V + j]);
            S[r * BLOCK_V + j] = x;
            acc = fmaf(sq[r], x, acc);
        }
        red_o[rg * BLOCK_V + j] = acc;
        __syncthreads();
        if (rg == 0 && active) {
            float sum = 0.0f;
#pragma unroll
            for (int i = 0; i < RG; i++) sum += red_o[i * BLOCK_V + j];
            o[row * V + col] = sum;
        }
    }
}
