/* C = A·B, float32 row-major (A m×k, B k×n, C m×n): the classic shared-memory tiled seed.
 * A TILE×TILE block of threads computes a TILE×TILE tile of C, one element per thread,
 * walking k in TILE-deep steps: each step stages a tile of A and of B in shared memory
 * (zero-filled past the matrix edges), then every thread does TILE FMAs from it.
 * Launch: grid (ceil(n/TILE), ceil(m/TILE)), block (TILE, TILE), no dynamic shared memory.
 * Macros: TILE (16 or 32).                                                               */
#include <stdint.h>

#ifndef TILE
#define TILE 16
#endif
#define TILE_THREADS (TILE * TILE)

extern "C" __global__ __launch_bounds__(TILE_THREADS) void kernel(
        const float *__restrict__ a, const float *__restrict__ b, float *__restrict__ c,
        int64_t m, int64_t n, int64_t k) {
    __shared__ float as[TILE][TILE];
    __shared__ float bs[TILE][TILE];
    const int tx = threadIdx.x, ty = threadIdx.y;
    const int64_t row = (int64_t)blockIdx.y * TILE + ty;
    const int64_t col = (int64_t)blockIdx.x * TILE + tx;
    float acc = 0.0f;
    for (int64_t p0 = 0; p0 < k; p0 += TILE) {
        as[ty][tx] = (row < m && p0 + tx < k) ? a[row * k + p0 + tx] : 0.0f;
        bs[ty][tx] = (p0 + ty < k && col < n) ? b[(p0 + ty) * n + col] : 0.0f;
        __syncthreads();
#pragma unroll
        for (int p = 0; p < TILE; p++) acc = fmaf(as[ty][p], bs[p][tx], acc);
        __syncthreads();
    }
    if (row < m && col < n) c[row * n + col] = acc;
}
