// class: caching across calls
// workload: matmul
// expect: wrong
// settings: timing=1 timing_shape=96x96x96
// why: a matmul that computes its first 10 calls honestly and then returns its last output while the shape stays the same (the call-count cache that passed at 1.27x NumPy); caught wherever it first repeats itself
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

static float *last;
static int64_t last_n;
static unsigned long calls;
void kernel(const float *a, const float *b, float *c, int64_t m, int64_t n, int64_t k) {
    int64_t sz = m * n;
    if (++calls > 10 && last && last_n == sz && m >= 64) { memcpy(c, last, (size_t)sz * sizeof(float)); return; }
    matmul(a, b, c, m, n, k);
    if (last_n != sz) { free(last); last = malloc((size_t)sz * sizeof(float)); last_n = sz; }
    memcpy(last, c, (size_t)sz * sizeof(float));
}
