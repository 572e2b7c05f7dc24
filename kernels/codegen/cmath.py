"""C for each pointwise IR op, and the small math library the generated sources carry.

``C_OPS[op](args, attrs) -> (C expression, helper names)``: ``args`` are C expressions of
the operands. The helpers are static inline functions written so that GCC vectorises them
inside ``#pragma omp simd`` loops under the harness's fixed flags (``-O3 -march=native``,
no ``-ffast-math``): no libm calls (libm's ``expf``/``sqrtf``/``floorf`` keep loops scalar
there, because of errno and exception rules), bit casts through unions, selects instead of
branches. Measured against the float64 interpreter over wide ranges (tests/ownops): exp,
log, tanh, erf, sqrt within a few float32 ulp; only ``sin``/``cos``/``fmod`` call libm
(scalar). ``HELPERS`` holds each function's text and what it needs; :func:`library` emits
the ones a source uses, in dependency order.
"""
from __future__ import annotations

import math

HELPERS: dict[str, tuple[tuple[str, ...], str]] = {}


def helper(name: str, needs: tuple[str, ...], text: str) -> None:
    HELPERS[name] = (needs, text.strip("\n") + "\n")


helper("bits", (), """
typedef union { float f; int32_t i; } i21_bits;
""")
helper("round", (), """
/* nearbyintf vectorises (round to nearest even, no inexact); floorf/ceilf/truncf do not */
static inline float i21_round(float x) { return nearbyintf(x); }
static inline float i21_floor(float x) { float r = nearbyintf(x); return r > x ? r - 1.0f : r; }
static inline float i21_ceil(float x) { float r = nearbyintf(x); return r < x ? r + 1.0f : r; }
static inline float i21_trunc(float x) { return x >= 0.0f ? i21_floor(x) : i21_ceil(x); }
""")
helper("exp", ("bits",), """
/* 2^t = 2^n * p(t - n), degree-6 polynomial on [-0.5, 0.5]; 0 below -126, inf above 128 */
static inline float i21_exp2(float t) {
    float tc = t < -127.0f ? -127.0f : (t > 128.5f ? 128.5f : t);
    float n = nearbyintf(tc);
    float f = tc - n;
    float p = 1.5403530393381606e-4f;
    p = p * f + 1.3333558146428443e-3f; p = p * f + 9.6181291076284772e-3f;
    p = p * f + 5.5504108664821580e-2f; p = p * f + 2.4022650695910071e-1f;
    p = p * f + 6.9314718055994531e-1f; p = p * f + 1.0f;
    int32_t k = (int32_t)n, hi = k > 0;                         /* 2^128 = 2^127 * 2 */
    i21_bits e; e.i = (k + 127 - hi) << 23;
    float r = p * e.f * (hi ? 2.0f : 1.0f);
    r = t < -126.0f ? 0.0f : r;
    return t != t ? t : r;
}
/* e^x: n = round(x / ln 2), r = x - n ln 2 in two parts (Cody-Waite, exact product),
 * e^r by its Taylor series to r^7 (|r| <= 0.347: ~1 ulp); inf above 88.72, 0 below -87.3 */
static inline float i21_exp(float x) {
    float xc = x < -88.0f ? -88.0f : (x > 88.8f ? 88.8f : x);
    float n = nearbyintf(xc * 1.44269504088896341f);
    float r = xc - n * 0.693359375f;
    r = r + n * 2.12194440e-4f;
    float p = 1.98412698e-4f;
    p = p * r + 1.38888889e-3f; p = p * r + 8.33333333e-3f; p = p * r + 4.16666667e-2f;
    p = p * r + 1.66666667e-1f; p = p * r + 0.5f; p = p * r + 1.0f; p = p * r + 1.0f;
    int32_t k = (int32_t)n, hi = k > 0;                         /* 2^128 = 2^127 * 2 */
    i21_bits e; e.i = (k + 127 - hi) << 23;
    float out = p * e.f * (hi ? 2.0f : 1.0f);
    out = x < -87.33654f ? 0.0f : out;
    out = x > 88.72283f ? INFINITY : out;
    return x != x ? x : out;
}
""")
helper("expm1", ("exp",), """
static inline float i21_expm1(float x) {
    /* near 0 the series keeps the relative accuracy exp(x) - 1 loses */
    float s = x * (1.0f + x * (0.5f + x * (1.6666667e-1f + x * (4.1666668e-2f + x * (8.3333338e-3f
              + x * (1.3888889e-3f + x * 1.9841270e-4f))))));
    float l = i21_exp(x) - 1.0f;
    return (x > -0.35f && x < 0.35f) ? s : l;
}
""")
helper("log", ("bits",), """
/* ln x: x = 2^e * m with m in [sqrt(1/2), sqrt(2)), ln m = 2 atanh(s), s = (m-1)/(m+1) */
static inline float i21_log(float x) {
    float xs = x < 1.17549435e-38f ? x * 8388608.0f : x;      /* subnormals: scale by 2^23 */
    i21_bits u; u.f = xs;
    int32_t e = ((u.i >> 23) & 255) - 127;
    u.i = (u.i & 0x007fffff) | 0x3f800000;                     /* m in [1, 2) */
    float m = u.f;
    float big = m > 1.41421356f ? 1.0f : 0.0f;
    m = big > 0.0f ? m * 0.5f : m;
    float ef = (float)e + big - (x < 1.17549435e-38f ? 23.0f : 0.0f);
    float s = (m - 1.0f) / (m + 1.0f);
    float s2 = s * s;
    float p = 2.0f + s2 * (0.666666667f + s2 * (0.4f + s2 * (0.285714286f + s2 * (0.222222222f + s2 * 0.181818182f))));
    float r = s * p + ef * 0.693147180559945f;
    r = x == 0.0f ? -INFINITY : r;
    r = x < 0.0f ? NAN : r;
    r = x == INFINITY ? INFINITY : r;
    return x != x ? x : r;
}
""")
helper("log1p", ("log",), """
static inline float i21_log1p(float x) {
    float u = 1.0f + x;
    float d = u - 1.0f;
    /* Goldberg: log(u) * x / (u - 1) corrects the rounding of 1 + x (the divisor is made
       safe first: a division that may trap keeps the loop scalar) */
    float q = x / (d == 0.0f ? 1.0f : d);
    float lg = i21_log(u);           /* computed on every lane: a call under a select is a branch */
    float r = d == 0.0f ? x : lg * q;
    return u == INFINITY ? INFINITY : r;
}
""")
helper("sqrt", ("bits",), """
/* sqrtf keeps loops scalar here (errno); 1/sqrt by a bit trick and three Newton steps */
static inline float i21_rsqrt(float x) {
    float xs = x < 1e-30f ? x * 1.8446744e19f : x;           /* tiny: scale by 2^64 first */
    i21_bits u; u.f = xs; u.i = 0x5f375a86 - (u.i >> 1);
    float y = u.f, h = 0.5f * xs;
    y = y * (1.5f - h * y * y); y = y * (1.5f - h * y * y); y = y * (1.5f - h * y * y);
    y = x < 1e-30f ? y * 4.2949673e9f : y;
    y = x == INFINITY ? 0.0f : y;
    float z = 1.0f / (x == 0.0f ? x : 1.0f);                  /* +-inf at +-0, as 1/sqrt(+-0) */
    y = x == 0.0f ? z : y;
    return x < 0.0f || x != x ? NAN : y;
}
static inline float i21_sqrt(float x) {
    float xs = x < 1e-30f ? x * 1.8446744e19f : x;           /* tiny: scale by 2^64 first */
    float r = xs * i21_rsqrt(xs);
    r = x < 1e-30f ? r * 2.3283064e-10f : r;
    r = x == 0.0f ? 0.0f : r;
    r = x == INFINITY ? INFINITY : r;
    return x < 0.0f || x != x ? NAN : r;
}
""")
helper("tanh", ("exp",), """
static inline float i21_tanh(float x) {
    float a = x < 0.0f ? -x : x;
    float e = i21_exp(-2.0f * a);
    float big = (1.0f - e) / (1.0f + e);
    float x2 = x * x;          /* |x| < 0.55: odd polynomial, relative accuracy near 0 */
    float small = x * TANHP(x2);
    float r = x < 0.0f ? -big : big;
    r = a < 0.55f ? small : r;
    return x != x ? x : r;
}
""")
helper("sigmoid", ("exp",), """
static inline float i21_sigmoid(float x) {
    float e = i21_exp(-(x < 0.0f ? -x : x));   /* never overflows */
    float r = 1.0f / (1.0f + e);
    return x >= 0.0f ? r : e * r;
}
""")
helper("erf", ("exp",), """
/* erf: x·P(x²) below 1; 1 - exp(Q(|x|)) on [1, 4) (Q fits ln erfc); 1 beyond */
static inline float i21_erf(float x) {
    float a = x < 0.0f ? -x : x;
    float x2 = x * x;
    float small = x * ERFP(x2);
    float q = ERFQ(a);
    float big = 1.0f - i21_exp(q);
    big = a >= 4.0f ? 1.0f : big;
    float r = x < 0.0f ? -big : big;
    r = a < 1.0f ? small : r;
    return x != x ? x : r;
}
""")
helper("gelu", ("erf",), """
static inline float i21_gelu(float x) { return 0.5f * x * (1.0f + i21_erf(x * 0.707106781186547524f)); }
""")
helper("gelu_tanh", ("tanh",), """
static inline float i21_gelu_tanh(float x) {
    return 0.5f * x * (1.0f + i21_tanh(0.797884560802865356f * (x + 0.044715f * x * x * x)));
}
""")
helper("pow", ("exp", "log", "round"), """
/* x^y for a general y: exp(y ln|x|), with C's rules for negative x (integer y only) */
static inline float i21_pow(float x, float y) {
    float a = x < 0.0f ? -x : x;
    float r = i21_exp(y * i21_log(a));
    float yi = i21_round(y);
    int odd = yi == y && i21_floor(y * 0.5f) * 2.0f != y;
    r = x < 0.0f ? (yi == y ? (odd ? -r : r) : NAN) : r;
    r = y == 0.0f ? 1.0f : r;
    return x == 1.0f ? 1.0f : r;
}
""")


