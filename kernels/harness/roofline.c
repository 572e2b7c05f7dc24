/* The harness's own probe of this host's limits (trusted code, run in a child process):
 * STREAM-style copy bandwidth and peak single-precision FMA throughput, with OpenMP.
 * Prints JSON: {"copy_gbs": ..., "triad_gbs": ..., "peak_gflops": ..., "copy_nt_gbs": ...}
 * copy_gbs is STREAM's copy: plain stores, so the hardware also reads every destination line
 * before writing it (read-for-ownership) while only two arrays are counted. copy_nt_gbs is
 * the same copy with streaming (non-temporal) stores, which skip that read: the rate at which
 * a kernel that reads one array and streams another can move the bytes it is credited with.  */
#include <immintrin.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double now(void) {
    struct timespec ts; clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* Vector width of the FMA probe: 32 bytes (AVX2) unless built with -DVEC_BYTES=64, which
 * the peers benchmark does on AVX-512 hosts (cores with 512-bit FMA pipes double the peak). */
#ifndef VEC_BYTES
#define VEC_BYTES 32
#endif
#define LANES (VEC_BYTES / 4)
typedef float vf __attribute__((vector_size(VEC_BYTES)));

__attribute__((noinline)) static float fma_chains(long n) {
    vf m = {0}, k = {0};
    for (int l = 0; l < LANES; l++) { m[l] = 0.9999f; k[l] = 1e-4f; }
    vf a0 = m, a1 = k, a2 = m + k, a3 = m - k, a4 = m * k, a5 = m + m, a6 = k + k, a7 = m * m,
       a8 = k * k, a9 = a2 * k, a10 = a3 * k, a11 = a4 + k;
    for (long i = 0; i < n; i++) {
        a0 = a0 * m + k; a1 = a1 * m + k; a2 = a2 * m + k; a3 = a3 * m + k;
        a4 = a4 * m + k; a5 = a5 * m + k; a6 = a6 * m + k; a7 = a7 * m + k;
        a8 = a8 * m + k; a9 = a9 * m + k; a10 = a10 * m + k; a11 = a11 * m + k;
        /* No instruction: it only tells the compiler each chain's value is unknown here, so
         * no two chains can be proved equal and merged. Without it GCC 12 at -O3 kept 8 of
         * the 12 (a1 after one step equals a11's start), and the 12 counted below made the
         * probe report 1.5x the cores' peak (tests/harness/test_roofline.py). */
        __asm__("" : "+x"(a0), "+x"(a1), "+x"(a2), "+x"(a3), "+x"(a4), "+x"(a5),
                     "+x"(a6), "+x"(a7), "+x"(a8), "+x"(a9), "+x"(a10), "+x"(a11));
    }
    vf s = a0 + a1 + a2 + a3 + a4 + a5 + a6 + a7 + a8 + a9 + a10 + a11;
    float t = 0;
    for (int l = 0; l < LANES; l++) t += s[l];
    return t;
}

int main(void) {
#ifndef PROBE_FLOATS
#define PROBE_FLOATS ((size_t)64 << 20)   /* 64 Mi floats = 256 MiB per array */
#endif
    const size_t n = PROBE_FLOATS;
    float *a = aligned_alloc(64, n * 4), *b = aligned_alloc(64, n * 4), *c = aligned_alloc(64, n * 4);
    #pragma omp parallel for schedule(static)
    for (size_t i = 0; i < n; i++) { a[i] = 1.0f; b[i] = 2.0f; c[i] = 0.0f; }
    double best_copy = 1e30, best_triad = 1e30, best_nt = 1e30;
    for (int rep = 0; rep < 6; rep++) {
        double t0 = now();
        #pragma omp parallel for schedule(static)
        for (size_t i = 0; i < n; i++) c[i] = a[i];
        double t1 = now();
        #pragma omp parallel for schedule(static)
        for (size_t i = 0; i < n; i++) a[i] = b[i] + 3.0f * c[i];
        double t2 = now();
        if (t1 - t0 < best_copy) best_copy = t1 - t0;
        if (t2 - t1 < best_triad) best_triad = t2 - t1;
#if defined(__AVX__)
        #pragma omp parallel
        {
            #pragma omp for schedule(static)
            for (size_t i = 0; i < n; i += 16) {
                _mm256_stream_ps(c + i, _mm256_load_ps(a + i));
                _mm256_stream_ps(c + i + 8, _mm256_load_ps(a + i + 8));
            }
            _mm_sfence();   /* each thread's streaming stores drained before the clock stops */
        }
        double t3 = now();
        if (t3 - t2 < best_nt) best_nt = t3 - t2;
#endif
    }
    /* Peak: 12 independent FMA chains of native vectors per thread (enough to cover
     * FMA latency x pipes on current x86 cores), kept in registers.                   */
    double best_flops = 0;
    const long iters = 40000000;
    for (int rep = 0; rep < 3; rep++) {
        double t0 = now();
        float sink = 0;
        #pragma omp parallel reduction(+:sink)
        sink += fma_chains(iters / 16);
        double t = now() - t0;
        double flops = 2.0 * (iters / 16) * 12 * LANES * omp_get_max_threads() / t;
        if (flops > best_flops) best_flops = flops;
        if (sink == 12345.f) puts("");
    }
    printf("{\"copy_gbs\": %.3f, \"triad_gbs\": %.3f, \"peak_gflops\": %.3f, \"threads\": %d",
           2.0 * n * 4 / best_copy / 1e9, 3.0 * n * 4 / best_triad / 1e9, best_flops / 1e9,
           omp_get_max_threads());
    if (best_nt < 1e30) printf(", \"copy_nt_gbs\": %.3f", 2.0 * n * 4 / best_nt / 1e9);
    printf("}\n");
    free(a); free(b); free(c);
    return 0;
}
