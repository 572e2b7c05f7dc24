/* int21/vec.h — the vector vocabulary of CPU kernels (include <int21/vec.h>): one float
 * vector `vf` of VEC lanes and its loads, stores, arithmetic and tail masks, so a kernel body
 * is written once for AVX-512 (VEC 16), AVX2+FMA (VEC 8) and scalar code (VEC 1). Every name
 * is a macro or an inline function over the same intrinsics a kernel would write by hand.
 *
 * Define VEC (1, 8 or 16; default 1) and, for a kernel that streams its output, NT (0/1)
 * before including it. VEC 16 becomes 8 where the compiler does not target AVX-512F, and 8
 * becomes 1 without AVX2 and FMA; NT becomes 0 at VEC 1 (streaming stores are vector stores).
 *
 *   vf                               the vector (a float at VEC 1)
 *   VLOAD(p), VSTORE(p, v)           unaligned load and store
 *   VLOADA(p), VSTOREA(p, v)         aligned to VEC floats (faults otherwise)
 *   VSTREAM(p, v)                    non-temporal store, aligned (VEC 8 and 16)
 *   VOUT(p, v)                       VSTREAM when NT, else VSTORE
 *   VSET1(s), VZERO()                broadcast, zero
 *   VADD VSUB VMUL VMAX (a, b)
 *   VFMA(a, b, c)  = a*b + c         VFNMA(a, b, c) = c - a*b        VFMSUB(a, b, c) = a*b - c
 *   VHSUM(v), VHMAX(v)               horizontal sum and max (<int21/simd.h>: i21_hsum*, i21_hmax*)
 *   VEXP(v)                          exp (i21_exp16 / i21_exp8 / i21_expf)
 *   VEXP2(t)                         2^t (i21_exp2_16 / i21_exp2_8; VEC 8 and 16)
 *   vload_tail(p, k)                 the first k (< VEC) floats at p, the other lanes 0
 *   vstore_tail(p, v, k)             the first k lanes of v to p, nothing past them
 *   vkeep_tail(v, k)                 v with lanes k.. set to 0            (VEC 8 and 16)
 *   VPUT(w, x, lane)                 w with lane `lane` taken from x
 */
#ifndef INT21_VEC_H
#define INT21_VEC_H
#include <int21/simd.h>

#ifndef VEC
#define VEC 1
#endif
#if VEC == 16 && !defined(__AVX512F__)
#undef VEC
#define VEC 8
#endif
#if VEC == 8 && !(defined(__AVX2__) && defined(__FMA__))
#undef VEC
#define VEC 1
#endif
#if VEC == 1 && defined(NT)
#undef NT
#define NT 0
#endif

#if VEC == 16
typedef __m512 vf;
#define VLOAD(p) _mm512_loadu_ps(p)
#define VSTORE(p, v) _mm512_storeu_ps(p, v)
#define VLOADA(p) _mm512_load_ps(p)
#define VSTOREA(p, v) _mm512_store_ps(p, v)
#define VSTREAM(p, v) _mm512_stream_ps(p, v)
#define VSET1(s) _mm512_set1_ps(s)
#define VZERO() _mm512_setzero_ps()
#define VADD(a, b) _mm512_add_ps(a, b)
#define VSUB(a, b) _mm512_sub_ps(a, b)
#define VMUL(a, b) _mm512_mul_ps(a, b)
#define VMAX(a, b) _mm512_max_ps(a, b)
#define VFMA(a, b, c) _mm512_fmadd_ps(a, b, c)
#define VFNMA(a, b, c) _mm512_fnmadd_ps(a, b, c)
#define VFMSUB(a, b, c) _mm512_fmsub_ps(a, b, c)
#define VHSUM(v) i21_hsum16(v)
#define VHMAX(v) i21_hmax16(v)
#define VEXP(v) i21_exp16(v)
#define VEXP2(t) i21_exp2_16(t)
#define VPUT(w, x, lane) _mm512_mask_blend_ps((__mmask16)(1u << (lane)), w, x)
static inline vf vload_tail(const float *p, int64_t k) {
    return _mm512_maskz_loadu_ps((__mmask16)((1u << k) - 1u), p);
}
static inline void vstore_tail(float *p, vf v, int64_t k) {
    _mm512_mask_storeu_ps(p, (__mmask16)((1u << k) - 1u), v);
}
static inline vf vkeep_tail(vf v, int64_t k) { return _mm512_maskz_mov_ps((__mmask16)((1u << k) - 1u), v); }

