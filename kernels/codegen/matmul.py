"""Matmul groups: a packed, register-blocked GEMM with its epilogue fused into the stores.

The blocked algorithm is the built-in matmul workload's (kernels/workloads/matmul/
cpu_blocked.c: Goto/BLIS loops jc → pc → ic → jr/ir around an MR×NR micro-kernel with MR×NV
vector accumulators, B packed in NR panels, A in MR panels), with its knobs and defaults,
generalised to the layouts a graph hands it: A and B are read through strides (a transposed
weight costs nothing but the packing), batch dims may broadcast, and the batch can be split
across threads (BPAR) when the matrices are small. After the last k slice of each MC×NC
block, the block — still in L2 — goes through the epilogue (bias, activation, residual,
scale, clamp…), written as pointwise trees over the output's index, in place where the
product itself is not needed. Tiny products use a plain vectorised loop (ALGO 0).
"""
from __future__ import annotations

import math

from kernels.codegen import cmath
from kernels.codegen.affine import Affine
from kernels.codegen.expr import Emitter, Load, NeedsBuffer, count_ops
from kernels.codegen.family import Ctx, GroupCode
from kernels.spec import Constraint, Param

COMMON = r"""
/* GEMM vector width: 16 floats with AVX-512F, else 8 (AVX2+FMA or GCC vectors) */
#if defined(__AVX512F__)
#define I21_VW 16
typedef __m512 i21_vf;
#define I21_VZERO() _mm512_setzero_ps()
#define I21_VLOAD(p) _mm512_load_ps(p)
#define I21_VLOADU(p) _mm512_loadu_ps(p)
#define I21_VSTOREU(p, v) _mm512_storeu_ps((p), (v))
#define I21_VBCAST(p) _mm512_set1_ps(*(p))
#define I21_VFMA(a, b, c) _mm512_fmadd_ps((a), (b), (c))
#define I21_VADD(a, b) _mm512_add_ps((a), (b))
#define I21_VHSUM(v) _mm512_reduce_add_ps(v)
#elif defined(__AVX2__) && defined(__FMA__)
#define I21_VW 8
typedef __m256 i21_vf;
#define I21_VZERO() _mm256_setzero_ps()
#define I21_VLOAD(p) _mm256_load_ps(p)
#define I21_VLOADU(p) _mm256_loadu_ps(p)
#define I21_VSTOREU(p, v) _mm256_storeu_ps((p), (v))
#define I21_VBCAST(p) _mm256_broadcast_ss(p)
#define I21_VFMA(a, b, c) _mm256_fmadd_ps((a), (b), (c))
#define I21_VADD(a, b) _mm256_add_ps((a), (b))
static inline float i21_vhsum(__m256 v) {
    __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    s = _mm_add_ps(s, _mm_movehl_ps(s, s));
    return _mm_cvtss_f32(_mm_add_ss(s, _mm_movehdup_ps(s)));
}
#define I21_VHSUM(v) i21_vhsum(v)
#else
#define I21_VW 8
typedef float i21_vf __attribute__((vector_size(32)));
static inline i21_vf i21_vload(const float *p) { i21_vf v; memcpy(&v, p, sizeof v); return v; }
#define I21_VZERO() ((i21_vf){0})
#define I21_VLOAD(p) i21_vload(p)
#define I21_VLOADU(p) i21_vload(p)
#define I21_VSTOREU(p, v) do { i21_vf v_ = (v); memcpy((p), &v_, sizeof v_); } while (0)
#define I21_VBCAST(p) ((i21_vf){0} + *(p))
#define I21_VFMA(a, b, c) ((a) * (b) + (c))
#define I21_VADD(a, b) ((a) + (b))
static inline float i21_vhsum(i21_vf v) { float s = 0.0f; for (int l = 0; l < I21_VW; l++) s += v[l]; return s; }
#define I21_VHSUM(v) i21_vhsum(v)
#endif
#define I21_ALIGN_UP(x, a) (((x) + (a) - 1) / (a) * (a))
#if defined(__AVX2__)
/* d[r*ldd + c] = s[c*lds + r] for an 8 x 8 tile: packing a transposed B (every nn.Linear
 * weight) eight columns at a time instead of one float per load and store */
static inline __attribute__((always_inline))
void i21_tr8x8(const float *restrict s, int64_t lds, float *restrict d, int64_t ldd) {
    __m256 r0 = _mm256_loadu_ps(s), r1 = _mm256_loadu_ps(s + lds), r2 = _mm256_loadu_ps(s + 2 * lds),
           r3 = _mm256_loadu_ps(s + 3 * lds), r4 = _mm256_loadu_ps(s + 4 * lds), r5 = _mm256_loadu_ps(s + 5 * lds),
           r6 = _mm256_loadu_ps(s + 6 * lds), r7 = _mm256_loadu_ps(s + 7 * lds);
    __m256 t0 = _mm256_unpacklo_ps(r0, r1), t1 = _mm256_unpackhi_ps(r0, r1), t2 = _mm256_unpacklo_ps(r2, r3),
           t3 = _mm256_unpackhi_ps(r2, r3), t4 = _mm256_unpacklo_ps(r4, r5), t5 = _mm256_unpackhi_ps(r4, r5),
           t6 = _mm256_unpacklo_ps(r6, r7), t7 = _mm256_unpackhi_ps(r6, r7);
    __m256 u0 = _mm256_shuffle_ps(t0, t2, 0x44), u1 = _mm256_shuffle_ps(t0, t2, 0xEE),
           u2 = _mm256_shuffle_ps(t1, t3, 0x44), u3 = _mm256_shuffle_ps(t1, t3, 0xEE),
           u4 = _mm256_shuffle_ps(t4, t6, 0x44), u5 = _mm256_shuffle_ps(t4, t6, 0xEE),
           u6 = _mm256_shuffle_ps(t5, t7, 0x44), u7 = _mm256_shuffle_ps(t5, t7, 0xEE);
    _mm256_storeu_ps(d, _mm256_permute2f128_ps(u0, u4, 0x20));
    _mm256_storeu_ps(d + ldd, _mm256_permute2f128_ps(u1, u5, 0x20));
    _mm256_storeu_ps(d + 2 * ldd, _mm256_permute2f128_ps(u2, u6, 0x20));
    _mm256_storeu_ps(d + 3 * ldd, _mm256_permute2f128_ps(u3, u7, 0x20));
    _mm256_storeu_ps(d + 4 * ldd, _mm256_permute2f128_ps(u0, u4, 0x31));
    _mm256_storeu_ps(d + 5 * ldd, _mm256_permute2f128_ps(u1, u5, 0x31));
    _mm256_storeu_ps(d + 6 * ldd, _mm256_permute2f128_ps(u2, u6, 0x31));
    _mm256_storeu_ps(d + 7 * ldd, _mm256_permute2f128_ps(u3, u7, 0x31));
}
#endif
"""