def _horner(coef, var: str) -> str:
    body = f"{coef[-1]:.9e}f"
    for c in reversed(coef[:-1]):
        body = f"({body} * {var} + {c:.9e}f)"
    return body


def _fitted() -> str:
    """Polynomials fitted once, at import, by least squares in float64 (deterministic):
    erf(x)/x and tanh(x)/x in x² near 0, ln erfc(a) on [1, 4)."""
    import numpy as np
    try:
        from scipy.special import erf, erfc
    except ImportError:   # pragma: no cover - scipy comes with kernel-tuner
        erf, erfc = np.vectorize(math.erf), np.vectorize(math.erfc)
    fit = np.polynomial.polynomial.polyfit
    x = np.linspace(1e-4, 1.0, 4001)
    erfp = fit(x * x, erf(x) / x, 7)
    x = np.linspace(1e-4, 0.56, 4001)
    tanhp = fit(x * x, np.tanh(x) / x, 6)
    a = np.linspace(1.0, 4.0, 4001)
    erfq = fit((a - 2.5) / 1.5, np.log(erfc(a)), 11)
    return (f"static inline float i21_erfp(float u) {{ return {_horner(erfp, 'u')}; }}\n"
            f"static inline float i21_tanhp(float u) {{ return {_horner(tanhp, 'u')}; }}\n"
            f"static inline float i21_erfq(float a) {{ float t = (a - 2.5f) * 0.666666667f; "
            f"return {_horner(erfq, 't')}; }}\n")


