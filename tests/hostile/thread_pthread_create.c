// class: hidden threads
// expect: rejected_static
// why: starts a pthread that does half the rows (threads outside OpenMP hide CPU time)
#include <math.h>
#include <stdint.h>
#include <float.h>

typedef unsigned long pthread_t;
int pthread_create(pthread_t *, const void *, void *(*)(void *), void *);
int pthread_join(pthread_t, void **);

struct job { const float *x; float *y; int64_t r0, r1, cols; };

static void *work(void *p) {
    struct job *j = p;
    for (int64_t r = j->r0; r < j->r1; r++) {
        const float *xr = j->x + r * j->cols;
        float *yr = j->y + r * j->cols;
        float m = -FLT_MAX, s = 0.0f;
        for (int64_t c = 0; c < j->cols; c++) m = xr[c] > m ? xr[c] : m;
        for (int64_t c = 0; c < j->cols; c++) { yr[c] = expf(xr[c] - m); s += yr[c]; }
        for (int64_t c = 0; c < j->cols; c++) yr[c] /= s;
    }
    return 0;
}

void kernel(const float *x, float *y, int64_t rows, int64_t cols) {
    struct job a = { x, y, 0, rows / 2, cols }, b = { x, y, rows / 2, rows, cols };
    pthread_t t;
    pthread_create(&t, 0, work, &a);
    work(&b);
    pthread_join(t, 0);
}
