/* Softmax over each row, one thread block per row: a block reduction for the row max,
 * another for the sum of exp(x - max), then y = exp(x - max) / sum. The row is read three
 * times (the later reads mostly hit L2) and written once.
 *
 * Macros: BLOCK (threads per block, a multiple of 32, <= 1024), VEC (1: scalar loads,
 * 4: float4 loads/stores on the 16-byte aligned middle of each row, scalars for the
 * unaligned head and the tail, so any cols works). Launch: grid (rows), block (BLOCK).
 * -inf entries (masks) give exp(-inf - max) = 0; every row has a finite entry.          */
#include <stdint.h>

#ifndef BLOCK
#define BLOCK 256
#endif
#ifndef VEC
#define VEC 4
#endif

/* -inf without math.h (NVRTC has no system headers) */
#define NEG_INF __int_as_float(0xff800000)

#define WARPS (BLOCK / 32)

__device__ __forceinline__ float warp_max(float v) {
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
    return v;
}

__device__ __forceinline__ float warp_sum(float v) {
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
    return v;
}

/* Every thread gets the block-wide result; fixed order, so the result is deterministic. */
template <bool IS_MAX>
__device__ __forceinline__ float block_reduce(float v, float *scratch) {
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    v = IS_MAX ? warp_max(v) : warp_sum(v);
    if (lane == 0) scratch[warp] = v;
    __syncthreads();
    float r = lane < WARPS ? scratch[lane] : (IS_MAX ? NEG_INF : 0.0f);
    r = IS_MAX ? warp_max(r) : warp_sum(r);
    __syncthreads();  /* scratch is reused by the next reduction */
    return r;
}

/* Elements before the first 16-byte boundary of p (at most n). */
__device__ __forceinline__ int64_t head_of(const float *p, int64_t n) {
    int64_t h = (int64_t)((16 - ((uintptr_t)p & 15)) & 15) / 4;
    return h < n ? h : n;
}

extern "C" __global__ __launch_bounds__(BLOCK) void kernel(const float *x, float *y, int64_t rows, int64_t cols) {
    __shared__ float scratch[32];
    const int64_t r = blockIdx.x;
    if (r >= rows) return;
    const float *__restrict__ xr = x + r * cols;
    float *__restrict__ yr = y + r * cols;
    const int t = threadIdx.x;

#if VEC == 4
    /* Vector middle only when x and y rows share their misalignment (they do when both
     * buffers are 16-byte aligned); otherwise everything goes through the scalar loops. */
    const bool vec_ok = (((uintptr_t)xr ^ (uintptr_t)yr) & 15) == 0;
    const int64_t head = vec_ok ? head_of(xr, cols) : cols;
    const int64_t nvec = (cols - head) / 4;
    const int64_t tail = head + nvec * 4;
    const float4 *xv = reinterpret_cast<const float4 *>(xr + head);
    float4 *yv = reinterpret_cast<float4 *>(yr + head);
#else
    const int64_t head = cols, tail = cols;      /* no vector middle */
#endif

    float m = NEG_INF;
    for (int64_t c = t; c < head; c += BLOCK) m = fmaxf(m, xr[c]);
#if VEC == 4
    for (int64_t i = t; i < nvec; i += BLOCK) {
        float4 v = __ldg(xv + i);
        m = fmaxf(m, fmaxf(fmaxf(v.x, v.y), fmaxf(v.z, v.w)));
    }
#endif
    for (int64_t c = tail + t; c < cols; c += BLOCK) m = fmaxf(m, xr[c]);
    m = block_reduce<true>(m, scratch);

    float s = 0.0f;
    for (int64_t c = t; c < head; c += BLOCK) s += expf(xr[c] - m);
#if VEC == 4
    for (int64_t i = t; i < nvec; i += BLOCK) {
        float4 v = __ldg(xv + i);
        s += (expf(v.x - m) + expf(v.y - m)) + (expf(v.z - m) + expf(v.w - m));
    }
#endif
    for (int64_t c = tail + t; c < cols; c += BLOCK) s += expf(xr[c] - m);
    s = block_reduce<false>(s, scratch);

    const float inv = 1.0f / s;
    for (int64_t c = t; c < head; c += BLOCK) yr[c] = expf(xr[c] - m) * inv;
#if VEC == 4
    for (int64_t i = t; i < nvec; i += BLOCK) {
        float4 v = __ldg(xv + i);
        v.x = expf(v.x - m) * inv;
        v.y = expf(v.y - m) * inv;
        v.z = expf(v.z - m) * inv;
        v.w = expf(v.w - m) * inv;
        yv[i] = v;
    }
#endif
    for (int64_t c = tail + t; c < cols; c += BLOCK) yr[c] = expf(xr[c] - m) * inv;
}