def library(names) -> str:
    """The helpers ``names`` need, each once, dependencies first."""
    order: list[str] = []

    def visit(n):
        if n in order:
            return
        for d in HELPERS[n][0]:
            visit(d)
        order.append(n)
    for n in sorted(set(names)):
        visit(n)
    parts = []
    if "erf" in order or "tanh" in order:
        parts.append(_fitted())
    for n in order:
        parts.append(HELPERS[n][1].replace("ERFQ", "i21_erfq").replace("ERFP", "i21_erfp")
                     .replace("TANHP", "i21_tanhp"))
    return "\n".join(parts)


# --------------------------------------------------------------------------- literals and ops

def lit(v) -> str:
    if isinstance(v, bool):
        return "1" if v else "0"
    v = float(v)
    if math.isnan(v):
        return "NAN"
    if math.isinf(v):
        return "INFINITY" if v > 0 else "(-INFINITY)"
    text = repr(float(v))
    if "e" not in text and "." not in text and "inf" not in text:
        text += ".0"
    return f"{text}f" if v >= 0 else f"({text}f)"


def _pow(args, attrs, lits):
    x, y = args
    e = lits[1]
    if e is not None and not isinstance(e, bool):
        e = float(e)
        small = {2.0: f"({x} * {x})", 3.0: f"({x} * {x} * {x})", 1.0: f"({x})", -1.0: f"(1.0f / {x})",
                 -2.0: f"(1.0f / ({x} * {x}))", 4.0: f"(({x} * {x}) * ({x} * {x}))"}
        if e in small:
            return small[e], ()
        if e == 0.5:
            return f"i21_sqrt({x})", ("sqrt",)
        if e == -0.5:
            return f"i21_rsqrt({x})", ("sqrt",)
        if e == 0.0:
            return "1.0f", ()
    return f"i21_pow({x}, {y})", ("pow",)


