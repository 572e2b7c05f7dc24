"""Attention groups: softmax(q kᵀ · scale + mask) v, flash-style, never forming the scores.

Per (batch, head) and block of BQ query rows, the key/value rows are walked in blocks of BK
with an online softmax: the running max and sum are rescaled as each block arrives, and
the output accumulates P·V in registers-and-L1. The key block is packed transposed once per
query block so that scores are computed as BQ rows of vector FMAs over the keys, and P·V as
vector FMAs over the value width. Causal masks skip the key blocks above the diagonal
entirely; additive or boolean masks are read (or computed, for boolean masks made from
comparisons) per score. Grouped-query heads map query head h to key head h / (Hq / Hk).

Where key rows are contiguous and the head width is whole vectors, SDOT picks how scores are
made: the packed transposed key block above, or each key row dotted with the block's query
rows (a horizontal sum per score, no packing). A decode step has only the REP query rows of
one key/value head per block, too few to pay for the packing: on a Zen 5 VM the issue's
decoder's attention over 1025 keys took 0.16 ms alone with dot products against 0.22–0.24 ms
packed (`engine breakdown`, quick, 2026-12-06), so SDOT defaults to 1 for blocks of at most
SDOT_ROWS rows. Value rows that are contiguous, whole vectors, are read in place by P.V
rather than copied into a block.

Keys or values that are a concatenation along the key axis only this attention reads (a
decode step: the cached rows, then the step's new ones) are read from the concatenation's
inputs where they lie when the group's FUSE bit is 1 (:func:`kernels.codegen.partition.
_absorb_cats`): each key row's pointer is picked by the segment it falls in, so the cache is
not copied every step; FUSE 0 copies it into the concatenation first, in a cat group.
Knobs: THREADS, BQ, BK, SDOT.
"""
from __future__ import annotations

import math

from kernels.codegen import matmul  # noqa: F401  (registers the "gemm" vector helpers)
from kernels.codegen.affine import Affine, broadcast_to
from kernels.codegen.expr import Emitter, Load, NeedsBuffer
from kernels.codegen.family import Ctx, GroupCode
from kernels.spec import Constraint, Param