#elif VEC == 8
typedef __m256 vf;
#define VLOAD(p) _mm256_loadu_ps(p)
#define VSTORE(p, v) _mm256_storeu_ps(p, v)
#define VLOADA(p) _mm256_load_ps(p)
#define VSTOREA(p, v) _mm256_store_ps(p, v)
#define VSTREAM(p, v) _mm256_stream_ps(p, v)
#define VSET1(s) _mm256_set1_ps(s)
#define VZERO() _mm256_setzero_ps()
#define VADD(a, b) _mm256_add_ps(a, b)
#define VSUB(a, b) _mm256_sub_ps(a, b)
#define VMUL(a, b) _mm256_mul_ps(a, b)
#define VMAX(a, b) _mm256_max_ps(a, b)
#define VFMA(a, b, c) _mm256_fmadd_ps(a, b, c)
#define VFNMA(a, b, c) _mm256_fnmadd_ps(a, b, c)
#define VFMSUB(a, b, c) _mm256_fmsub_ps(a, b, c)
#define VHSUM(v) i21_hsum8(v)
#define VHMAX(v) i21_hmax8(v)
#define VEXP(v) i21_exp8(v)
#define VEXP2(t) i21_exp2_8(t)
#define VPUT(w, x, lane) _mm256_blendv_ps(w, x, _mm256_castsi256_ps(_mm256_cmpeq_epi32( \
        _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7), _mm256_set1_epi32(lane))))
static inline __m256i i21_tail_mask8(int64_t k) {
    return _mm256_cmpgt_epi32(_mm256_set1_epi32((int)k), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
}
static inline vf vload_tail(const float *p, int64_t k) { return _mm256_maskload_ps(p, i21_tail_mask8(k)); }
static inline void vstore_tail(float *p, vf v, int64_t k) { _mm256_maskstore_ps(p, i21_tail_mask8(k), v); }
static inline vf vkeep_tail(vf v, int64_t k) { return _mm256_and_ps(v, _mm256_castsi256_ps(i21_tail_mask8(k))); }

#else
typedef float vf;
#define VLOAD(p) (*(p))
#define VSTORE(p, x) (*(p) = (x))
#define VLOADA(p) (*(p))
#define VSTOREA(p, x) (*(p) = (x))
#define VSET1(x) (x)
#define VZERO() 0.0f
#define VADD(a, b) ((a) + (b))
#define VSUB(a, b) ((a) - (b))
#define VMUL(a, b) ((a) * (b))
#define VMAX(a, b) ((a) > (b) ? (a) : (b))
#define VFMA(a, b, c) ((a) * (b) + (c))
#define VFNMA(a, b, c) ((c) - (a) * (b))
#define VFMSUB(a, b, c) ((a) * (b) - (c))
#define VHSUM(v) (v)
#define VHMAX(v) (v)
#define VEXP(v) i21_expf(v)
#define VPUT(w, x, lane) (x)
static inline vf vload_tail(const float *p, int64_t k) { return k > 0 ? *p : 0.0f; }
static inline void vstore_tail(float *p, vf v, int64_t k) { if (k > 0) *p = v; }
#endif

#if defined(NT) && NT
#define VOUT(p, v) VSTREAM(p, v)
#else
#define VOUT(p, v) VSTORE(p, v)
#endif

#endif /* INT21_VEC_H */
