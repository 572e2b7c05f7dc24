/* LayerNorm, one warp per row: y = (x - mean) / sqrt(var + eps) * gamma + beta (float32,
 * biased variance), corrected two-pass as in cuda_rowwise.cu: a first mean m0, then the
 * sums of d = x - m0 and d^2 give mean = m0 + s1/n and var = s2/n - (s1/n)^2; a constant
 * row gives exactly beta. BLOCK / 32 rows per block, warp shuffles only (no shared memory,
 * no block barrier). Suits rows of up to a few thousand columns.
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

extern "C" __global__ __launch_bounds__(BLOCK) void kernel(const float *x, const float *gamma, const float *beta, float *y, int64_t rows, int64_t cols, float eps) {
    const int lane = threadIdx.x & 31;
    const int64_t r = (int64_t)blockIdx.x * (BLOCK / 32) + (threadIdx.x >> 5);
    if (r >= rows) return;  /* the same for the whole warp: the shuffles below stay converged */
    const float *xr = x + r * cols;
    float *yr = y + r * cols;
    const float n = (float)cols;
    float s = 0.0f;
#if VEC == 4
    const bool v4 = (cols & 3) == 0 &&
        ((((uintptr_t)xr) | ((uintptr_t)yr) | ((uintptr_t)gamma) | ((uintptr_t)beta)) & 15) == 0;
    const int64_t n4 = cols >> 2;
    const float4 *x4 = reinterpret_cast<const float4 *>(xr);
    if (v4) {
        for (int64_t i = lane; i < n4; i += 32) {
            float4 v = __ldg(x4 + i);
            s += (v.x + v.y) + (v.z + v.w);
        }
    } else
#endif
    for (int64_t i = lane; i < cols; i += 32) s += __ldg(xr + i);
    const float m0 = warp_sum(s) / n;

    float s1 = 0.0f, s2 = 0.0f;
#if VEC == 4
    if (v4) {
        for (int64_t i = lane; i < n4; i += 32) {
            float4 v = __ldg(x4 + i);
            float a = v.x - m0, b = v.y - m0, c = v.z - m0, d = v.w - m0;
            s1 += (a + b) + (c + d);
            s2 = fmaf(a, a, s2); s2 = fmaf(b, b, s2); s2 = fmaf(c, c, s2); s2 = fmaf(d, d, s2);
        }
    } else
#endif
    for (int64_t i = lane; i < cols; i += 32) {
        float d = __ldg(xr + i) - m0;
        s1 += d;
        s2 = fmaf(d, d, s2);
    }
    const float corr = warp_sum(s1) / n;
    const float var = fmaxf(warp_sum(s2) / n - corr * corr, 0.0f);
    const float rstd = 1.0f / sqrtf(var + eps);

#if VEC == 4
    if (v4) {
        const float4 *g4 = reinterpret_cast<const float4 *>(gamma);
        const float4 *b4 = reinterpret_cast<const float4 *>(beta);
        float4 *y4 = reinterpret_cast<float4 *>(yr);
        for (int64_t i = lane; i < n4; i += 32) {
            float4 v = __ldg(x4 + i), g = __ldg(g4 + i), b = __ldg(b4 + i);
            y4[i] = make_float4(fmaf(((v.x - m0) - corr) * rstd, g.x, b.x), fmaf(((v.y - m0) - corr) * rstd, g.y, b.y),
                                fmaf(((v.z - m0) - corr) * rstd, g.z, b.z), fmaf(((v.w - m0) - corr) * rstd, g.w, b.w));
        }
        return;
    }
#endif
    for (int64_t i = lane; i < cols; i += 32)
        yr[i] = fmaf(((__ldg(xr + i) - m0) - corr) * rstd, __ldg(gamma + i), __ldg(beta + i));
}
