/* LayerNorm, one thread block per row: y = (x - mean) / sqrt(var + eps) * gamma + beta
 * (float32, biased variance). Corrected two-pass, as in cpu_two_pass.c: a first mean m0,
 * then the sums of d = x - m0 and d^2 give mean = m0 + s1/n and var = s2/n - (s1/n)^2
 * without cancellation when |mean| >> std; a constant row gives exactly beta. The row's
 * second and third reads are served by L2. Reductions: warp shuffles + shared arrays.
 * Design-space macros:
 *   BLOCK  threads per block (launch: grid = rows, block = BLOCK, no dynamic shared memory)
 *   VEC    4: float4 loads/stores when cols % 4 == 0 and the pointers are 16-byte aligned,
 *          otherwise (and for VEC 1) scalar loads                                         */
#include <stdint.h>

#ifndef BLOCK
#define BLOCK 256
#endif
#ifndef VEC
#define VEC 1
#endif

#define NWARPS (BLOCK / 32)

__device__ __forceinline__ float warp_sum(float v) {
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
    return v;
}

/* Sums over the block, returned to every thread; sh holds 64 floats. The leading barrier
 * lets one sh serve consecutive reductions (the previous one may still be reading it). */
__device__ __forceinline__ void block_sum2(float &a, float &b, float *sh) {
    a = warp_sum(a);
    b = warp_sum(b);
    const int lane = threadIdx.x & 31;
    __syncthreads();
    if (lane == 0) { sh[threadIdx.x >> 5] = a; sh[32 + (threadIdx.x >> 5)] = b; }
    __syncthreads();
    a = warp_sum(lane < NWARPS ? sh[lane] : 0.0f);
    b = warp_sum(lane < NWARPS ? sh[32 + lane] : 0.0f);
}

extern "C" __global__ __launch_bounds__(BLOCK) void kernel(const float *x, const float *gamma, const float *beta, float *y, int64_t rows, int64_t cols, float eps) {
    __shared__ float sh[64];
    const int64_t r = blockIdx.x;
    if (r >= rows) return;
    const float *xr = x + r * cols;
    float *yr = y + r * cols;
    const float n = (float)cols;
    float s = 0.0f, none = 0.0f;
#if VEC == 4
    const bool v4 = (cols & 3) == 0 &&
        ((((uintptr_t)xr) | ((uintptr_t)yr) | ((uintptr_t)gamma) | ((uintptr_t)beta)) & 15) == 0;
    const int64_t n4 = cols >> 2;
    const float4 *x4 = reinterpret_cast<const float4 *>(xr);
    if (v4) {
        for (int64_t i = threadIdx.x; i < n4; i += BLOCK) {
            float4 v = __ldg(x4 + i);
            s += (v.x + v.y) + (v.z + v.w);
        }
    } else
#endif
    for (int64_t i = threadIdx.x; i < cols; i += BLOCK) s += __ldg(xr + i);
    block_sum2(s, none, sh);  /* one value: the second sum costs two shuffles per warp */
    const float m0 = s / n;

    float s1 = 0.0f, s2 = 0.0f;
#if VEC == 4
    if (v4) {
        for (int64_t i = threadIdx.x; i < n4; i += BLOCK) {
            float4 v = __ldg(x4 + i);
            float a = v.x - m0, b = v.y - m0, c = v.z - m0, d = v.w - m0;
            s1 += (a + b) + (c + d);
            s2 = fmaf(a, a, s2); s2 = fmaf(b, b, s2); s2 = fmaf(c, c, s2); s2 = fmaf(d, d, s2);
        }
    } else
#endif
    for (int64_t i = threadIdx.x; i < cols; i += BLOCK) {
        float d = __ldg(xr + i) - m0;
        s1 += d;
        s2 = fmaf(d, d, s2);
    }
    block_sum2(s1, s2, sh);
    const float corr = s1 / n;
    const float var = fmaxf(s2 / n - corr * corr, 0.0f);
    const float rstd = 1.0f / sqrtf(var + eps);

#if VEC == 4
    if (v4) {
        const float4 *g4 = reinterpret_cast<const float4 *>(gamma);
        const float4 *b4 = reinterpret_cast<const float4 *>(beta);
        float4 *y4 = reinterpret_cast<float4 *>(yr);
        for (int64_t i = threadIdx.x; i < n4; i += BLOCK) {
            float4 v = __ldg(x4 + i), g = __ldg(g4 + i), b = __ldg(b4 + i);
            y4[i] = make_float4(fmaf(((v.x - m0) - corr) * rstd, g.x, b.x), fmaf(((v.y - m0) - corr) * rstd, g.y, b.y),
                                fmaf(((v.z - m0) - corr) * rstd, g.z, b.z), fmaf(((v.w - m0) - corr) * rstd, g.w, b.w));
        }
        return;
    }
#endif
    for (int64_t i = threadIdx.x; i < cols; i += BLOCK)
        yr[i] = fmaf(((__ldg(xr + i) - m0) - corr) * rstd, __ldg(gamma + i), __ldg(beta + i));
}
