// class: control
// workload: matmul
// expect: ok
// settings: timing=1 timing_shape=96x96x96
// why: a plain correct i-k-j matmul must pass, timed
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <float.h>

static void matmul(const float *a, const float *b, float *c, int64_t m, int64_t n, int64_t k) {
    for (int64_t i = 0; i < m; i++) {
        float *ci = c + i * n;
        for (int64_t j = 0; j < n; j++) ci[j] = 0.0f;
        for (int64_t p = 0; p < k; p++) { float av = a[i * k + p]; const float *bp = b + p * n;
            for (int64_t j = 0; j < n; j++) ci[j] += av * bp[j]; }
    }
}

void kernel(const float *a, const float *b, float *c, int64_t m, int64_t n, int64_t k) { matmul(a, b, c, m, n, k); }
