/* int21/simd.h — vector helpers the harness provides to CPU kernels (include <int21/simd.h>).
 *
 * One source of truth for the fast math that seed kernels share, so a candidate can use a
 * vectorised exp without pasting it. Accuracy: i21_exp* are within ~2 ulp of expf over
 * [-87, 88]; below -87 they return 0 (so exp(-inf) == 0), above 88 they saturate.
 *
 *   float  i21_expf(float x)                  scalar, vectorises under `omp simd`
 *   __m256 i21_exp8(__m256 x)                 AVX2 + FMA
 *   __m512 i21_exp16(__m512 x)                AVX-512F
 *   float  i21_hsum8(__m256 v), i21_hmax8(__m256 v), i21_hsum16, i21_hmax16
 *
 * The cheaper 2^t for exp(x - m) = 2^(x*log2e - m*log2e), where the caller folds the shift
 * and the scale into one FMA (t = fmsub(x, log2e, m*log2e)): a degree-5 minimax polynomial
 * (relative error 8e-8, float's own rounding) and no range mask; t below -126.5 gives 0,
 * so a -inf entry gives exactly 0. About half the instructions of i21_exp16.
 *
 *   __m256 i21_exp2_8(__m256 t)               AVX2 + FMA
 *   __m512 i21_exp2_16(__m512 t)              AVX-512F (the exponent through scalef)
 */
#ifndef INT21_SIMD_H
#define INT21_SIMD_H
#include <stdint.h>
#include <string.h>
#include <immintrin.h>

#define I21_LOG2E 1.44269504088896341f
#define I21_C6 1.5403530393381606e-4f
#define I21_C5 1.3333558146428443e-3f
#define I21_C4 9.6181291076284772e-3f
#define I21_C3 5.5504108664821580e-2f
#define I21_C2 2.4022650695910071e-1f
#define I21_C1 6.9314718055994531e-1f
/* 2^f on [-0.5, 0.5], degree 5, fitted for relative error */
#define I21_P5 1.3266970636323094e-3f
#define I21_P4 9.675459936261177e-3f
#define I21_P3 5.550742521882057e-2f
#define I21_P2 2.4022121727466583e-1f
#define I21_P1 6.931469440460205e-1f
#define I21_P0 1.0000001192092896f

static inline float i21_expf(float x) {
    float t = x * I21_LOG2E;
    float keep = t >= -126.0f ? 1.0f : 0.0f;
    t = t < -126.0f ? -126.0f : t;
    t = t > 127.0f ? 127.0f : t;
    float n = (t + 12582912.0f) - 12582912.0f;
    float f = t - n;
    float p = I21_C6;
    p = p * f + I21_C5; p = p * f + I21_C4; p = p * f + I21_C3;
    p = p * f + I21_C2; p = p * f + I21_C1; p = p * f + 1.0f;
    int32_t bits = ((int32_t)n + 127) << 23;
    float scale;
    memcpy(&scale, &bits, sizeof scale);
    return p * scale * keep;
}