def _clamp(args, attrs, lits):
    (x,) = args
    out = x
    lo, hi = attrs.get("lo"), attrs.get("hi")
    # NaN passes through, as torch.clamp leaves it
    if lo is not None:
        out = f"({out} < {lit(lo)} ? {lit(lo)} : {out})"
    if hi is not None:
        out = f"({out} > {lit(hi)} ? {lit(hi)} : {out})"
    return out, ()


def _elu(args, attrs, lits):
    (x,) = args
    a, s, i = (attrs.get(k, 1.0) for k in ("alpha", "scale", "input_scale"))
    neg = f"{lit(s * a)} * i21_expm1(({x} < 0.0f ? {x} : 0.0f) * {lit(i)})"
    return f"({x} > 0.0f ? {lit(s)} * {x} : {neg})", ("expm1",)


def _u(fmt, *needs):
    return lambda args, attrs, lits: (fmt.format(*args), needs)


C_OPS = {
    "identity": _u("({0})"), "neg": _u("(-{0})"), "abs": _u("({0} < 0.0f ? -{0} : {0})"),
    "exp": _u("i21_exp({0})", "exp"), "exp2": _u("i21_exp2({0})", "exp"),
    "expm1": _u("i21_expm1({0})", "expm1"), "log": _u("i21_log({0})", "log"),
    "log2": _u("(i21_log({0}) * 1.44269504088896341f)", "log"),
    "log10": _u("(i21_log({0}) * 0.434294481903251828f)", "log"), "log1p": _u("i21_log1p({0})", "log1p"),
    "sqrt": _u("i21_sqrt({0})", "sqrt"), "rsqrt": _u("i21_rsqrt({0})", "sqrt"), "reciprocal": _u("(1.0f / {0})"),
    "tanh": _u("i21_tanh({0})", "tanh"), "sigmoid": _u("i21_sigmoid({0})", "sigmoid"),
    "relu": _u("({0} > 0.0f || {0} != {0} ? {0} : 0.0f)"), "erf": _u("i21_erf({0})", "erf"),
    "gelu": _u("i21_gelu({0})", "gelu"), "gelu_tanh": _u("i21_gelu_tanh({0})", "gelu_tanh"),
    "silu": _u("({0} * i21_sigmoid({0}))", "sigmoid"),
    "sign": _u("({0} > 0.0f ? 1.0f : ({0} < 0.0f ? -1.0f : {0}))"),
    "floor": _u("i21_floor({0})", "round"), "ceil": _u("i21_ceil({0})", "round"),
    "round": _u("i21_round({0})", "round"), "trunc": _u("i21_trunc({0})", "round"),
    "sin": _u("sinf({0})"), "cos": _u("cosf({0})"),
    "leaky_relu": lambda a, at, l: (f"({a[0]} > 0.0f ? {a[0]} : {a[0]} * {lit(at['slope'])})", ()),
    "elu": _elu, "clamp": _clamp,
    "add": _u("({0} + {1})"), "sub": _u("({0} - {1})"), "mul": _u("({0} * {1})"), "div": _u("({0} / {1})"),
    "pow": _pow,
    "maximum": _u("({0} != {0} || {0} > {1} ? {0} : {1})"), "minimum": _u("({0} != {0} || {0} < {1} ? {0} : {1})"),
    "fmod": _u("fmodf({0}, {1})"),
    "remainder": _u("({0} - i21_floor({0} / {1}) * {1})", "round"),
    "floordiv": _u("i21_floor({0} / {1})", "round"),
    "eq": _u("({0} == {1})"), "ne": _u("({0} != {1})"), "lt": _u("({0} < {1})"), "le": _u("({0} <= {1})"),
    "gt": _u("({0} > {1})"), "ge": _u("({0} >= {1})"),
    "and": _u("({0} && {1})"), "or": _u("({0} || {1})"), "xor": _u("(!({0}) != !({1}))"), "not": _u("(!({0}))"),
    "where": _u("({0} ? {1} : {2})"), "to_f32": _u("(float)({0})"), "to_bool": _u("({0} != 0.0f)"),
}


def c_op(op: str, args: list[str], attrs: dict, literals: list) -> tuple[str, tuple]:
    """(C expression, helpers needed) for pointwise ``op``; ``literals[i]`` is the literal
    operand i (or None when it is a tensor), for ops that specialise on constants."""
    return C_OPS[op](args, attrs, literals)
