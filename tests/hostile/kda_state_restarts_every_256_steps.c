// class: shape overfitting
// workload: kda
// expect: wrong
// why: an honest-looking KDA recurrence whose state is reset every 256 steps: exact on every short sequence, wrong on long ones (T = 1031 and the typical T = 1024)
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

void kernel(const float *q, const float *k, const float *v, const float *g, const float *beta, float *o,
            int64_t B, int64_t T, int64_t H, int64_t K, int64_t V, float scale) {
    float *S = malloc((size_t)(K * V) * sizeof(float)), *u = malloc((size_t)V * sizeof(float));
    for (int64_t b = 0; b < B; b++) for (int64_t h = 0; h < H; h++) {
        for (int64_t t = 0; t < T; t++) {
            if (t % 256 == 0) memset(S, 0, (size_t)(K * V) * sizeof(float));
            const float *qt = q + ((b * T + t) * H + h) * K, *kt = k + ((b * T + t) * H + h) * K;
            const float *gt = g + ((b * T + t) * H + h) * K, *vt = v + ((b * T + t) * H + h) * V;
            float bt = beta[(b * T + t) * H + h];
            for (int64_t i = 0; i < K; i++) { float d = expf(gt[i]); for (int64_t j = 0; j < V; j++) S[i * V + j] *= d; }
            for (int64_t j = 0; j < V; j++) { float s = 0; for (int64_t i = 0; i < K; i++) s += S[i * V + j] * kt[i]; u[j] = bt * (vt[j] - s); }
            for (int64_t i = 0; i < K; i++) for (int64_t j = 0; j < V; j++) S[i * V + j] += kt[i] * u[j];
            float *ot = o + ((b * T + t) * H + h) * V;
            for (int64_t j = 0; j < V; j++) { float s = 0; for (int64_t i = 0; i < K; i++) s += S[i * V + j] * qt[i]; ot[j] = scale * s; }
        }
    }
    free(S); free(u);
}
