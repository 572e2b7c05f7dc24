/* KDA forward on the GPU, state in registers. One block per (b*h, slice of BLOCK_V value
 * columns); each column is owned by RG adjacent lanes that split the K rows of the state
 * (lane rg holds rows rg, rg + RG, ...: MAXK / RG registers). Columns never interact, so a
 * step is two register passes and two butterfly reductions over the RG lanes: no shared
 * memory, no barriers. q, k, g rows are read by every column's lanes (L1 broadcasts).
 *
 * Macros: BLOCK_V (columns per block), RG (lanes per column, power of two <= 32),
 * MAXK (largest K: K <= MAXK). Launch: grid (ceil(V / BLOCK_V), B * H), block
 * (BLOCK_V * RG), no dynamic shared memory.                                            */
#include <stdint.h>

#ifndef BLOCK_V
#define BLOCK_V 32
#endif
#ifndef RG
#define RG 4
#endif
#ifndef MAXK
#define MAXK 128
#endif

#define ROWS ((MAXK + RG - 1) / RG)
#define NTHREADS (BLOCK_V * RG)

extern "C" __global__ __launch_bounds__(NTHREADS) void
kernel(const float *__restrict__ q, const float *__restrict__ k, const float *__restrict__ v,
       const float *__restrict__ g, const float *__restrict__ beta, float *__restrict__ o,
       int64_t B, int64_t T, int64_t H, int64_t K, int64_t V, float scale) {
    const int tid = threadIdx.x;
    const int rg = tid % RG;                       /* row group: the RG lanes of a column are adjacent */
    const int64_t col = (int64_t)blockIdx.x * BLOCK_V + tid / RG;
    const int64_t bh = blockIdx.y;
    const int64_t b = bh / H, h = bh % H;
    const bool active = col < V;

    float s[ROWS];
#pragma unroll
    for (int i = 0; i < ROWS; i++) s[i] = 0.0f;

    for (int64_t t = 0; t < T; t++) {
        const int64_t row = (b * T + t) * H + h;
        const float *kt = k + row * K, *qt = q + row * K, *gt = g + row * K;
        /* pass 1: decay the state, a = (D S)^T k over this lane's rows */
        float a = 0.0f;
#pragma unroll
        for (int i = 0; i < ROWS; i++) {
            const int r = rg + i * RG;
            if (r < K) {
                s[i] *= expf(gt[r]);
                a = fmaf(kt[r], s[i], a);
            }
        }
#pragma unroll
        for (int off = RG / 2; off > 0; off >>= 1) a += __shfl_xor_sync(0xffffffffu, a, off);
        const float vv = active ? v[row * V + col] : 0.0f;
        const float u = beta[row] * (vv - a);
        /* pass 2: rank-1 update, o = S^T q */
        float acc = 0.0f;
#pragma unroll
        for (int i = 0; i < ROWS; i++) {
            const int r = rg + i * RG;
            if (r < K) {
                s[i] = fmaf(kt[r], u, s[i]);
                acc = fmaf(qt[r], s[i], acc);
            }
        }
#pragma unroll
        for (int off = RG / 2; off > 0; off >>= 1) acc += __shfl_xor_sync(0xffffffffu, acc, off);
        if (active && rg == 0) o[row * V + col] = scale * acc;
    }
}
