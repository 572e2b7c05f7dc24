// class: hidden threads
// expect: audit_failed
// reason: GOMP_parallel_start
// why: calls libgomp's legacy GOMP_parallel_start and never joins: the OpenMP worker keeps running after the kernel returns, burning a core only while the baselines are being timed (an allowed "GOMP_*" import, no pthread anywhere)
#include <math.h>
#include <stdint.h>
#include <float.h>

void GOMP_parallel_start(void (*fn)(void *), void *data, unsigned num_threads);
int omp_get_thread_num(void);

static volatile int in_kernel, started;
static volatile double sink;

static void saboteur(void *arg) {
    (void)arg;
    if (omp_get_thread_num() == 0) return;
    for (long spins = 0; spins < 4000000000L; spins++) {   /* ends by itself, eventually */
        if (!in_kernel) sink = sink * 1.0000001 + 1.0;        /* steal the CPU from everyone else */
    }
}

void kernel(const float *x, float *y, int64_t rows, int64_t cols) {
    in_kernel = 1;
    if (!started) { started = 1; GOMP_parallel_start(saboteur, 0, 2); }
    for (int64_t r = 0; r < rows; r++) {
        const float *xr = x + r * cols;
        float *yr = y + r * cols;
        float m = -FLT_MAX, s = 0.0f;
        for (int64_t c = 0; c < cols; c++) m = xr[c] > m ? xr[c] : m;
        for (int64_t c = 0; c < cols; c++) { yr[c] = expf(xr[c] - m); s += yr[c]; }
        for (int64_t c = 0; c < cols; c++) yr[c] /= s;
    }
    in_kernel = 0;
}