# {F}: function prefix (g3_), {P}: knob prefix (G3_); strides and sizes are literals
KERNELS = r"""
#define {P}NR ({P}NV * I21_VW)
/* one k step of the {P}MR x {P}NR micro-tile */
static inline __attribute__((always_inline))
void {F}step(i21_vf acc[{P}MR][{P}NV], const float *pa, int64_t rsa, const float *pb) {{
    i21_vf bv[{P}NV];
    #pragma GCC unroll 8
    for (int v = 0; v < {P}NV; v++) bv[v] = I21_VLOAD(pb + v * I21_VW);
    #pragma GCC unroll 16
    for (int i = 0; i < {P}MR; i++) {{
        i21_vf av = I21_VBCAST(pa + i * rsa);
        #pragma GCC unroll 8
        for (int v = 0; v < {P}NV; v++) acc[i][v] = I21_VFMA(av, bv[v], acc[i][v]);
    }}
}}
/* C[0:mr, 0:nr] (=|+=) A-panel . B-panel over kc; A(i, p) at pa[i*rsa + p*csa] */
static inline __attribute__((always_inline))
void {F}micro(int64_t kc, const float *restrict pa, int64_t rsa, int64_t csa, const float *restrict pb,
              float *restrict c, int64_t ldc, int accumulate, int64_t mr, int64_t nr) {{
    i21_vf acc[{P}MR][{P}NV];
    #pragma GCC unroll 16
    for (int i = 0; i < {P}MR; i++)
        #pragma GCC unroll 8
        for (int v = 0; v < {P}NV; v++) acc[i][v] = I21_VZERO();
    int64_t p = 0;
    for (; p + {P}UNROLL <= kc; p += {P}UNROLL) {{
        #pragma GCC unroll 8
        for (int u = 0; u < {P}UNROLL; u++) {F}step(acc, pa + (p + u) * csa, rsa, pb + (p + u) * {P}NR);
    }}
    for (; p < kc; p++) {F}step(acc, pa + p * csa, rsa, pb + p * {P}NR);
    if (mr == {P}MR && nr == {P}NR) {{
        #pragma GCC unroll 16
        for (int i = 0; i < {P}MR; i++)
            #pragma GCC unroll 8
            for (int v = 0; v < {P}NV; v++) {{
                float *cp = c + i * ldc + v * I21_VW;
                I21_VSTOREU(cp, accumulate ? I21_VADD(acc[i][v], I21_VLOADU(cp)) : acc[i][v]);
            }}
    }} else {{
        float tile[{P}MR * {P}NR] __attribute__((aligned(64)));
        #pragma GCC unroll 16
        for (int i = 0; i < {P}MR; i++)
            #pragma GCC unroll 8
            for (int v = 0; v < {P}NV; v++) I21_VSTOREU(tile + i * {P}NR + v * I21_VW, acc[i][v]);
        for (int64_t i = 0; i < mr; i++)
            for (int64_t j = 0; j < nr; j++)
                c[i * ldc + j] = accumulate ? c[i * ldc + j] + tile[i * {P}NR + j] : tile[i * {P}NR + j];
    }}
}}
/* B(p, j) = b[p*{RSB} + j*{CSB}], p < kc, j < nr -> kc rows of NR floats, zero beyond nr */
static void {F}pack_b(const float *restrict b, int64_t kc, int64_t nr, float *restrict dst) {{
    if ({CSB} == 1 && nr == {P}NR) {{
        for (int64_t p = 0; p < kc; p++) memcpy(dst + p * {P}NR, b + p * {RSB}, {P}NR * sizeof(float));
    }} else if ({RSB} == 1) {{
        int64_t j0 = 0;
#if defined(__AVX2__)
        /* a full panel in 8 x 8 transposed tiles (measured here: 128x1024x2816 against a
         * [2816, 1024] weight from 6.4 to 5.4 ms, OpenBLAS 5.8 in the same rounds) */
        if (nr == {P}NR)
            for (; j0 + 8 <= {P}NR; j0 += 8) {{
                int64_t p = 0;
                for (; p + 8 <= kc; p += 8) i21_tr8x8(b + p + j0 * {CSB}, {CSB}, dst + p * {P}NR + j0, {P}NR);
                for (; p < kc; p++)
                    for (int64_t j = j0; j < j0 + 8; j++) dst[p * {P}NR + j] = b[p + j * {CSB}];
            }}
#endif
        for (int64_t j = j0; j < {P}NR; j++)
            for (int64_t p = 0; p < kc; p++) dst[p * {P}NR + j] = j < nr ? b[p + j * {CSB}] : 0.0f;
    }} else {{
        for (int64_t p = 0; p < kc; p++) {{
            int64_t j = 0;
            for (; j < nr; j++) dst[p * {P}NR + j] = b[p * {RSB} + j * {CSB}];
            for (; j < {P}NR; j++) dst[p * {P}NR + j] = 0.0f;
        }}
    }}
}}
/* A(i, p) = a[i*{RSA} + p*{CSA}], i < mr, p < kc -> kc columns of MR floats, zero beyond mr */
static void {F}pack_a(const float *restrict a, int64_t kc, int64_t mr, float *restrict dst) {{
    if (mr == {P}MR) {{
        for (int64_t p = 0; p < kc; p++)
            #pragma GCC unroll 16
            for (int i = 0; i < {P}MR; i++) dst[p * {P}MR + i] = a[i * {RSA} + p * {CSA}];
    }} else {{
        for (int64_t p = 0; p < kc; p++)
            for (int i = 0; i < {P}MR; i++) dst[p * {P}MR + i] = i < mr ? a[i * {RSA} + p * {CSA}] : 0.0f;
    }}
}}
/* all micro-tiles of an mc x nc block */
static void {F}macro(int64_t mc, int64_t nc, int64_t kc, const float *pa_blk, const float *a_blk,
                     const float *pb_blk, float *c_blk, int accumulate, float *edge) {{
    const int64_t npanels = (nc + {P}NR - 1) / {P}NR;
    for (int64_t ir = 0; ir < mc; ir += {P}MR) {{
        const int64_t mr = mc - ir < {P}MR ? mc - ir : {P}MR;
        for (int64_t jp = 0; jp < npanels; jp++) {{
            const int64_t nr = nc - jp * {P}NR < {P}NR ? nc - jp * {P}NR : {P}NR;
            const float *pb = pb_blk + jp * kc * {P}NR;
            float *cp = c_blk + ir * {N} + jp * {P}NR;
#if {P}PACK_A
            (void)a_blk; (void)edge;
            {F}micro(kc, pa_blk + ir * kc, 1, {P}MR, pb, cp, {N}, accumulate, mr, nr);
#else
            (void)pa_blk;
            if (mr == {P}MR && {CSA} == 1) {{
                {F}micro(kc, a_blk + ir * {RSA}, {RSA}, 1, pb, cp, {N}, accumulate, mr, nr);
            }} else {{
                {F}pack_a(a_blk + ir * {RSA}, kc, mr, edge);
                {F}micro(kc, edge, 1, {P}MR, pb, cp, {N}, accumulate, mr, nr);
            }}
#endif
        }}
    }}
}}
"""