#if defined(__AVX2__) && defined(__FMA__)
static inline __m256 i21_exp8(__m256 x) {
    __m256 t = _mm256_mul_ps(x, _mm256_set1_ps(I21_LOG2E));
    __m256 keep = _mm256_cmp_ps(t, _mm256_set1_ps(-126.0f), _CMP_GE_OQ);
    t = _mm256_max_ps(t, _mm256_set1_ps(-126.0f));
    t = _mm256_min_ps(t, _mm256_set1_ps(127.0f));
    __m256 n = _mm256_round_ps(t, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    __m256 f = _mm256_sub_ps(t, n);
    __m256 p = _mm256_set1_ps(I21_C6);
    p = _mm256_fmadd_ps(p, f, _mm256_set1_ps(I21_C5));
    p = _mm256_fmadd_ps(p, f, _mm256_set1_ps(I21_C4));
    p = _mm256_fmadd_ps(p, f, _mm256_set1_ps(I21_C3));
    p = _mm256_fmadd_ps(p, f, _mm256_set1_ps(I21_C2));
    p = _mm256_fmadd_ps(p, f, _mm256_set1_ps(I21_C1));
    p = _mm256_fmadd_ps(p, f, _mm256_set1_ps(1.0f));
    __m256i e = _mm256_slli_epi32(_mm256_add_epi32(_mm256_cvtps_epi32(n), _mm256_set1_epi32(127)), 23);
    return _mm256_and_ps(_mm256_mul_ps(p, _mm256_castsi256_ps(e)), keep);
}
static inline float i21_hsum8(__m256 v) {
    __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    s = _mm_add_ps(s, _mm_movehl_ps(s, s));
    s = _mm_add_ss(s, _mm_movehdup_ps(s));
    return _mm_cvtss_f32(s);
}
static inline float i21_hmax8(__m256 v) {
    __m128 s = _mm_max_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    s = _mm_max_ps(s, _mm_movehl_ps(s, s));
    s = _mm_max_ss(s, _mm_movehdup_ps(s));
    return _mm_cvtss_f32(s);
}
static inline __m256 i21_exp2_8(__m256 t) {
    t = _mm256_min_ps(_mm256_max_ps(t, _mm256_set1_ps(-127.0f)), _mm256_set1_ps(127.0f));
    __m256 n = _mm256_round_ps(t, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    __m256 f = _mm256_sub_ps(t, n);
    __m256 p = _mm256_set1_ps(I21_P5);
    p = _mm256_fmadd_ps(p, f, _mm256_set1_ps(I21_P4));
    p = _mm256_fmadd_ps(p, f, _mm256_set1_ps(I21_P3));
    p = _mm256_fmadd_ps(p, f, _mm256_set1_ps(I21_P2));
    p = _mm256_fmadd_ps(p, f, _mm256_set1_ps(I21_P1));
    p = _mm256_fmadd_ps(p, f, _mm256_set1_ps(I21_P0));
    /* n = -127 makes a zero exponent field: the product is exactly 0 */
    __m256i e = _mm256_slli_epi32(_mm256_add_epi32(_mm256_cvtps_epi32(n), _mm256_set1_epi32(127)), 23);
    return _mm256_mul_ps(p, _mm256_castsi256_ps(e));
}
#endif

#if defined(__AVX512F__)
static inline __m512 i21_exp2_16(__m512 t) {
    t = _mm512_max_ps(t, _mm512_set1_ps(-150.0f));  /* also maps the NaN of (-inf) - (-inf) to 0 */
    __m512 n = _mm512_roundscale_ps(t, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    __m512 f = _mm512_sub_ps(t, n);
    __m512 p = _mm512_set1_ps(I21_P5);
    p = _mm512_fmadd_ps(p, f, _mm512_set1_ps(I21_P4));
    p = _mm512_fmadd_ps(p, f, _mm512_set1_ps(I21_P3));
    p = _mm512_fmadd_ps(p, f, _mm512_set1_ps(I21_P2));
    p = _mm512_fmadd_ps(p, f, _mm512_set1_ps(I21_P1));
    p = _mm512_fmadd_ps(p, f, _mm512_set1_ps(I21_P0));
    return _mm512_scalef_ps(p, n);
}
static inline __m512 i21_exp16(__m512 x) {
    __m512 t = _mm512_mul_ps(x, _mm512_set1_ps(I21_LOG2E));
    __mmask16 keep = _mm512_cmp_ps_mask(t, _mm512_set1_ps(-126.0f), _CMP_GE_OQ);
    t = _mm512_max_ps(t, _mm512_set1_ps(-126.0f));
    t = _mm512_min_ps(t, _mm512_set1_ps(127.0f));
    __m512 n = _mm512_roundscale_ps(t, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    __m512 f = _mm512_sub_ps(t, n);
    __m512 p = _mm512_set1_ps(I21_C6);
    p = _mm512_fmadd_ps(p, f, _mm512_set1_ps(I21_C5));
    p = _mm512_fmadd_ps(p, f, _mm512_set1_ps(I21_C4));
    p = _mm512_fmadd_ps(p, f, _mm512_set1_ps(I21_C3));
    p = _mm512_fmadd_ps(p, f, _mm512_set1_ps(I21_C2));
    p = _mm512_fmadd_ps(p, f, _mm512_set1_ps(I21_C1));
    p = _mm512_fmadd_ps(p, f, _mm512_set1_ps(1.0f));
    __m512i e = _mm512_slli_epi32(_mm512_add_epi32(_mm512_cvtps_epi32(n), _mm512_set1_epi32(127)), 23);
    return _mm512_maskz_mul_ps(keep, p, _mm512_castsi512_ps(e));
}
static inline float i21_hsum16(__m512 v) { return _mm512_reduce_add_ps(v); }
static inline float i21_hmax16(__m512 v) { return _mm512_reduce_max_ps(v); }
#endif

#endif /* INT21_SIMD_H */
