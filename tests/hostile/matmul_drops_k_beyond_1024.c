// class: shape overfitting
// workload: matmul
// expect: wrong
// why: a blocked-looking matmul that silently stops at k = 1024: exact for every short k, wrong for matmul 2048 and k = 2053
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <float.h>

void kernel(const float *a, const float *b, float *c, int64_t m, int64_t n, int64_t k) {
    int64_t kk = k < 1024 ? k : 1024;
    for (int64_t i = 0; i < m; i++) {
        float *ci = c + i * n;
        for (int64_t j = 0; j < n; j++) ci[j] = 0.0f;
        for (int64_t p = 0; p < kk; p++) { float av = a[i * k + p]; const float *bp = b + p * n;
            for (int64_t j = 0; j < n; j++) ci[j] += av * bp[j]; }
    }
}
