// class: hidden threads
// expect: audit_failed
// reason: pthread_create
// why: the same thread, with every pthread name built by token pasting so the static regex never sees it; the import audit must
#include <math.h>
#include <stdint.h>
#include <float.h>

#define GLUE(a, b) a##b
#define PT(name) GLUE(pthread, name)
typedef unsigned long tid_t;
int PT(_create)(tid_t *, const void *, void *(*)(void *), void *);
int PT(_join)(tid_t, void **);

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
    tid_t t;
    PT(_create)(&t, 0, work, &a);
    work(&b);
    PT(_join)(t, 0);
}
