/* RMSNorm, one warp per row: y = x / sqrt(mean(x^2) + eps) * w (float32). BLOCK / 32 rows
 * per block; each lane strides over its row, the warp reduces through shuffles (no shared
 * memory, no block barrier), then every lane writes its strided elements. Suits rows of up
 * to a few thousand columns; long rows want the rowwise variant.
 * Design-space macros:
 *   BLOCK  threads per block (launch: grid = ceil(rows / (BLOCK / 32)), block = BLOCK)
 *   VEC    4: float4 loads/stores when cols % 4 == 0 and the pointers are 16-byte aligned,
 *          otherwise (and for VEC 1) scalar loads                                         */
#include <stdint.h>

#ifndef BLOCK
#define BLOCK 256
#endif
#ifndef VEC
#define VEC 1
#endif

__device__ __forceinline__ float warp_sum(float v) {
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
    return v;
}

extern "C" __global__ __launch_bounds__(BLOCK) void kernel(const float *x, const float *w, float *y, int64_t rows, int64_t cols, float eps) {
    const int lane = threadIdx.x & 31;
    const int64_t r = (int64_t)blockIdx.x * (BLOCK / 32) + (threadIdx.x >> 5);
    if (r >= rows) return;  /* the same for the whole warp: the shuffles below stay converged */
    const float *xr = x + r * cols;
    float *yr = y + r * cols;
    float s = 0.0f;
#if VEC == 4
    const bool v4 = (cols & 3) == 0 && ((((uintptr_t)xr) | ((uintptr_t)yr) | ((uintptr_t)w)) & 15) == 0;
    const int64_t n4 = cols >> 2;
    if (v4) {
        const float4 *x4 = reinterpret_cast<const float4 *>(xr);
        for (int64_t i = lane; i < n4; i += 32) {
            float4 v = __ldg(x4 + i);
            s = fmaf(v.x, v.x, s); s = fmaf(v.y, v.y, s); s = fmaf(v.z, v.z, s); s = fmaf(v.w, v.w, s);
        }
    } else
#endif
    for (int64_t i = lane; i < cols; i += 32) {
        float v = __ldg(xr + i);
        s = fmaf(v, v, s);
    }
    s = warp_sum(s);
    const float inv = 1.0f / sqrtf(s / (float)cols + eps);
#if VEC == 4
    if (v4) {
        const float4 *x4 = reinterpret_cast<const float4 *>(xr);
        const float4 *w4 = reinterpret_cast<const float4 *>(w);
        float4 *y4 = reinterpret_cast<float4 *>(yr);
        for (int64_t i = lane; i < n4; i += 32) {
            float4 v = __ldg(x4 + i), g = __ldg(w4 + i);
            y4[i] = make_float4(v.x * inv * g.x, v.y * inv * g.y, v.z * inv * g.z, v.w * inv * g.w);
        }
        return;
    }
#endif
    for (int64_t i = lane; i < cols; i += 32) yr[i] = __ldg(xr + i) * inv * __ldg(w + i);
}