class AttentionFamily:
    name = "attention"

    def emit(self, group, ctx: Ctx) -> GroupCode:
        node = ctx.plan.nodes[group.anchors[0]]
        values = ctx.graph.values()
        q, k, v = node.args[:3]
        mask = node.args[3] if len(node.args) > 3 else None
        sq, sk, sv = values[q].shape, values[k].shape, values[v].shape
        batch = sq[:-3]
        H, L, E = sq[-3], sq[-2], sq[-1]
        HK, S, EV = sk[-3], sk[-2], sv[-1]
        nb = len(batch)
        # loop domain: batch..., h, hk, i (query), j (key), e, ev
        dom = batch + (H, HK, L, S, E, EV)
        ih, ihk, ii, ij, ie, iev = (nb + x for x in range(6))
        trees = ctx.trees(dom, inline=lambda n: False)

        def operand(name, head, row, col, rowdim, coldim, rows=None):
            """``name`` as a Load over the loop domain; ``rows``: a segment's length, the
            key rows its index takes (the domain's key extent is the whole concatenation's)."""
            shape = values[name].shape
            tr = trees if rows is None else ctx.trees(dom[:ij] + (rows,) + dom[ij + 1:], inline=lambda n: False)
            const, coef = [], []
            for d, s in enumerate(shape):
                r = [0] * len(dom)
                if d < nb and s > 1:
                    r[d] = 1
                elif d == nb:
                    r[head] = 1
                elif d == nb + 1:
                    r[rowdim] = 1
                elif d == nb + 2:
                    r[coldim] = 1
                const.append(0)
                coef.append(tuple(r))
            e = tr.build(name, Affine(tuple(const), tuple(coef), len(dom)))
            if not isinstance(e, Load):
                raise NeedsBuffer(name, "attention operands are read from memory")
            return e
        # FUSE 1 with feeds: a concatenation along the key axis is read input by input where
        # each lies, [(first key row, its Load)]; otherwise one segment, the operand's buffer
        absorbed = {f.members[0] for f in group.feeds} if getattr(ctx, "form", None) == "fused" else set()

        def segments(name, col):
            if name not in absorbed:
                return [(0, operand(name, ihk, ij, col, ij, col))]
            out, start = [], 0
            for a in ctx.plan.nodes[name].args:
                out.append((start, operand(a, ihk, ij, col, ij, col, rows=values[a].shape[-2])))
                start += values[a].shape[-2]
            return out
        lq = operand(q, ih, ii, ie, ii, ie)
        ks, vs = segments(k, ie), segments(v, iev)
        mask_code, helpers = "", {"exp", "gemm"}
        index = [f"b{d}" for d in range(nb)] + ["h", "hk", "i", "j", "e", "ev"]
        if mask is not None:
            target = batch + (H, L, S)
            full = Affine.identity(dom)
            # the mask is indexed (batch..., h, i, j): pick those rows of the identity map
            pick = list(range(nb)) + [ih, ii, ij]
            mm = Affine(tuple(0 for _ in pick), tuple(full.coef[p] for p in pick), len(dom))
            mt = ctx.trees(dom, inline=lambda n: False).build(mask, broadcast_to(mm, values[mask].shape, target, len(dom)))
            em = Emitter(index, "                    ", prefix="mk")
            mval = em.value(mt)
            helpers |= em.helpers
            is_bool = getattr(values[mask], "dtype", "f32") == "bool"
            add = f"s = {mval} ? s : -INFINITY;" if is_bool else f"s += {mval};"
            mask_code = "\n".join(em.lines + ["                    " + add])
        out = group.outputs[0]
        ocname = ctx.write(out)
        scale = node.attrs.get("scale")
        scale = 1.0 / math.sqrt(E) if scale is None else float(scale)
        causal = bool(node.attrs.get("causal"))
        P = ctx.knob("")
        bidx = []
        rem = 1
        for d in reversed(range(nb)):
            bidx.append(f"const int64_t b{d} = (bb / {rem}) % {batch[d]}; (void)b{d};")
            rem *= batch[d]
        nbatch = math.prod(batch)

        def off(ld: Load, parts):
            terms = [str(ld.offset)] if ld.offset else []
            for d, name in parts:
                if ld.strides[d]:
                    terms.append(f"{name} * {ld.strides[d]}")
            return " + ".join(terms) or "0"
        bparts = [(d, f"b{d}") for d in range(nb)]
        # key rows contiguous in e, e whole vectors: scores may be dot products of rows;
        # value rows contiguous, whole vectors: P.V reads them where they are, unpacked
        sdot = all(ld.strides[ie] == 1 for _, ld in ks) and E % 16 == 0
        vdirect = all(ld.strides[iev] == 1 for _, ld in vs) and EV % 16 == 0
        bases = "\n        ".join(
            [f"const float *kh{n} = {ld.buf} + {off(ld, bparts + [(ihk, 'hk')])};" for n, (_, ld) in enumerate(ks)]
            + [f"const float *vh{n} = {ld.buf} + {off(ld, bparts + [(ihk, 'hk')])};" for n, (_, ld) in enumerate(vs)])
        text = BODY.format(
            P=P, NB=nbatch, H=H, HK=HK, L=L, S=S, E=E, EV=EV, REP=H // HK, SCALE=repr(scale) + "f",
            BIDX="\n        ".join(bidx) or "(void)0;",
            QB=f"{lq.buf} + {off(lq, bparts + [(ih, 'h')])}", QL=lq.strides[ii], QE=lq.strides[ie],
            BASES=bases, KROW=_row(ks, "kh", ij, "(kb + jj)"), KEL=_element(ks, "kh", ij, ie, "(kb + jj)", "e"),
            O=ocname, CAUSAL=int(causal), MASK=mask_code or "(void)0;", SDOT=f"{P}SDOT" if sdot else "0",
            VPACK="" if vdirect else VPACK.format(P=P, EV=EV, VEL=_element(vs, "vh", ij, iev, "(kb + jj)", "ev")),
            VDECL="" if vdirect else f"float vt[{P}BK][{P}EVP] __attribute__((aligned(64)));",
            VROW=f"{_row(vs, 'vh', ij, '(kb + jj)')} + c0" if vdirect else "&vt[jj][c0]",
            VLOAD="I21_VLOADU" if vdirect else "I21_VLOAD")
        params = [ctx.threads_param(2.0 * nbatch * H * L * S * (E + EV)),
                  Param(ctx.knob("BQ"), "choice", choices=(8, 16, 32, 64), default=32, help="query rows per block"),
                  Param(ctx.knob("BK"), "choice", choices=(32, 64, 128, 256), default=64, help="key rows per block")]
        if sdot:
            # measured 2026-12-06 (Zen 5, the decoder, decode after 1024): the module's docstring
            params.append(Param(ctx.knob("SDOT"), "bool", default=1 if H // HK * L <= SDOT_ROWS else 0,
                                help="1: scores as dot products of each key row with the block's query rows "
                                     "(few rows: a decode step); 0: the key block packed transposed, scores "
                                     "as vector FMAs over the keys (many rows share one packing)"))
        evp = -(-EV // 16) * 16
        constraints = [Constraint(
            f"({ctx.knob('BQ')} * {ctx.knob('BK')} + {E} * {ctx.knob('BK')} + {ctx.knob('BK')} * {evp} + "
            f"{ctx.knob('BQ')} * ({E} + {evp})) * 4 <= 262144",
            "the query and key/value tiles of one thread must fit 256 KiB of its stack")]
        flops = 2.0 * nbatch * H * L * S * (E + EV) * (0.5 if causal else 1.0)
        nbytes = 4.0 * nbatch * (H * L * E + HK * S * (E + EV) + H * L * EV)
        summary = {"family": "attention", "heads": H, "kv_heads": HK, "l": L, "s": S, "e": E,
                   "ev": EV, "causal": causal, "mask": mask is not None}
        if absorbed:
            summary["segments"] = [len(ks), len(vs)]   # keys and values read from this many inputs each
        return GroupCode(text, params=params, constraints=constraints, helpers=helpers, flops=flops, bytes=nbytes,
                         summary=summary)


def _by_segment(segs, j: str, one) -> str:
    """C expression for key row ``j`` (a C expression) of an operand read from ``segs``
    ([(first row, Load)]): ``one(n, rel, ld)``, the access in segment ``n`` at row ``rel``
    within it, for the segment ``j`` falls in (the last one unless ``j`` is below the next's start)."""
    def at(n):
        start, ld = segs[n]
        return one(n, f"({j} - {start})" if start else j, ld)
    expr = at(len(segs) - 1)
    for n in reversed(range(len(segs) - 1)):
        expr = f"({j} < {segs[n + 1][0]} ? {at(n)} : {expr})"
    return expr


def _row(segs, base: str, ij: int, j: str) -> str:
    """C pointer to key row ``j`` of an operand read from ``segs`` (the base pointers are
    ``<base>0``, ``<base>1``...)."""
    return _by_segment(segs, j, lambda n, rel, ld: f"{base}{n} + {rel} * {ld.strides[ij]}")


def _element(segs, base: str, ij: int, icol: int, j: str, col: str) -> str:
    """C value of column ``col`` of row ``j`` of an operand read from ``segs``."""
    return _by_segment(segs, j, lambda n, rel, ld: f"{base}{n}[{rel} * {ld.strides[ij]} + {col} * {ld.strides[icol]}]")


BODY = r"""
/* tiles: 4 query rows at a time against a key block (scores) and a value block (P.V),
 * the accumulators in vector registers; rows and columns past the ends are zero padding.
 * The rows of a block are the query rows of the REP query heads that share one key/value
 * head, head by head ((h - hk * REP) * L + i): a block packs its key and value rows once for
 * all of them. A decode step (one query row per head) is then one block of REP rows per
 * key/value head, instead of REP blocks of one real row and three padding rows each. */
#define {P}EVP I21_ALIGN_UP({EV}, I21_VW)
#pragma omp parallel for num_threads({P}THREADS) collapse(3) schedule(dynamic, 1)
for (int64_t bb = 0; bb < {NB}; bb++) {{
    for (int64_t hk = 0; hk < {HK}; hk++) {{
        for (int64_t qb = 0; qb < {REP} * {L}; qb += {P}BQ) {{
        {BIDX}
        {BASES}
        const int64_t qn = {REP} * {L} - qb < {P}BQ ? {REP} * {L} - qb : {P}BQ;
        float m[{P}BQ], l[{P}BQ];
        float qs[{P}BQ][{E}] __attribute__((aligned(64)));
        float sc[{P}BQ][{P}BK] __attribute__((aligned(64)));
#if !{SDOT}
        float kt[{E}][{P}BK] __attribute__((aligned(64)));
#endif
        {VDECL}
        float acc[{P}BQ][{P}EVP] __attribute__((aligned(64)));
        int64_t i_last = 0;
        for (int64_t r = 0; r < {P}BQ; r++) {{
            m[r] = -INFINITY; l[r] = 0.0f;
            if (r < qn) {{
                const int64_t h = hk * {REP} + (qb + r) / {L}, i = (qb + r) % {L};
                const float *qh = {QB};
                for (int64_t e = 0; e < {E}; e++) qs[r][e] = qh[i * {QL} + e * {QE}] * {SCALE};
                i_last = i > i_last ? i : i_last;
            }} else {{
                for (int64_t e = 0; e < {E}; e++) qs[r][e] = 0.0f;
            }}
            for (int64_t ev = 0; ev < {P}EVP; ev++) acc[r][ev] = 0.0f;
        }}
#if {SDOT}
        /* the P.V tiles read 4 rows at a time: the rows past qn hold zeros, as packed scores would */
        for (int64_t r = qn; r < {P}BQ; r++)
            for (int64_t jj = 0; jj < {P}BK; jj++) sc[r][jj] = 0.0f;
#endif
        /* causal: keys j <= i only, so key blocks beyond the block's last query row are skipped */
        const int64_t s_end = {CAUSAL} ? ({S} < i_last + 1 ? {S} : i_last + 1) : {S};
        for (int64_t kb = 0; kb < s_end; kb += {P}BK) {{
            const int64_t kn = s_end - kb < {P}BK ? s_end - kb : {P}BK;
            {VPACK}
#if {SDOT}
            /* each key row against the block's query rows, E wide: a decode step has REP rows
             * (4 for the issue's decoder), too few to pay for packing the key block transposed */
            for (int64_t jj = 0; jj < kn; jj++) {{
                const float *krow = {KROW};
                i21_vf kv[{E} / I21_VW];
                #pragma GCC unroll 16
                for (int c = 0; c < {E} / I21_VW; c++) kv[c] = I21_VLOADU(krow + c * I21_VW);
                for (int64_t r = 0; r < qn; r++) {{
                    i21_vf s1 = I21_VZERO();
                    #pragma GCC unroll 16
                    for (int c = 0; c < {E} / I21_VW; c++) s1 = I21_VFMA(I21_VLOAD(&qs[r][c * I21_VW]), kv[c], s1);
                    sc[r][jj] = I21_VHSUM(s1);
                }}
            }}
#else
            for (int64_t jj = 0; jj < {P}BK; jj++)
                for (int64_t e = 0; e < {E}; e++) kt[e][jj] = jj < kn ? {KEL} : 0.0f;
            for (int64_t r0 = 0; r0 < qn; r0 += 4) {{
                for (int64_t c0 = 0; c0 < {P}BK; c0 += 4 * I21_VW) {{
                    i21_vf s4[4][4];
                    const int nc = ({P}BK - c0) / I21_VW < 4 ? ({P}BK - c0) / I21_VW : 4;
                    for (int i = 0; i < 4; i++) for (int c = 0; c < 4; c++) s4[i][c] = I21_VZERO();
                    for (int64_t e = 0; e < {E}; e++) {{
                        i21_vf kv[4];
                        for (int c = 0; c < 4; c++) kv[c] = c < nc ? I21_VLOAD(&kt[e][c0 + c * I21_VW]) : I21_VZERO();
                        for (int i = 0; i < 4; i++) {{
                            const i21_vf qv = I21_VBCAST(&qs[r0 + i][e]);
                            for (int c = 0; c < 4; c++) s4[i][c] = I21_VFMA(qv, kv[c], s4[i][c]);
                        }}
                    }}
                    for (int i = 0; i < 4; i++)
                        for (int c = 0; c < nc; c++) I21_VSTOREU(&sc[r0 + i][c0 + c * I21_VW], s4[i][c]);
                }}
            }}
#endif
            for (int64_t r = 0; r < qn; r++) {{
                const int64_t h = hk * {REP} + (qb + r) / {L}, i = (qb + r) % {L};
                (void)h;
                float *srow = sc[r];
                float mx = m[r];
                for (int64_t jj = 0; jj < kn; jj++) {{
                    const int64_t j = kb + jj;
                    float s = srow[jj];
                    {MASK}
                    if ({CAUSAL} && j > i) s = -INFINITY;
                    srow[jj] = s;
                    mx = s > mx ? s : mx;
                }}
                /* online softmax: rescale what has accumulated to the new max */
                const float alpha = mx == -INFINITY ? 1.0f : i21_exp(m[r] - mx);
                float sum = 0.0f;
                #pragma omp simd reduction(+:sum)
                for (int64_t jj = 0; jj < {P}BK; jj++) {{
                    const float p = (jj < kn && mx != -INFINITY) ? i21_exp(srow[jj] - mx) : 0.0f;
                    srow[jj] = p;
                    sum += p;
                }}
                l[r] = l[r] * alpha + sum;
                m[r] = mx;
                #pragma omp simd
                for (int64_t ev = 0; ev < {P}EVP; ev++) acc[r][ev] *= alpha;
            }}
            for (int64_t r0 = 0; r0 < qn; r0 += 4) {{
                for (int64_t c0 = 0; c0 < {P}EVP; c0 += 4 * I21_VW) {{
                    const int nc = ({P}EVP - c0) / I21_VW < 4 ? ({P}EVP - c0) / I21_VW : 4;
                    i21_vf a4[4][4];
                    for (int i = 0; i < 4; i++)
                        for (int c = 0; c < 4; c++) a4[i][c] = c < nc ? I21_VLOAD(&acc[r0 + i][c0 + c * I21_VW]) : I21_VZERO();
                    for (int64_t jj = 0; jj < kn; jj++) {{
                        i21_vf vv[4];
                        const float *vrow = {VROW};
                        for (int c = 0; c < 4; c++) vv[c] = c < nc ? {VLOAD}(vrow + c * I21_VW) : I21_VZERO();
                        for (int i = 0; i < 4; i++) {{
                            const i21_vf pv = I21_VBCAST(&sc[r0 + i][jj]);
                            for (int c = 0; c < 4; c++) a4[i][c] = I21_VFMA(pv, vv[c], a4[i][c]);
                        }}
                    }}
                    for (int i = 0; i < 4; i++)
                        for (int c = 0; c < nc; c++) I21_VSTOREU(&acc[r0 + i][c0 + c * I21_VW], a4[i][c]);
                }}
            }}
        }}
        for (int64_t r = 0; r < qn; r++) {{
            const int64_t h = hk * {REP} + (qb + r) / {L}, i = (qb + r) % {L};
            float *oh = {O} + ((bb * {H} + h) * {L} + i) * {EV};
            const float inv = 1.0f / l[r];
            #pragma omp simd
            for (int64_t ev = 0; ev < {EV}; ev++) oh[ev] = acc[r][ev] * inv;
        }}
        }}
    }}
}}
#undef {P}EVP
"""

# the value block packed (rows padded to whole vectors) where its rows are not contiguous
VPACK = r"""for (int64_t jj = 0; jj < {P}BK; jj++)
                for (int64_t ev = 0; ev < {P}EVP; ev++)
                    vt[jj][ev] = jj < kn && ev < {EV} ? {VEL} : 0.0f;"""

SDOT_ROWS = 8   # a block of at most this many query rows computes its scores as dot products

FAMILY = AttentionFamily()
