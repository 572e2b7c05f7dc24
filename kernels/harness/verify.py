"""Judging outputs against the float64 reference, in the trusted process."""
from __future__ import annotations

import hashlib

import numpy as np

from kernels.spec import Tolerance


def input_digest(a: np.ndarray) -> str:
    """Same digest the child computes over its guarded input copy (float32 bytes)."""
    return hashlib.blake2b(np.ascontiguousarray(a, dtype=np.float32).view(np.uint8),
                           digest_size=16).hexdigest()


def compare(out: np.ndarray, ref: np.ndarray, tol: Tolerance, ref32: np.ndarray | None = None) -> dict:
    """A report with ``passed`` and the evidence: max errors, bad count, first bad index.

    Large outputs first get a float32 pass with a safety margin that covers rounding the
    reference to float32; only if that is not conclusive is the exact float64 check run.
    """
    report = {"shape": list(ref.shape)}
    if out.shape != ref.shape:
        return {**report, "passed": False, "why": f"output has shape {out.shape}, expected {ref.shape}"}
    if ref32 is not None and tol.rel_rmse is None and out.dtype == np.float32:
        fast = _fast_pass(out, ref32, tol)
        if fast is not None:
            return {**report, **fast}
    out64 = out.astype(np.float64)
    ref_finite = np.isfinite(ref)
    bad_nonfinite = ~np.isfinite(out64) & ref_finite
    # Where the reference itself is non-finite, the output must match it exactly (inf sign, nan).
    special = ~ref_finite
    special_bad = special & ~((out64 == ref) | (np.isnan(out64) & np.isnan(ref)))
    with np.errstate(invalid="ignore", over="ignore"):
        diff = np.where(ref_finite & np.isfinite(out64), np.abs(out64 - ref), 0.0)
        rel = diff / np.maximum(np.abs(ref), 1e-30)
    report["max_abs_err"] = float(diff.max()) if diff.size else 0.0
    report["max_rel_err"] = float(np.where(np.abs(ref) > tol.atol, rel, 0.0).max()) if diff.size else 0.0
    report["nonfinite"] = int(bad_nonfinite.sum() + special_bad.sum())
    if tol.rel_rmse is not None:
        num = np.sqrt(np.mean(np.where(ref_finite, (out64 - ref) ** 2, 0.0))) if ref.size else 0.0
        den = np.sqrt(np.mean(np.where(ref_finite, ref ** 2, 0.0))) if ref.size else 1.0
        rrmse = float(num / den) if den > 0 else float(num)
        report["rel_rmse"] = rrmse
        passed = report["nonfinite"] == 0 and np.isfinite(rrmse) and rrmse <= tol.rel_rmse
        bad = bad_nonfinite | special_bad
        report["bad"] = int(bad.sum())
        if not passed:
            report["why"] = (f"{report['nonfinite']} non-finite value(s) where the reference is finite"
                             if report["nonfinite"] else
                             f"relative RMSE {rrmse:.3g} exceeds {tol.rel_rmse:g}")
    else:
        with np.errstate(invalid="ignore"):
            over = ref_finite & (diff > tol.atol + tol.rtol * np.abs(ref))
        bad = over | bad_nonfinite | special_bad
        report["bad"] = int(bad.sum())
        passed = report["bad"] == 0
        if not passed:
            idx = tuple(int(i) for i in np.argwhere(bad)[0])
            report["first_bad"] = {"index": list(idx), "got": _num(out64[idx]), "expected": _num(ref[idx])}
            if report["nonfinite"]:
                report["why"] = (f"{report['nonfinite']} non-finite value(s) where the reference is finite "
                                 f"(first at {list(idx)}: got {_num(out64[idx])}, expected {_num(ref[idx])})")
            else:
                report["why"] = (f"{report['bad']} of {ref.size} values outside {tol.describe()} "
                                 f"(max abs err {report['max_abs_err']:.3g}; first at {list(idx)}: "
                                 f"got {_num(out64[idx])}, expected {_num(ref[idx])})")
    report["passed"] = bool(passed)
    return report


def _fast_pass(out: np.ndarray, ref32: np.ndarray, tol: Tolerance) -> dict | None:
    if not (np.isfinite(out).all() and np.isfinite(ref32).all()):
        return None
    diff = np.abs(out - ref32)
    mag = np.abs(ref32)
    # float32 rounding of ref and of the subtraction is below 2.5e-7 relative: stay clear of it.
    if not (diff <= (tol.atol + (tol.rtol - 2.5e-7) * mag) * 0.999).all():
        return None
    with np.errstate(divide="ignore", invalid="ignore"):
        rel = np.where(mag > tol.atol, diff / mag, 0.0)
    return {"passed": True, "max_abs_err": float(diff.max()) if diff.size else 0.0,
            "max_rel_err": float(rel.max()) if rel.size else 0.0, "nonfinite": 0, "bad": 0,
            "method": "float32 with margin"}


def _num(x) -> float | str:
    x = float(x)
    return x if np.isfinite(x) else str(x)
