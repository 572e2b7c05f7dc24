"""The greedy-decode check: a small trusted loop that steps a candidate the way a server
would (prefill a prompt, then decode one token at a time against a growing KV cache) beside
a reference stepped the same way, and reports how far apart they are.

A **step callable** is ``step(inputs, kv, pos) -> (logits, kv_rows)`` on NumPy arrays:

- prefill: ``step(inputs [batch, t, ...], None, 0)`` -> ``(logits [batch, t, vocab],
  kv [layers, 2, batch, kv_heads, t, head_dim])``;
- decode:  ``step(inputs [batch, 1, ...], kv [.., pos, ..], pos)`` -> ``(logits
  [batch, 1, vocab], kv_new [.., 1, ..])``, the rows for position ``pos``.

``inputs`` are hidden states (float32 ``[.., hidden]``: what the engines take) when the loop
is given ``embed``, else token ids (int64). :func:`torch_step` wraps the torch model; a
generated engine plugs in through :func:`phase_step` (its prefill and decode callables).

**Teacher forcing by the reference.** Both sides are fed the reference's greedy token at
every step, so each step compares the two on the same history even after a disagreement;
each side keeps (and grows) its own KV cache, so the candidate's errors accumulate in its
cache as they would in use. A disagreement counts as agreement, reported as a **near-tie**,
when the candidate's pick is within tolerance of the reference's best logit
(``ref[pick] >= ref[best] - (atol + rtol |ref[best]|)``): the top-2 are then tied within
what float32 can tell apart. A candidate that raises, returns a wrong shape or a non-finite
logit is a failure in the report (a value), never an exception; the reference raising is a
fault of ours and propagates.
"""
from dataclasses import asdict, dataclass, field
from typing import Callable

import numpy as np

Step = Callable[[np.ndarray, "np.ndarray | None", int], tuple]


@dataclass(frozen=True)
class StepReport:
    """One phase call. ``tokens``: the reference's greedy pick per sequence (what both sides
    are fed next); ``candidate_tokens``: the candidate's; ``near_ties``: sequences whose
    disagreement was a near-tie; ``margin``: the reference's smallest top-1 - top-2 gap."""

    step: int
    position: int
    max_abs_error: float
    tokens: list
    candidate_tokens: list
    agreed: int
    near_ties: list
    margin: float


@dataclass
class GreedyReport:
    prefill: StepReport | None = None
    steps: list = field(default_factory=list)      # decode steps only
    failure: str | None = None

    @property
    def decisions(self) -> int:
        return sum(len(s.tokens) for s in self.steps)

    @property
    def agreed(self) -> int:
        return sum(s.agreed for s in self.steps)

    @property
    def agreement(self) -> float:
        """Fraction of decode decisions (steps x sequences) that agree, near-ties included."""
        return self.agreed / self.decisions if self.decisions else 0.0

    @property
    def near_ties(self) -> int:
        return sum(len(s.near_ties) for s in self.steps)

    @property
    def max_logit_error(self) -> float:
        errs = [s.max_abs_error for s in ([self.prefill] if self.prefill else []) + self.steps]
        return max(errs) if errs else float("nan")

    @property
    def passed(self) -> bool:
        prefill_ok = self.prefill is not None and self.prefill.agreed == len(self.prefill.tokens)
        return self.failure is None and prefill_ok and self.agreed == self.decisions

    def to_json(self) -> dict:
        return {"passed": self.passed, "failure": self.failure, "agreement": self.agreement,
                "agreed": self.agreed, "decisions": self.decisions, "near_ties": self.near_ties,
                "max_logit_error": self.max_logit_error,
                "prefill": asdict(self.prefill) if self.prefill else None,
                "steps": [asdict(s) for s in self.steps]}


def greedy_check(candidate: Step, reference: Step, prompt, steps: int, *,
                 embed: Callable | None = None, atol: float = 1e-4, rtol: float = 1e-4) -> GreedyReport:
    """Prefill ``prompt`` (int64 ids ``[batch, t]``) and decode ``steps`` tokens with both
    callables; see the module docstring for the rules."""
    prompt = np.asarray(prompt, dtype=np.int64)
    if prompt.ndim != 2 or prompt.shape[1] < 1:
        raise ValueError(f"prompt must be token ids [batch, t] with t >= 1, got shape {prompt.shape}")
    feed = (lambda ids: np.ascontiguousarray(embed(ids), dtype=np.float32)) if embed else (lambda ids: ids)
    report = GreedyReport()
    inputs = feed(prompt)
    ref_logits, ref_kv = reference(inputs, None, 0)
    out = _call(candidate, inputs, None, 0, ref_logits, ref_kv, "prefill")
    if isinstance(out, str):
        report.failure = out
        return report
    logits, kv = out
    report.prefill = _compare(0, 0, ref_logits, logits, atol, rtol)
    pos = prompt.shape[1]
    for k in range(1, steps + 1):
        ids = np.asarray(report.steps[-1].tokens if report.steps else report.prefill.tokens,
                         dtype=np.int64).reshape(-1, 1)
        inputs = feed(ids)
        ref_logits, ref_rows = reference(inputs, ref_kv, pos)
        out = _call(candidate, inputs, kv, pos, ref_logits, ref_rows, f"decode step {k}")
        if isinstance(out, str):
            report.failure = out
            return report
        logits, rows = out
        report.steps.append(_compare(k, pos, ref_logits, logits, atol, rtol))
        ref_kv = np.concatenate((ref_kv, ref_rows), axis=4)
        kv = np.concatenate((kv, rows), axis=4)
        pos += 1
    return report


