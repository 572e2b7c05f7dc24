/* The decode engine's matrix-vector product alone, against a copy, on this host: y = W x over
 * twenty [2816, 1024] weights (230 MB, past every cache), two threads.
 * A development probe for docs/engine.md ("Decode at full size"), not a product benchmark:
 *
 *     gcc -O3 -march=native -fopenmp bench/gemv_stream.c -o /tmp/gemv_stream && /tmp/gemv_stream
 *
 * Variants: the generator's ALGO 2 "dot" form at each rows-per-pass value of its knob GR (8, 4,
 * 2, 1: GR rows share each load of x), and four rows with the next four prefetched. GB/s are
 * bytes of W read per second ("copy": bytes read, the same bytes written besides). */
#include <stdint.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <omp.h>
static double now(void){struct timespec t;clock_gettime(CLOCK_MONOTONIC,&t);return t.tv_sec+t.tv_nsec*1e-9;}
/* y[N] = W[N,K] x[K], W row-major (a Linear weight) */
static void dot4(const float *restrict a, const float *restrict b, float *restrict c, int64_t N, int64_t K, int64_t JB) {
    #pragma omp parallel num_threads(2)
    {
    #pragma omp for schedule(static)
    for (int64_t jc = 0; jc < N; jc += JB) {
        const int64_t nc = N - jc < JB ? N - jc : JB;
        int64_t j = 0;
        for (; j + 4 <= nc; j += 4) {
            const float *b0 = b + (jc + j) * K, *b1 = b0 + K, *b2 = b1 + K, *b3 = b2 + K;
            float s0 = 0, s1 = 0, s2 = 0, s3 = 0;
            #pragma omp simd reduction(+:s0, s1, s2, s3)
            for (int64_t p = 0; p < K; p++) { const float av = a[p]; s0 += av*b0[p]; s1 += av*b1[p]; s2 += av*b2[p]; s3 += av*b3[p]; }
            c[jc+j] = s0; c[jc+j+1] = s1; c[jc+j+2] = s2; c[jc+j+3] = s3;
        }
    }
    }
}
static void dot1(const float *restrict a, const float *restrict b, float *restrict c, int64_t N, int64_t K, int64_t JB) {
    #pragma omp parallel num_threads(2)
    {
    #pragma omp for schedule(static)
    for (int64_t jc = 0; jc < N; jc += JB) {
        const int64_t nc = N - jc < JB ? N - jc : JB;
        for (int64_t j = 0; j < nc; j++) {
            const float *b0 = b + (jc + j) * K; float s = 0;
            #pragma omp simd reduction(+:s)
            for (int64_t p = 0; p < K; p++) s += a[p]*b0[p];
            c[jc+j] = s;
        }
    }
    }
}
static void dot4pf(const float *restrict a, const float *restrict b, float *restrict c, int64_t N, int64_t K, int64_t JB) {
    #pragma omp parallel num_threads(2)
    {
    #pragma omp for schedule(static)
    for (int64_t jc = 0; jc < N; jc += JB) {
        const int64_t nc = N - jc < JB ? N - jc : JB;
        int64_t j = 0;
        for (; j + 4 <= nc; j += 4) {
            const float *b0 = b + (jc + j) * K, *b1 = b0 + K, *b2 = b1 + K, *b3 = b2 + K;
            const float *nx = b0 + 4 * K;   /* the next four rows */
            float s0 = 0, s1 = 0, s2 = 0, s3 = 0;
            for (int64_t p0 = 0; p0 < K; p0 += 64) {
                for (int q = 0; q < 4; q++) __builtin_prefetch(nx + q * K + p0, 0, 0);
                const int64_t pe = p0 + 64 < K ? p0 + 64 : K;
                #pragma omp simd reduction(+:s0, s1, s2, s3)
                for (int64_t p = p0; p < pe; p++) { const float av = a[p]; s0 += av*b0[p]; s1 += av*b1[p]; s2 += av*b2[p]; s3 += av*b3[p]; }
            }
            c[jc+j] = s0; c[jc+j+1] = s1; c[jc+j+2] = s2; c[jc+j+3] = s3;
        }
    }
    }
}

