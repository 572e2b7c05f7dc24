/* Softmax over each row, one warp per row (BLOCK / 32 rows per block): an online pass keeps
 * a running max and a rescaled sum per lane (the row is read once for both), the lanes are
 * combined with shuffles, and a second pass writes exp(x - max) / sum. No shared memory,
 * no __syncthreads: good for short and medium rows, where a whole block per row idles.
 *
 * Macros: BLOCK (threads per block, a multiple of 32), VEC (1 or 4: float4 on the 16-byte
 * aligned middle of each row, scalar head and tail, so any cols works).
 * Launch: grid (ceil(rows / (BLOCK / 32))), block (BLOCK).
 * -inf entries give 0; a lane that has seen only -inf keeps (max -inf, sum 0).          */
#include <stdint.h>

#ifndef BLOCK
#define BLOCK 256
#endif
#ifndef VEC
#define VEC 4
#endif

/* -inf without math.h (NVRTC has no system headers) */
#define NEG_INF __int_as_float(0xff800000)

/* Fold x into (m, s) where s = sum exp(seen - m). */
__device__ __forceinline__ void online(float &m, float &s, float x) {
    if (x > m) {
        s = s * expf(m - x) + 1.0f;   /* m = -inf: s is 0, expf(-inf) is 0 */
        m = x;
    } else if (m != NEG_INF) {
        s += expf(x - m);
    }
}

__device__ __forceinline__ void combine(float &m, float &s, float m2, float s2) {
    const float nm = fmaxf(m, m2);
    if (nm == NEG_INF) return;      /* both empty */
    s = (m == nm ? s : s * expf(m - nm)) + (m2 == nm ? s2 : s2 * expf(m2 - nm));
    m = nm;
}

extern "C" __global__ __launch_bounds__(BLOCK) void kernel(const float *x, float *y, int64_t rows, int64_t cols) {
    const int lane = threadIdx.x & 31;
    const int64_t r = (int64_t)blockIdx.x * (BLOCK / 32) + (threadIdx.x >> 5);
    if (r >= rows) return;            /* whole warps leave together: shuffles stay full */
    const float *__restrict__ xr = x + r * cols;
    float *__restrict__ yr = y + r * cols;

#if VEC == 4
    const bool vec_ok = (((uintptr_t)xr ^ (uintptr_t)yr) & 15) == 0;
    int64_t head = vec_ok ? (int64_t)((16 - ((uintptr_t)xr & 15)) & 15) / 4 : cols;
    if (head > cols) head = cols;
    const int64_t nvec = (cols - head) / 4;
    const int64_t tail = head + nvec * 4;
    const float4 *xv = reinterpret_cast<const float4 *>(xr + head);
    float4 *yv = reinterpret_cast<float4 *>(yr + head);
#else
    const int64_t head = cols, tail = cols;      /* no vector middle */
#endif

    float m = NEG_INF, s = 0.0f;
    for (int64_t c = lane; c < head; c += 32) online(m, s, xr[c]);
#if VEC == 4
    for (int64_t i = lane; i < nvec; i += 32) {
        const float4 v = __ldg(xv + i);
        online(m, s, v.x);
        online(m, s, v.y);
        online(m, s, v.z);
        online(m, s, v.w);
    }
#endif
    for (int64_t c = tail + lane; c < cols; c += 32) online(m, s, xr[c]);
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) {
        const float m2 = __shfl_xor_sync(0xffffffffu, m, o);
        const float s2 = __shfl_xor_sync(0xffffffffu, s, o);
        combine(m, s, m2, s2);
    }

    const float inv = 1.0f / s;
    for (int64_t c = lane; c < head; c += 32) yr[c] = expf(xr[c] - m) * inv;
#if VEC == 4
    for (int64_t i = lane; i < nvec; i += 32) {
        float4 v = __ldg(xv + i);
        v.x = expf(v.x - m) * inv;
        v.y = expf(v.y - m) * inv;
        v.z = expf(v.z - m) * inv;
        v.w = expf(v.w - m) * inv;
        yv[i] = v;
    }
#endif
    for (int64_t c = tail + lane; c < cols; c += 32) yr[c] = expf(xr[c] - m) * inv;
}