# ALGO 3, "dot tiles": where A is contiguous in k and B(p, j) = b[p + j*CSB] (an nn.Linear
# weight, [n, k] row-major, or K^T in attention), each output is a dot product of two rows that
# are contiguous in memory already, so nothing is packed. A thread takes NR3 weight rows (a
# panel: NR3 x KC3 floats, in L1/L2) and runs every MR3 rows of A past it, with MR3 x NR3 vector
# accumulators along k summed across lanes at the end. B is read once from memory, A once per
# panel from L2. Measured here against ALGO 1 (which repacks every weight on every call):
# 128x2816x1024 (a [2816, 1024] weight) 2.7-3.8 ms against 4.8-5.1 ms, i.e. ~250 against ~150
# GFLOP/s; but 16 x 128x128x64 (attention scores, k 64) 0.63 against 0.36 ms: two threads,
# interleaved, 2026-12-06.
DOT_KERNEL = r"""
/* C[0:mr, 0:nr] (=|+=) sum_p A(i, p) W(j, p), p < kc, with A(i, p) = a[i*{RSA} + p] and
 * W(j, p) = w[j*{CSB} + p]; rows of the tile past mr or nr read row 0 again and are not stored */
static inline __attribute__((always_inline))
void {F}dot(int64_t kc, const float *restrict a, const float *restrict w, float *restrict c, int64_t mr,
            int64_t nr, int accumulate) {{
    i21_vf acc[{P}MR3][{P}NR3];
    const float *ar[{P}MR3], *wr[{P}NR3];
    #pragma GCC unroll 16
    for (int i = 0; i < {P}MR3; i++) {{
        ar[i] = a + (i < mr ? i : 0) * {RSA};
        #pragma GCC unroll 16
        for (int j = 0; j < {P}NR3; j++) acc[i][j] = I21_VZERO();
    }}
    #pragma GCC unroll 16
    for (int j = 0; j < {P}NR3; j++) wr[j] = w + (j < nr ? j : 0) * {CSB};
    int64_t p = 0;
    for (; p + I21_VW <= kc; p += I21_VW) {{
        i21_vf wv[{P}NR3];
        #pragma GCC unroll 16
        for (int j = 0; j < {P}NR3; j++) wv[j] = I21_VLOADU(wr[j] + p);
        #pragma GCC unroll 16
        for (int i = 0; i < {P}MR3; i++) {{
            const i21_vf av = I21_VLOADU(ar[i] + p);
            #pragma GCC unroll 16
            for (int j = 0; j < {P}NR3; j++) acc[i][j] = I21_VFMA(av, wv[j], acc[i][j]);
        }}
    }}
    float s[{P}MR3][{P}NR3];
    #pragma GCC unroll 16
    for (int i = 0; i < {P}MR3; i++)
        #pragma GCC unroll 16
        for (int j = 0; j < {P}NR3; j++) {{
            s[i][j] = I21_VHSUM(acc[i][j]);
            for (int64_t q = p; q < kc; q++) s[i][j] += ar[i][q] * wr[j][q];
        }}
    for (int64_t i = 0; i < mr; i++)
        for (int64_t j = 0; j < nr; j++)
            c[i * {N} + j] = accumulate ? c[i * {N} + j] + s[i][j] : s[i][j];
}}
"""

