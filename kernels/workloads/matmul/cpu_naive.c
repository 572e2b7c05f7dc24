/* C = A·B, float32 row-major (A m×k, B k×n, C m×n): the plain, correct seed.
 *
 * i-k-j loop order: for each row of C, stream the rows of B and accumulate a[i][p] * B[p][:]
 * into the C row (unit stride on both, so the inner loop vectorises). Rows are split over
 * OpenMP threads. No blocking: B is re-read from cache/memory once per row of C.
 * Macros: THREADS (OpenMP threads). Every other design-space macro is ignored here.      */
#include <stdint.h>

#ifndef THREADS
#define THREADS 1
#endif

void kernel(const float *a, const float *b, float *c, int64_t m, int64_t n, int64_t k) {
    #pragma omp parallel for num_threads(THREADS) schedule(static)
    for (int64_t i = 0; i < m; i++) {
        float *restrict cr = c + i * n;
        const float *ar = a + i * k;
        for (int64_t j = 0; j < n; j++) cr[j] = 0.0f;   /* C arrives poisoned: never read it first */
        for (int64_t p = 0; p < k; p++) {
            const float av = ar[p];
            const float *restrict br = b + p * n;
            #pragma omp simd
            for (int64_t j = 0; j < n; j++) cr[j] += av * br[j];
        }
    }
}
