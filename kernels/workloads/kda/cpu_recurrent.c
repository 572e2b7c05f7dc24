/* KDA forward, the plain recurrence: for every (b, h) a K x V state, four passes over it
 * per time step (decay, S^T k, rank-1 update, S^T q). Slow and obviously correct: the seed
 * the faster variants are checked against. Macros: THREADS (OpenMP over b*h).         */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#ifndef THREADS
#define THREADS 1
#endif

static void head(const float *q, const float *k, const float *v, const float *g,
                 const float *beta, float *o, int64_t b, int64_t h, int64_t T, int64_t H,
                 int64_t K, int64_t V, float scale, float *S, float *kS) {
    memset(S, 0, sizeof(float) * (size_t)(K * V));
    for (int64_t t = 0; t < T; t++) {
        int64_t row = (b * T + t) * H + h;
        const float *qt = q + row * K, *kt = k + row * K, *gt = g + row * K;
        const float *vt = v + row * V;
        float *ot = o + row * V;
        float bt = beta[row];
        for (int64_t r = 0; r < K; r++) {
            float d = expf(gt[r]);
            for (int64_t j = 0; j < V; j++) S[r * V + j] *= d;
        }
        for (int64_t j = 0; j < V; j++) kS[j] = 0.0f;
        for (int64_t r = 0; r < K; r++)
            for (int64_t j = 0; j < V; j++) kS[j] += kt[r] * S[r * V + j];
        for (int64_t j = 0; j < V; j++) kS[j] = bt * (vt[j] - kS[j]);   /* u */
        for (int64_t r = 0; r < K; r++)
            for (int64_t j = 0; j < V; j++) S[r * V + j] += kt[r] * kS[j];
        for (int64_t j = 0; j < V; j++) ot[j] = 0.0f;
        for (int64_t r = 0; r < K; r++)
            for (int64_t j = 0; j < V; j++) ot[j] += qt[r] * S[r * V + j];
        for (int64_t j = 0; j < V; j++) ot[j] *= scale;
    }
}

void kernel(const float *q, const float *k, const float *v, const float *g, const float *beta,
            float *o, int64_t B, int64_t T, int64_t H, int64_t K, int64_t V, float scale) {
    #pragma omp parallel num_threads(THREADS)
    {
        float *S = malloc(sizeof(float) * (size_t)(K * V + V));
        #pragma omp for schedule(static)
        for (int64_t bh = 0; bh < B * H; bh++)
            head(q, k, v, g, beta, o, bh / H, bh % H, T, H, K, V, scale, S, S + K * V);
        free(S);
    }
}
