/* Softmax over each row, online: one pass keeps a running max and a rescaled sum per
 * vector lane, a second pass writes exp(x - max) / sum (the input is read twice, the
 * output written once). Macros: THREADS, CHUNK, VEC, FAST_EXP, NT, PF (see cpu_two_pass.c;
 * here NT streams the one write of y past the cache).                                    */
#include <math.h>
#include <stdint.h>
#include <float.h>

#ifndef THREADS
#define THREADS 1
#endif
#ifndef CHUNK
#define CHUNK 1
#endif
#ifndef VEC
#define VEC 1
#endif
#ifndef FAST_EXP
#define FAST_EXP 0
#endif
#ifndef NT
#define NT 0
#endif
#ifndef PF
#define PF 0
#endif
/* PF (vector paths): while one row is computed from the cache, prefetch the next row into
 * L2 a line at a time, so the DRAM traffic overlaps the exp work instead of taking turns. */
#if PF
#define PREFETCH_NEXT(c) do { if (xn && !((c) & 15)) _mm_prefetch((const char *)(xn + (c)), _MM_HINT_T1); } while (0)
#else
#define PREFETCH_NEXT(c) ((void)0)
#endif

/* vf and its vocabulary at VEC lanes (VOUT streams y when NT); VEC 16 falls back to 8 where
 * the host lacks AVX-512 */
#include <int21/vec.h>

#if FAST_EXP
#define EXPF(x) i21_expf(x)
#else
#define EXPF(x) expf(x)
#endif

static void row(const float *xr, float *yr, int64_t cols, const float *xn) {
    int64_t c = 0;
    float m = -FLT_MAX, s = 0.0f;
#if VEC > 1
    vf vm = VSET1(-FLT_MAX), vs = VZERO();
    for (; c + VEC <= cols; c += VEC) {
        vf v = VLOAD(xr + c);
        vf nm = VMAX(vm, v);
        vs = VADD(VMUL(vs, VEXP(VSUB(vm, nm))), VEXP(VSUB(v, nm)));
        vm = nm;
    }
    m = VHMAX(vm);
    s = VHSUM(VMUL(vs, VEXP(VSUB(vm, VSET1(m)))));
#endif
    for (; c < cols; c++) {
        float nm = xr[c] > m ? xr[c] : m;
        s = s * EXPF(m - nm) + EXPF(xr[c] - nm);
        m = nm;
    }
    float inv = 1.0f / s;
    c = 0;
#if NT && VEC > 1  /* a scalar peel up to the vector alignment of yr the streaming stores need */
    for (; c < cols && ((uintptr_t)(yr + c) & (VEC * sizeof(float) - 1)); c++) yr[c] = i21_expf(xr[c] - m) * inv;
#endif
#if VEC > 1
    vf bm = VSET1(m), bi = VSET1(inv);
    for (; c + VEC <= cols; c += VEC) {
        PREFETCH_NEXT(c);
        VOUT(yr + c, VMUL(VEXP(VSUB(VLOAD(xr + c), bm)), bi));
    }
#endif
    for (; c < cols; c++) yr[c] = EXPF(xr[c] - m) * inv;
}

void kernel(const float *x, float *y, int64_t rows, int64_t cols) {
    #pragma omp parallel num_threads(THREADS)
    {
        #pragma omp for schedule(static, CHUNK) nowait
        for (int64_t r = 0; r < rows; r++) row(x + r * cols, y + r * cols, cols, r + 1 < rows ? x + (r + 1) * cols : 0);
#if NT && VEC > 1
        _mm_sfence();  /* streaming stores are weakly ordered: publish them before the join */
#endif
    }
}
