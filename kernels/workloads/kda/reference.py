"""Float64 reference for Kimi Delta Attention (gated delta rule with per-channel decay).

For every batch b and head h, with a state S of shape (K, V) that starts at zero:

    S   = diag(exp(g_t)) S                      (per key channel decay)
    S   = S + beta_t k_t (v_t - S^T k_t)^T      (delta rule)
    o_t = scale * S^T q_t

Vectorised over (B, H): one python step per time step, each on (B, H, K, V) arrays.
"""
import numpy as np


def kda_recurrent(q, k, v, g, beta, scale):
    """The recurrence in float64 on [B, T, H, *] arrays; returns o [B, T, H, V]."""
    q = np.asarray(q, dtype=np.float64)
    k = np.asarray(k, dtype=np.float64)
    v = np.asarray(v, dtype=np.float64)
    d = np.exp(np.asarray(g, dtype=np.float64))
    beta = np.asarray(beta, dtype=np.float64)
    B, T, H, K = q.shape
    V = v.shape[-1]
    S = np.zeros((B, H, K, V))
    o = np.empty((B, T, H, V))
    kS = np.empty((B, H, V))
    for t in range(T):
        kt = k[:, t]                                    # (B, H, K)
        S *= d[:, t, :, :, None]
        np.einsum("bhk,bhkv->bhv", kt, S, out=kS)
        u = (v[:, t] - kS) * beta[:, t, :, None]        # (B, H, V)
        S += kt[..., :, None] * u[..., None, :]
        np.einsum("bhk,bhkv->bhv", q[:, t], S, out=o[:, t])
    o *= float(scale)
    return o


def reference(inputs: dict, shape) -> dict:
    return {"o": kda_recurrent(inputs["q"], inputs["k"], inputs["v"], inputs["g"], inputs["beta"],
                               inputs["scale"])}