static void dot8(const float *restrict a, const float *restrict b, float *restrict c, int64_t N, int64_t K, int64_t JB) {
    #pragma omp parallel num_threads(2)
    {
    #pragma omp for schedule(static)
    for (int64_t jc = 0; jc < N; jc += JB) {
        const int64_t nc = N - jc < JB ? N - jc : JB;
        int64_t j = 0;
        for (; j + 8 <= nc; j += 8) {
            const float *b0 = b + (jc + j) * K, *b1 = b0 + K, *b2 = b1 + K, *b3 = b2 + K;
            const float *b4 = b3 + K, *b5 = b4 + K, *b6 = b5 + K, *b7 = b6 + K;
            float s0 = 0, s1 = 0, s2 = 0, s3 = 0, s4 = 0, s5 = 0, s6 = 0, s7 = 0;
            #pragma omp simd reduction(+:s0, s1, s2, s3, s4, s5, s6, s7)
            for (int64_t p = 0; p < K; p++) { const float av = a[p]; s0 += av*b0[p]; s1 += av*b1[p]; s2 += av*b2[p]; s3 += av*b3[p];
                s4 += av*b4[p]; s5 += av*b5[p]; s6 += av*b6[p]; s7 += av*b7[p]; }
            c[jc+j] = s0; c[jc+j+1] = s1; c[jc+j+2] = s2; c[jc+j+3] = s3; c[jc+j+4] = s4; c[jc+j+5] = s5; c[jc+j+6] = s6; c[jc+j+7] = s7;
        }
    }
    }
}
static void dot2(const float *restrict a, const float *restrict b, float *restrict c, int64_t N, int64_t K, int64_t JB) {
    #pragma omp parallel num_threads(2)
    {
    #pragma omp for schedule(static)
    for (int64_t jc = 0; jc < N; jc += JB) {
        const int64_t nc = N - jc < JB ? N - jc : JB;
        int64_t j = 0;
        for (; j + 2 <= nc; j += 2) {
            const float *b0 = b + (jc + j) * K, *b1 = b0 + K;
            float s0 = 0, s1 = 0;
            #pragma omp simd reduction(+:s0, s1)
            for (int64_t p = 0; p < K; p++) { const float av = a[p]; s0 += av*b0[p]; s1 += av*b1[p]; }
            c[jc+j] = s0; c[jc+j+1] = s1;
        }
    }
    }
}
static void copy(const float *restrict b, float *restrict d, int64_t n) {
    #pragma omp parallel for num_threads(2) schedule(static)
    for (int64_t i = 0; i < n; i++) d[i] = b[i];
}
int main(int argc, char **argv) {
    int64_t N = 2816, K = 1024, L = 20;   /* 20 matrices: 230 MB, past every cache */
    float *W = aligned_alloc(64, (size_t)N*K*L*4), *x = aligned_alloc(64, K*4), *y = aligned_alloc(64, N*4);
    float *D = aligned_alloc(64, (size_t)N*K*L*4);
    for (int64_t i = 0; i < N*K*L; i++) { W[i] = (i % 7) * 0.1f; D[i] = 0; }
    for (int i = 0; i < K; i++) x[i] = 1;
    const char *names[] = {"dot4 JB64", "dot8 JB64", "dot1 JB64", "dot2 JB64", "dot4pf JB64", "copy"};
    for (int rep = 0; rep < 3; rep++)
    for (int v = 0; v < 6; v++) {
        double best = 1e9;
        for (int it = 0; it < 5; it++) {
            double t0 = now();
            if (v == 5) copy(W, D, N*K*L);
            else for (int l = 0; l < L; l++) {
                const float *w = W + (size_t)l*N*K;
                if (v == 0) dot4(x, w, y, N, K, 64); else if (v == 1) dot8(x, w, y, N, K, 64);
                else if (v == 2) dot1(x, w, y, N, K, 64); else if (v == 3) dot2(x, w, y, N, K, 64); else dot4pf(x, w, y, N, K, 64);
            }
            double t = now() - t0; if (t < best) best = t;
        }
        printf("%-14s %6.2f ms  %5.1f GB/s read\n", names[v], best*1e3, N*K*L*4/best/1e9);
    }
    printf("%f\n", y[0]);
}