DOT = r"""
    const int64_t npanels = ({N} + {P}NR3 - 1) / {P}NR3;
    #pragma omp parallel for num_threads({P}THREADS) collapse(2) schedule(static)
    for (int64_t bb = 0; bb < {NB}; bb++)
        for (int64_t jp = 0; jp < npanels; jp++) {{
            const float *a = {A} + {AOFF};
            const float *b = {B} + {BOFF};
            float *c = {C} + bb * {M} * {N};
            const int64_t jc = jp * {P}NR3, nc = {N} - jc < {P}NR3 ? {N} - jc : {P}NR3;
            for (int64_t pc = 0; pc < {K}; pc += {P}KC3) {{
                const int64_t kc = {K} - pc < {P}KC3 ? {K} - pc : {P}KC3;
                for (int64_t ic = 0; ic < {M}; ic += {P}MR3) {{
                    const int64_t mc = {M} - ic < {P}MR3 ? {M} - ic : {P}MR3;
                    {F}dot(kc, a + ic * {RSA} + pc, b + jc * {CSB} + pc, c + ic * {N} + jc, mc, nc, pc > 0);
                    if (pc + {P}KC3 >= {K}) {{
                        {EPI}
                    }}
                }}
            }}
        }}
"""

SCRATCH = ("((({P}BPAR ? {P}THREADS : 1) * 2 * I21_ALIGN_UP((int64_t){KCM} * I21_ALIGN_UP({NCM}, {P}NR), 16)"
           " + {P}THREADS * (I21_ALIGN_UP(I21_ALIGN_UP({MCM}, {P}MR) * (int64_t){KCM}, 16)"
           " + I21_ALIGN_UP({P}MR * (int64_t){KCM}, 16))) * ({P}ALGO == 1))")


# The x86 intrinsics header costs ~0.3 s of every compile (measured here: 0.36 s against 0.03 s
# for a file without it), so only programs with a vector helper include it.
cmath.helper("intrinsics", (), """
#if defined(__x86_64__)
#include <immintrin.h>
#endif
""")
cmath.helper("gemm", ("intrinsics",), COMMON)


MC_CHOICES = (24, 48, 72, 84, 96, 120, 144, 168, 192, 240, 288, 336, 384, 480)


