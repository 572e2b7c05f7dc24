/* RMSNorm, one thread block per row: y = x / sqrt(mean(x^2) + eps) * w (float32).
 * Each thread strides over the row accumulating x^2, the block reduces through warp
 * shuffles and a 32-float shared array, then every thread writes its strided elements
 * (the second read of the row is served by L2).
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

/* Sum over the block, returned to every thread. */
__device__ __forceinline__ float block_sum(float v, float *sh) {
    v = warp_sum(v);
    if ((threadIdx.x & 31) == 0) sh[threadIdx.x >> 5] = v;
    __syncthreads();
    v = (threadIdx.x & 31) < NWARPS ? sh[threadIdx.x & 31] : 0.0f;
    return warp_sum(v);
}

extern "C" __global__ __launch_bounds__(BLOCK) void kernel(const float *x, const float *w, float *y, int64_t rows, int64_t cols, float eps) {
    __shared__ float sh[32];
    const int64_t r = blockIdx.x;
    if (r >= rows) return;
    const float *xr = x + r * cols;
    float *yr = y + r * cols;
    float s = 0.0f;
#if VEC == 4
    const bool v4 = (cols & 3) == 0 && ((((uintptr_t)xr) | ((uintptr_t)yr) | ((uintptr_t)w)) & 15) == 0;
    const int64_t n4 = cols >> 2;
    if (v4) {
        const float4 *x4 = reinterpret_cast<const float4 *>(xr);
        for (int64_t i = threadIdx.x; i < n4; i += BLOCK) {
            float4 v = __ldg(x4 + i);
            s = fmaf(v.x, v.x, s); s = fmaf(v.y, v.y, s); s = fmaf(v.z, v.z, s); s = fmaf(v.w, v.w, s);
        }
    } else
#endif
    for (int64_t i = threadIdx.x; i < cols; i += BLOCK) {
        float v = __ldg(xr + i);
        s = fmaf(v, v, s);
    }
    s = block_sum(s, sh);
    const float inv = 1.0f / sqrtf(s / (float)cols + eps);
#if VEC == 4
    if (v4) {
        const float4 *x4 = reinterpret_cast<const float4 *>(xr);
        const float4 *w4 = reinterpret_cast<const float4 *>(w);
        float4 *y4 = reinterpret_cast<float4 *>(yr);
        for (int64_t i = threadIdx.x; i < n4; i += BLOCK) {
            float4 v = __ldg(x4 + i), g = __ldg(w4 + i);
            y4[i] = make_float4(v.x * inv * g.x, v.y * inv * g.y, v.z * inv * g.z, v.w * inv * g.w);
        }
        return;
    }
#endif
    for (int64_t i = threadIdx.x; i < cols; i += BLOCK) yr[i] = __ldg(xr + i) * inv * __ldg(w + i);
}