def _call(candidate, inputs, kv, pos, ref_logits, ref_kv, where):
    """The candidate's (logits, kv) as it returned them (its cache goes back to it in its own
    dtype), or a sentence saying what was wrong."""
    try:
        logits, rows = candidate(inputs, kv, pos)
    except Exception as exc:  # a bad candidate is a value
        return f"{where} at position {pos}: the candidate raised {type(exc).__name__}: {exc}"
    logits, rows = np.asarray(logits), np.asarray(rows)
    for name, got, want in (("logits", logits, ref_logits), ("kv", rows, ref_kv)):
        if got.shape != np.shape(want):
            return f"{where} at position {pos}: {name} has shape {got.shape}, expected {np.shape(want)}"
        if not np.issubdtype(got.dtype, np.floating):
            return f"{where} at position {pos}: {name} has dtype {got.dtype}, expected floats"
        if not np.isfinite(got).all():
            return f"{where} at position {pos}: {name} has non-finite values"
    return logits, rows


def _compare(step, pos, ref, got, atol, rtol) -> StepReport:
    ref, got = np.asarray(ref, dtype=np.float64), np.asarray(got, dtype=np.float64)
    last_ref, last_got = ref[:, -1, :], got[:, -1, :]
    best = last_ref.argmax(axis=1)
    pick = last_got.argmax(axis=1)
    rows = np.arange(len(best))
    top = last_ref[rows, best]
    tol = atol + rtol * np.abs(top)
    tied = (pick != best) & (last_ref[rows, pick] >= top - tol)
    two = np.sort(last_ref, axis=1)[:, -2:] if last_ref.shape[1] > 1 else np.zeros((len(best), 2))
    return StepReport(step=step, position=pos, max_abs_error=float(np.abs(ref - got).max()),
                      tokens=best.tolist(), candidate_tokens=pick.tolist(),
                      agreed=int(((pick == best) | tied).sum()), near_ties=rows[tied].tolist(),
                      margin=float((two[:, 1] - two[:, 0]).min()))


# --------------------------------------------------------------------------- step callables

def torch_step(lm, *, dtype=None) -> Step:
    """The torch model as a step callable on hidden states (float32 in; ``dtype`` =
    ``torch.float64`` runs a float64 copy of the model, for a reference finer than float32)."""
    import copy

    import torch
    model = copy.deepcopy(lm).to(dtype) if dtype is not None else lm
    dt = dtype or torch.float32

    def step(inputs, kv, pos):
        with torch.inference_mode():
            x = torch.from_numpy(np.asarray(inputs)).to(dt)
            if kv is None:
                if pos != 0:
                    raise ValueError(f"a prefill starts at position 0, got {pos}")
                logits, rows = model.prefill(x)
            else:
                if kv.shape[4] != pos:
                    raise ValueError(f"the cache holds {kv.shape[4]} positions, not {pos}")
                logits, rows = model.decode(x, torch.from_numpy(np.asarray(kv)).to(dt))
            return logits.numpy(), rows.numpy()
    return step


def phase_step(prefill: Callable, decode: Callable) -> Step:
    """Two phase callables (``prefill(x) -> (logits, kv)``, ``decode(x, kv) -> (logits,
    kv_new)``, NumPy in and out: a generated engine's two entry points) as one step callable."""
    def step(inputs, kv, pos):
        if kv is None:
            return prefill(inputs)
        if kv.shape[4] != pos:
            raise ValueError(f"the cache holds {kv.shape[4]} positions, not {pos}")
        return decode(inputs, kv)
    return step


def embedder(lm) -> Callable:
    """Token ids -> hidden states with ``lm``'s embedding (the driver's lookup)."""
    table = lm.model.embed_tokens.weight.detach().numpy()

    def embed(ids):
        return table[np.asarray(ids, dtype=np.int64)]
    return embed