def balanced_mc(m: int, threads: int, mr: int = 6, mc: int = 48) -> int:
    """The default MC: about ``mc`` rows per block, in a number of blocks the threads share
    evenly (threads take whole row blocks: 128 rows in 48-row blocks leave one of two threads
    a third idle; in two 66-row blocks neither is). Measured here: 128x1024x2816 from 6.5 to
    5.4 ms, 128x2816x1024 from 6.5 to 5.5 ms (two threads)."""
    if threads <= 1 or m <= mr:
        return mc
    blocks = threads * max(1, round(m / (mc * threads)))
    return -(-(-(-m // blocks)) // mr) * mr


class MatmulFamily:
    name = "matmul"

    def emit(self, group, ctx: Ctx) -> GroupCode:
        return _Matmul(group, ctx).code()


class _Matmul:
    def __init__(self, g, ctx: Ctx):
        self.g, self.ctx = g, ctx
        self.mm = g.anchors[0]
        node = ctx.plan.nodes[self.mm]
        self.values = ctx.graph.values()
        self.a, self.b = node.args
        self.dom = tuple(g.domain)
        self.M, self.N = self.dom[-2], self.dom[-1]
        self.K = self.values[self.a].shape[-1]
        self.batch = self.dom[:-2]
        self.fused = getattr(ctx, "form", None) in (None, "fused")
        self.epilogue = list(g.epilogue) if self.fused else []
        self.outputs = [o for o in g.outputs if o != self.mm] if self.fused else []
        self.mm_out = (self.mm in g.outputs) or not self.fused or not self.outputs

    def _operand(self, name, which):
        """(offset, batch strides, row stride, col stride) of an operand as the GEMM walks it:
        A(b, i, p) and B(b, p, j) over the loop domain (batch..., i, j, p)."""
        nb = len(self.batch)
        ndom = nb + 3
        shape = self.values[name].shape
        lead = nb + 2 - len(shape)
        const, coef = [], []
        for d, s in enumerate(shape):
            row = [0] * ndom
            pos = d + lead
            if pos < nb:
                if s > 1:
                    row[pos] = 1
            elif pos == nb:          # A rows (i) or B rows (p)
                row[nb if which == "a" else nb + 2] = 1
            else:                    # A cols (p) or B cols (j)
                row[nb + 2 if which == "a" else nb + 1] = 1
            const.append(0)
            coef.append(tuple(row))
        trees = self.ctx.trees(self.batch + (self.M, self.N, self.K), inline=lambda n: False)
        e = trees.build(name, Affine(tuple(const), tuple(coef), ndom))
        if not isinstance(e, Load):
            raise NeedsBuffer(name, f"matmul operand {name} must be read from memory")
        st = e.strides
        if which == "a":
            return e.buf, e.offset, st[:nb], st[nb], st[nb + 2]
        return e.buf, e.offset, st[:nb], st[nb + 2], st[nb + 1]

    def code(self) -> GroupCode:
        ctx, g = self.ctx, self.g
        P, F = f"G{g.id}_", f"{getattr(ctx, 'prefix', '')}g{g.id}_"
        abuf, aoff, abst, rsa, csa = self._operand(self.a, "a")
        bbuf, boff, bbst, rsb, csb = self._operand(self.b, "b")
        self.dot = csa == 1 and rsb == 1
        nbatch = math.prod(self.batch)
        flops = 2.0 * nbatch * self.M * self.N * self.K
        # where the product accumulates: its own buffer, or in place in the first epilogue output
        if self.mm_out:
            acc = ctx.write(self.mm)
        else:
            acc = ctx.write(self.outputs[0])
        for o in self.outputs:
            ctx.write(o)
        scratch_name = ctx.write("__scratch__")
        params = self._params(P, flops, nbatch, rows=rsb == 1)
        kcm, ncm, mcm = f"({self.K} < {P}KC ? {self.K} : {P}KC)", f"({self.N} < {P}NC ? {self.N} : {P}NC)", \
            f"({self.M} < {P}MC ? {self.M} : {P}MC)"
        fmt = dict(P=P, F=F, RSA=rsa, CSA=csa, RSB=rsb, CSB=csb, N=self.N)
        functions = KERNELS.format(**fmt) + (DOT_KERNEL.format(**fmt) if self.dot else "")
        epi_lines, helpers = self._epilogue(acc)
        self.epi_text = "\n".join(epi_lines) or "(void)0;"
        dot = DOT.format(**fmt, M=self.M, K=self.K, NB=nbatch, A=abuf, B=bbuf, C=acc,
                         AOFF=self._batch_offset(aoff, abst), BOFF=self._batch_offset(boff, bbst),
                         EPI=self.epi_text) if self.dot else \
            '#error "ALGO 3 needs A contiguous in k and B read as rows contiguous in k"'
        body = BODY.format(**fmt, M=self.M, K=self.K, NB=nbatch, A=abuf, B=bbuf, C=acc, S=scratch_name,
                           AOFF=self._batch_offset(aoff, abst), BOFF=self._batch_offset(boff, bbst),
                           KCM=kcm, NCM=ncm, MCM=mcm, EPI="\n".join(epi_lines) or "(void)0;",
                           SIMPLE=self._simple(abuf, aoff, abst, rsa, csa, bbuf, boff, bbst, rsb, csb, acc),
                           DOT=dot, GEMV=self._gemv(abuf, aoff, abst, rsa, csa, bbuf, boff, bbst, rsb, csb, acc))
        scratch = SCRATCH.format(P=P, KCM=kcm, NCM=ncm, MCM=mcm)
        constraints = [
            Constraint(f"{P}MC % {P}MR == 0", "MC must be a multiple of MR (whole micro-panels per block)"),
            Constraint(f"{P}NC % ({P}NV * 16) == 0", "NC must be a multiple of NR"),
            Constraint(f"{P}MR * {P}NV <= 28", "MR x NV accumulators do not fit the 32 vector registers"),
        ] + ([Constraint(f"{P}MR3 * {P}NR3 + {P}NR3 <= 31",
                         "MR3 x NR3 accumulators and NR3 weight vectors do not fit the 32 vector registers")]
             if self.dot else [])
        ops = sum(count_ops(e) for e in self._epi_trees().values()) if self.epilogue else 0
        summary = {"family": "matmul", "m": self.M, "n": self.N, "k": self.K, "batch": nbatch,
                   "epilogue": [ctx.plan.nodes[e].op for e in self.epilogue], "transposed_b": rsb == 1 and csb != 1,
                   "matches": "matmul" if not self.epilogue and nbatch == 1 else None}
        return GroupCode(body, functions=functions, params=params, constraints=constraints, helpers=helpers | {"gemm"},
                         scratch=scratch, flops=flops + ops * nbatch * self.M * self.N,
                         bytes=4.0 * nbatch * (self.M * self.K + self.K * self.N + self.M * self.N * (1 + len(self.outputs))),
                         summary=summary)

    def _params(self, P, flops, nbatch, rows: bool):
        ctx = self.ctx
        threads = ctx.threads_param(flops / 8, "OpenMP threads")
        big = self.M * self.N * self.K >= 32768
        # dot tiles need enough k to pay for their lane sums (the figures above DOT_KERNEL), and
        # a host where they beat packing: measured once per host (kernels/codegen/gemm_form.py);
        # their default 4 x 6 tile holds 30 vector registers, so with AVX2's 16 it spills (on a
        # Zen 3 VM the prefill ran 236 ms with them, 196 ms packed: docs/engine.md)
        dot = big and self.dot and self.K >= 256 and ctx.gemm_form == 3
        algo = 2 if self.M <= GEMV_ROWS else 3 if dot else 1 if big else 0
        mc = balanced_mc(self.M, threads.default if not nbatch >= max(ctx.cores, 1) else 1)
        return [
            threads,
            Param(f"{P}ALGO", "choice", choices=(0, 1, 2, 3) if self.dot else (0, 1, 2), default=algo,
                  help="0: plain vectorised loops (tiny products); 1: packed, register-blocked GEMM; 2: "
                       "matrix-vector (few rows: threads split the columns, B streamed once, unpacked)"
                       + ("; 3: dot tiles (rows of A and of the weight, both contiguous in k, unpacked)"
                          if self.dot else "")),
            Param(f"{P}JB", "choice", choices=(16, 32, 64, 128, 256, 512), default=64, when=f"{P}ALGO == 2",
                  help="ALGO 2: columns of the output per chunk a thread takes"),
        ] + ([
            Param(f"{P}GR", "choice", choices=(1, 2, 4, 8), default=ctx.gemv_rows, when=f"{P}ALGO == 2",
                  help="ALGO 2 over weight rows: rows summed per pass over A's row (4: four rows share "
                       "each load of A; 8: eight independent sums hide the FMA latency; 1: each thread "
                       "streams the weight in order)"),
        ] if rows else []) + [
            # Splitting the batch needs no barrier per product: measured here 2-3x faster than
            # sharing each product (16 x 256^3, two threads on a busy host)
            Param(f"{P}BPAR", "choice", choices=(0, 1), default=1 if nbatch >= max(ctx.cores, 1) else 0, when=f"{P}ALGO == 1",
                  help="1: threads split the batch (each multiplies whole matrices); 0: threads split each product"),
            Param(f"{P}MR", "choice", choices=(2, 4, 6, 8, 12, 14), default=6, when=f"{P}ALGO == 1",
                  help="micro-tile rows"),
            Param(f"{P}NV", "choice", choices=(1, 2, 3, 4), default=2, when=f"{P}ALGO == 1",
                  help="micro-tile width in vectors"),
            Param(f"{P}MC", "choice", choices=tuple(sorted({*MC_CHOICES, mc})), default=mc, when=f"{P}ALGO == 1",
                  help="rows of A per packed block"),
            Param(f"{P}KC", "choice", choices=(64, 128, 192, 256, 320, 384, 512, 768), default=384, when=f"{P}ALGO == 1",
                  help="depth of a packed block"),
            Param(f"{P}NC", "choice", choices=(256, 384, 512, 768, 1024, 1536, 2048, 3072, 4096, 6144, 8192),
                  default=1536, when=f"{P}ALGO == 1", help="columns of B per packed block"),
            Param(f"{P}UNROLL", "choice", choices=(1, 2, 4, 8), default=1, when=f"{P}ALGO == 1",
                  help="micro-kernel k unroll"),
            Param(f"{P}PACK_A", "bool", default=1, when=f"{P}ALGO == 1",
                  help="pack A into MR panels (0: broadcast from A)"),
        ] + ([
            Param(f"{P}MR3", "choice", choices=(1, 2, 3, 4, 5, 6, 8), default=4, when=f"{P}ALGO == 3",
                  help="ALGO 3: rows of A per tile"),
            Param(f"{P}NR3", "choice", choices=(1, 2, 3, 4, 5, 6, 7, 8), default=6, when=f"{P}ALGO == 3",
                  help="ALGO 3: weight rows per tile (a thread's panel)"),
            Param(f"{P}KC3", "choice", choices=(128, 256, 512, 1024, 2048, 4096), default=1024, when=f"{P}ALGO == 3",
                  help="ALGO 3: depth of k summed per pass over a panel"),
        ] if self.dot else [])

    def _batch_offset(self, off, bst) -> str:
        terms = [str(off)] if off else []
        rem = 1
        sizes = list(self.batch)
        for d in reversed(range(len(sizes))):
            if bst[d] and sizes[d] > 1:
                idx = f"(bb / {rem}) % {sizes[d]}" if rem > 1 else f"bb % {sizes[d]}"
                terms.append(f"({idx}) * {bst[d]}")
            rem *= sizes[d]
        return " + ".join(terms) or "0"

    def _epi_trees(self):
        mm = self.mm
        values = self.values
        dom = self.dom

        def special(name, m):
            if name != mm:
                return None
            off, st = m.offset(values[mm].shape)
            want = Affine.identity(dom).offset(dom)
            if (off, st) != want:
                raise NeedsBuffer(mm, "the epilogue reads the product at another element than its own")
            return None
        trees = self.ctx.trees(dom, special=special)
        return {o: trees.build(o) for o in self.outputs}

    def _epilogue(self, acc):
        """Statements applying the epilogue to the block rows ic..ic+mc, cols jc..jc+nc."""
        if not self.epilogue:
            return [], set()
        saved = dict(self.ctx.names)
        self.ctx.names[self.mm] = acc   # the product is read from where it accumulated
        try:
            trees = self._epi_trees()
        finally:
            self.ctx.names.clear()
            self.ctx.names.update(saved)
        nb = len(self.batch)
        index = []
        rem = 1
        bidx = []
        for d in reversed(range(nb)):
            bidx.append(f"((bb / {rem}) % {self.batch[d]})" if rem > 1 else f"(bb % {self.batch[d]})")
            rem *= self.batch[d]
        index = list(reversed(bidx)) + ["(ic + ii)", "(jc + jj)"]
        lines = ["for (int64_t ii = 0; ii < mc; ii++) {", "#pragma omp simd", "    for (int64_t jj = 0; jj < nc; jj++) {"]
        em = Emitter(index, "        ", regs={})
        vals = [(o, em.value(t)) for o, t in trees.items()]
        lines += em.lines
        base = f"bb * {self.M * self.N} + (ic + ii) * {self.N} + jc + jj"
        for o, v in vals:
            lines.append(f"        {self.ctx.names[o]}[{base}] = {v};")
        lines += ["    }", "}"]
        return lines, em.helpers

    def _gemv(self, abuf, aoff, abst, rsa, csa, bbuf, boff, bbst, rsb, csb, acc) -> str:
        """ALGO 2: few rows of A against a streamed B (module constants GEMV*)."""
        inner = GEMV_DOT if rsb == 1 else GEMV_AXPY if csb == 1 else GEMV_ANY
        fmt = dict(P=f"G{self.g.id}_", M=self.M, N=self.N, K=self.K, RSA=rsa, CSA=csa, RSB=rsb, CSB=csb)
        return GEMV.format(**fmt, NB=math.prod(self.batch), A=abuf, B=bbuf, C=acc,
                           AOFF=self._batch_offset(aoff, abst), BOFF=self._batch_offset(boff, bbst),
                           EPI=self.epi_text, INNER=inner.format(**fmt))

    def _simple(self, abuf, aoff, abst, rsa, csa, bbuf, boff, bbst, rsb, csb, acc) -> str:
        """ALGO 0: per row, acc[j] = sum_p A(i,p) B(p,j) vectorised over j."""
        return SIMPLE.format(P=f"G{self.g.id}_", M=self.M, N=self.N, K=self.K, NB=math.prod(self.batch),
                             A=abuf, B=bbuf, C=acc, RSA=rsa, CSA=csa, RSB=rsb, CSB=csb,
                             AOFF=self._batch_offset(aoff, abst), BOFF=self._batch_offset(boff, bbst),
                             EPI=self.epi_text)


# ALGO 2, per operand layout (strides are literals, so the choice is made here, not in C):
# "dot": B(p, j) = b[p + j*CSB] (a Linear weight, [n, k] row-major): each output is a dot
# product of an A row with a contiguous B row, GR B rows at a time sharing the A loads (GR 1
# reads the weight as one sequential stream per thread; 4 and 8 read four or eight interleaved
# row streams. Which streams fastest depends on the host, so the search owns it:
# bench/gemv_stream.c on an AMD EPYC Zen 5 VM streamed 47-49 GB/s one row at a time against
# 40 GB/s four at a time; on a Zen 3 VM eight rows 22-25 GB/s, four 18-23, one 12-16, 2026-12-07;
# its default is the host's fastest, measured by kernels/codegen/streaming.py);
# "axpy": B(p, j) = b[p*RSB + j]: the chunk's outputs accumulate a row of B per p;
# anything else: scalar loops. Threads split the output's columns in JB chunks, so B is read
# once, in order, with no packing: the weight-streaming case of a decode step.
GEMV_ROWS = 4
GEMV = r"""
    #pragma omp parallel num_threads({P}THREADS)
    for (int64_t bb = 0; bb < {NB}; bb++) {{
        const float *a = {A} + {AOFF};
        const float *b = {B} + {BOFF};
        float *c = {C} + bb * {M} * {N};
        #pragma omp for schedule(static)
        for (int64_t jc = 0; jc < {N}; jc += {P}JB) {{
            const int64_t nc = {N} - jc < {P}JB ? {N} - jc : {P}JB;
            for (int64_t i = 0; i < {M}; i++) {{
                const float *ai = a + i * {RSA};
                float *ci = c + i * {N} + jc;
{INNER}
            }}
            const int64_t ic = 0, mc = {M};
            (void)ic; (void)mc;
            {EPI}
        }}
    }}
"""
GEMV_DOT = r"""
                int64_t j = 0;
#if {P}GR >= 8
                for (; j + 8 <= nc; j += 8) {{
                    const float *b0 = b + (jc + j) * {CSB}, *b1 = b0 + {CSB}, *b2 = b1 + {CSB}, *b3 = b2 + {CSB};
                    const float *b4 = b3 + {CSB}, *b5 = b4 + {CSB}, *b6 = b5 + {CSB}, *b7 = b6 + {CSB};
                    float s0 = 0.0f, s1 = 0.0f, s2 = 0.0f, s3 = 0.0f, s4 = 0.0f, s5 = 0.0f, s6 = 0.0f, s7 = 0.0f;
                    #pragma omp simd reduction(+:s0, s1, s2, s3, s4, s5, s6, s7)
                    for (int64_t p = 0; p < {K}; p++) {{
                        const float av = ai[p * {CSA}];
                        s0 += av * b0[p]; s1 += av * b1[p]; s2 += av * b2[p]; s3 += av * b3[p];
                        s4 += av * b4[p]; s5 += av * b5[p]; s6 += av * b6[p]; s7 += av * b7[p];
                    }}
                    ci[j] = s0; ci[j + 1] = s1; ci[j + 2] = s2; ci[j + 3] = s3;
                    ci[j + 4] = s4; ci[j + 5] = s5; ci[j + 6] = s6; ci[j + 7] = s7;
                }}
#endif
#if {P}GR >= 4
                for (; j + 4 <= nc; j += 4) {{
                    const float *b0 = b + (jc + j) * {CSB}, *b1 = b0 + {CSB}, *b2 = b1 + {CSB}, *b3 = b2 + {CSB};
                    float s0 = 0.0f, s1 = 0.0f, s2 = 0.0f, s3 = 0.0f;
                    #pragma omp simd reduction(+:s0, s1, s2, s3)
                    for (int64_t p = 0; p < {K}; p++) {{
                        const float av = ai[p * {CSA}];
                        s0 += av * b0[p]; s1 += av * b1[p]; s2 += av * b2[p]; s3 += av * b3[p];
                    }}
                    ci[j] = s0; ci[j + 1] = s1; ci[j + 2] = s2; ci[j + 3] = s3;
                }}
#endif
#if {P}GR >= 2
                for (; j + 2 <= nc; j += 2) {{
                    const float *b0 = b + (jc + j) * {CSB}, *b1 = b0 + {CSB};
                    float s0 = 0.0f, s1 = 0.0f;
                    #pragma omp simd reduction(+:s0, s1)
                    for (int64_t p = 0; p < {K}; p++) {{
                        const float av = ai[p * {CSA}];
                        s0 += av * b0[p]; s1 += av * b1[p];
                    }}
                    ci[j] = s0; ci[j + 1] = s1;
                }}
#endif
                for (; j < nc; j++) {{
                    const float *bj = b + (jc + j) * {CSB};
                    float s = 0.0f;
                    #pragma omp simd reduction(+:s)
                    for (int64_t p = 0; p < {K}; p++) s += ai[p * {CSA}] * bj[p];
                    ci[j] = s;
                }}"""
GEMV_AXPY = r"""
                for (int64_t j = 0; j < nc; j++) ci[j] = 0.0f;
                for (int64_t p = 0; p < {K}; p++) {{
                    const float av = ai[p * {CSA}];
                    const float *bp = b + p * {RSB} + jc;
                    #pragma omp simd
                    for (int64_t j = 0; j < nc; j++) ci[j] += av * bp[j];
                }}"""
GEMV_ANY = r"""
                for (int64_t j = 0; j < nc; j++) {{
                    float s = 0.0f;
                    for (int64_t p = 0; p < {K}; p++) s += ai[p * {CSA}] * b[p * {RSB} + (jc + j) * {CSB}];
                    ci[j] = s;
                }}"""

SIMPLE = r"""
    #pragma omp parallel for num_threads({P}THREADS) collapse(2) schedule(static)
    for (int64_t bb = 0; bb < {NB}; bb++) {{
        for (int64_t i = 0; i < {M}; i++) {{
            const float *a = {A} + {AOFF} + i * {RSA};
            const float *b = {B} + {BOFF};
            float *c = {C} + bb * {M} * {N} + i * {N};
            for (int64_t j = 0; j < {N}; j++) c[j] = 0.0f;
            for (int64_t p = 0; p < {K}; p++) {{
                const float av = a[p * {CSA}];
                #pragma omp simd
                for (int64_t j = 0; j < {N}; j++) c[j] += av * b[p * {RSB} + j * {CSB}];
            }}
            const int64_t ic = i, jc = 0, mc = 1, nc = {N};
            (void)ic; (void)jc; (void)mc; (void)nc;
            {EPI}
        }}
    }}
"""

BODY = r"""
#if {P}ALGO == 0
    (void){S};
{SIMPLE}
#elif {P}ALGO == 2
    (void){S};
{GEMV}
#elif {P}ALGO == 3
    (void){S};
{DOT}
#else
    /* blocked: scratch holds the packed B block(s) (two, double-buffered, per team), then per
     * thread a packed A block and an edge panel */
    const int64_t kc_max = {KCM}, nc_max = I21_ALIGN_UP({NCM}, {P}NR), mc_max = I21_ALIGN_UP({MCM}, {P}MR);
    const int64_t bfl = I21_ALIGN_UP(kc_max * nc_max, 16);
    const int64_t afl = I21_ALIGN_UP(mc_max * kc_max, 16), efl = I21_ALIGN_UP({P}MR * kc_max, 16);
    const int teams = {P}BPAR ? {P}THREADS : 1;
    #pragma omp parallel num_threads({P}THREADS)
    {{
        const int t = omp_get_thread_num(), nt = omp_get_num_threads();
        const int team = {P}BPAR ? t : 0;
        float *pb_base = {S} + team * 2 * bfl;
        float *pa_blk = {S} + teams * 2 * bfl + t * (afl + efl);
        float *edge = pa_blk + afl;
        (void)nt; (void)edge;
        /* the block count runs on across the batch: the double-buffered B block of one
         * product must not be repacked while another thread still multiplies with it */
        int64_t block = 0;
        for (int64_t bb = ({P}BPAR ? t : 0); bb < {NB}; bb += ({P}BPAR ? nt : 1)) {{
            const float *a = {A} + {AOFF};
            const float *b = {B} + {BOFF};
            float *c = {C} + bb * {M} * {N};
            for (int64_t jc = 0; jc < {N}; jc += {P}NC) {{
                const int64_t nc = {N} - jc < {P}NC ? {N} - jc : {P}NC;
                const int64_t npanels = (nc + {P}NR - 1) / {P}NR;
                for (int64_t pc = 0; pc < {K}; pc += {P}KC, block++) {{
                    const int64_t kc = {K} - pc < {P}KC ? {K} - pc : {P}KC;
                    const int accumulate = pc > 0, last = pc + {P}KC >= {K};
                    float *pb_blk = pb_base + (block % 2) * bfl;
                    if ({P}BPAR) {{
                        for (int64_t jp = 0; jp < npanels; jp++) {{
                            const int64_t nr = nc - jp * {P}NR < {P}NR ? nc - jp * {P}NR : {P}NR;
                            {F}pack_b(b + pc * {RSB} + (jc + jp * {P}NR) * {CSB}, kc, nr, pb_blk + jp * kc * {P}NR);
                        }}
                    }} else {{
                        #pragma omp for schedule(static)
                        for (int64_t jp = 0; jp < npanels; jp++) {{
                            const int64_t nr = nc - jp * {P}NR < {P}NR ? nc - jp * {P}NR : {P}NR;
                            {F}pack_b(b + pc * {RSB} + (jc + jp * {P}NR) * {CSB}, kc, nr, pb_blk + jp * kc * {P}NR);
                        }}   /* implicit barrier: the B block is complete */
                    }}
                    if ({P}BPAR) {{
                        for (int64_t ic = 0; ic < {M}; ic += {P}MC) {{
                            const int64_t mc = {M} - ic < {P}MC ? {M} - ic : {P}MC;
                            const float *a_blk = a + ic * {RSA} + pc * {CSA};
#if {P}PACK_A
                            for (int64_t ir = 0; ir < mc; ir += {P}MR)
                                {F}pack_a(a_blk + ir * {RSA}, kc, mc - ir < {P}MR ? mc - ir : {P}MR, pa_blk + ir * kc);
#endif
                            {F}macro(mc, nc, kc, pa_blk, a_blk, pb_blk, c + ic * {N} + jc, accumulate, edge);
                            if (last) {{
                                {EPI}
                            }}
                        }}
                    }} else {{
                        #pragma omp for schedule(dynamic, 1) nowait
                        for (int64_t ic = 0; ic < {M}; ic += {P}MC) {{
                            const int64_t mc = {M} - ic < {P}MC ? {M} - ic : {P}MC;
                            const float *a_blk = a + ic * {RSA} + pc * {CSA};
#if {P}PACK_A
                            for (int64_t ir = 0; ir < mc; ir += {P}MR)
                                {F}pack_a(a_blk + ir * {RSA}, kc, mc - ir < {P}MR ? mc - ir : {P}MR, pa_blk + ir * kc);
#endif
                            {F}macro(mc, nc, kc, pa_blk, a_blk, pb_blk, c + ic * {N} + jc, accumulate, edge);
                            if (last) {{
                                {EPI}
                            }}
                        }}
                    }}
                }}
            }}
        }}
    }}
#endif
"""

FAMILY = MatmulFamily()
