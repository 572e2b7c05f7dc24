"""A NumPy model of exactly what ``cuda_chunked.cu`` computes: the same chunks, the same
8-step secondary blocks and exponent factorisation, the same order of the products, and
the precision knob's rounding (PREC 0: fp32 throughout; 1: the tensor-core products take
TF32 operands; 3: 3xTF32, hi/lo splits, lo·hi + hi·lo + hi·hi). Tests hold it against the
float64 reference (``reference.py``), so a GPU run only has to confirm the CUDA translation.

Per (b, h) and chunk of C steps (zero-padded past T), with G the within-chunk cumulative
log decay (per key channel, non-increasing since g <= 0), secondary blocks a of 8 steps,
Gs[a] = G at the end of block a-1 (0 for a = 0) and Ge[a] = G at the end of block a:

    Lk_i = k_i e^(G_i - Gs[a(i)])      Lq_i = q_i e^(G_i - Gs[a(i)])     (factors <= 1)
    Rt_j = k_j e^(Ge[b(j)] - G_j)                                         (<= 1)
    M[a][b] = e^(Gs[a] - Ge[b]),  b <= a                    (<= 1 for b < a; e^(8 steps) for b = a)
    A_ij = beta_i  sum_c Lk_ic M[a][b]_c Rt_jc   (j < i)    P_ij = scale sum_c Lq_ic M[a][b]_c Rt_jc (j <= i)
    Kt = Lk e^Gs   Qt = scale Lq e^Gs   Kh = Rt e^(G_C - Ge)   Gam = e^(G_C)    (all factors <= 1)
    U  = (I + A)^-1 beta (V - Kt S)     (forward substitution, row by row)
    O  = Qt S + P U                     S <- Gam S + Kh^T U

Every exponent is <= 0 except M's diagonal blocks (at most 8 steps of decay: finite while
eight consecutive log decays sum above about -88), so nothing overflows however fast the decay.
"""
from __future__ import annotations

import numpy as np

SUB = 8   # secondary block (steps): the diagonal factor spans at most this many decays


def tf32(x: np.ndarray) -> np.ndarray:
    """Round float32 to TF32 (10 mantissa bits), to nearest, ties away from zero (cvt.rna)."""
    b = np.ascontiguousarray(x, dtype=np.float32).view(np.uint32)
    r = ((b + np.uint32(0x1000)) & np.uint32(0xFFFFE000)).view(np.float32)
    return np.where(np.isfinite(x), r, x).astype(np.float32)


def _mm(a: np.ndarray, b: np.ndarray, prec: int) -> np.ndarray:
    """A tensor-core product as the kernel makes it (fp32 accumulation)."""
    a = a.astype(np.float32)
    b = b.astype(np.float32)
    if prec == 0:
        return a @ b
    ah, bh = tf32(a), tf32(b)
    if prec == 1:
        return ah @ bh
    al, bl = tf32(a - ah), tf32(b - bh)
    return al @ bh + ah @ bl + ah @ bh


def kda_chunked(q, k, v, g, beta, scale, chunk: int = 64, prec: int = 3) -> np.ndarray:
    """o [B, T, H, V] from float32 inputs, as cuda_chunked.cu computes it."""
    f = np.float32
    B, T, H, K = q.shape
    V = v.shape[-1]
    C = chunk
    o = np.zeros((B, T, H, V), f)
    for b in range(B):
        for h in range(H):
            S = np.zeros((K, V), f)
            for t0 in range(0, T, C):
                n = min(C, T - t0)
                kc, qc, gc, vc = (np.zeros((C, w), f) for w in (K, K, K, V))
                bc = np.zeros(C, f)
                kc[:n], qc[:n], gc[:n], vc[:n] = k[b, t0:t0 + n, h], q[b, t0:t0 + n, h], g[b, t0:t0 + n, h], \
                    v[b, t0:t0 + n, h]
                bc[:n] = beta[b, t0:t0 + n, h]
                G = np.cumsum(gc, axis=0, dtype=f)
                Ge = G[SUB - 1::SUB]                                   # [nb, K]
                Gs = np.vstack([np.zeros((1, K), f), Ge[:-1]])         # [nb, K]
                blk = np.arange(C) // SUB
                Lk = kc * np.exp(G - Gs[blk])
                Lq = qc * np.exp(G - Gs[blk])
                Rt = kc * np.exp(Ge[blk] - G)
                A = np.zeros((C, C), f)
                P = np.zeros((C, C), f)
                for i in range(C):
                    for j in range(i + 1):
                        m = np.exp(Gs[blk[i]] - Ge[blk[j]])
                        term = m * Rt[j]
                        P[i, j] = f(scale) * np.dot(Lq[i], term, )
                        if j < i:
                            A[i, j] = bc[i] * np.dot(Lk[i], term)
                Kt = Lk * np.exp(Gs[blk])
                Qt = Lq * (f(scale) * np.exp(Gs[blk]))
                Kh = Rt * np.exp(G[C - 1] - Ge[blk])
                Gam = np.exp(G[C - 1])
                X = _mm(Kt, S, prec)
                U = bc[:, None] * (vc - X)
                for i in range(1, C):                                   # (I + A) U = rhs
                    U[i] -= A[i, :i] @ U[:i]
                O = _mm(Qt, S, prec) + _mm(P, U, prec)
                S = Gam[:, None] * S + _mm(Kh.T, U, prec)
                o[b, t0:t0 + n, h] = O[:n]
    return o
