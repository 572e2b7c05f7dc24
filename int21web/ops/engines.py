"""Engines in the web app: import (kernels.engine under it), search each phase with the same
run machinery as every goal, and time the best against the peers in one final session.

The generated code runs only in the harness: the import's captures and checks are sandboxed
children, the runs' evaluations go through the executor like any goal's, and the final
session is one ``swarm.judge.judge`` call.
"""
from __future__ import annotations

import contextlib
import time
from dataclasses import replace

from int21web.ops import models as m

PEERS = ["torch", "torch_compile", "onnxruntime", "openvino"]


class EngineRefused(ValueError):
    """The engine could not be made or run: ``message`` says why, ``failure`` the import's refusal."""

    def __init__(self, message: str, failure: dict | None = None):
        super().__init__(message)
        self.message, self.failure = message, failure or {}


def engine_import(*, model, name: str, user=None, prefill_seq=None, decode_past=None, greedy=None, batch: int = 1,
                  on_progress=None) -> m.Engine:
    """Import ``model`` (a kernels.engine.service.Model) as engine ``name``: its phases become
    imported problems (with their pages), the record is stored and mirrored in a row."""
    from kernels.engine import service
    from kernels.graph import store as ops_store
    if m.Engine.objects.filter(name=name).exists():
        raise EngineRefused(f"an engine named {name!r} exists; choose another name")
    wl_names = [service.workload_name(name, p) for p in ("prefill", "decode", "forward")]
    taken = m.ImportedOp.objects.filter(name__in=wl_names).values_list("name", flat=True)
    if taken:
        raise EngineRefused(f"a problem named {taken[0]!r} is already imported; choose another engine name")
    try:
        record = service.engine_import(model, name=name, batch=batch, prefill_seq=prefill_seq,
                                       decode_past=decode_past, greedy=greedy, on_progress=on_progress)
    except (service.EngineError, ValueError) as exc:
        raise EngineRefused(str(exc), getattr(exc, "failure", None)) from None
    for phase, info in record["phases"].items():
        path = ops_store.lookup(info["workload"])
        meta = ops_store.read_meta(path)
        summary = {k: meta[k] for k in ("name", "digest", "dims", "args", "distributions", "tolerance", "graph")}
        summary["shapes"] = [{"role": s["role"], "dims": s["dims"]} for s in meta["shapes"]]
        summary["engine"] = {"name": name, "phase": phase}
        m.ImportedOp.objects.update_or_create(
            name=info["workload"], defaults={"digest": meta["digest"], "summary": summary, "created_by": user,
                                             "source": (path / "problem.py").read_text(encoding="utf-8")})
    row, _ = m.Engine.objects.update_or_create(name=name, defaults={"record": record, "created_by": user})
    return row


def engine_row(name: str) -> m.Engine:
    row = m.Engine.objects.filter(name=name).first()
    if row is None:
        raise EngineRefused(f"no engine named {name!r}")
    return row


def engine_sync(name: str) -> m.Engine:
    """The row's copy of the record refreshed from the store (after a check or a greedy run)."""
    from kernels.engine import store
    row = engine_row(name)
    row.record = store.load(name)
    row.save(update_fields=["record"])
    return row


def engine_search(name: str, *, budget: int, population: int = 8, confirm: int = 3, phases=None, peers: bool = True,
                  user=None, progress=None, tune: int = 0, on_tune=None) -> dict:
    """A swarm goal per phase (``budget`` evaluations each, timed against the model in torch
    eager), then the best kernel of each timed once against every peer side by side in one
    session (torch eager, torch.compile, ONNX Runtime, OpenVINO where it imports). Returns
    ``{"correct", "status", "reason", "median_ms", "speedup", "groups", "evaluations",
    "engine_id", "phases": {phase: the same for that phase}}``; with one phase the top-level
    values are that phase's, with several ``median_ms`` and ``speedup`` are by phase.
    ``tune``: first tune each fusion group alone at that many points (search_tune), so the
    phase's search starts from the composed point; its report is the phase's ``tuned``.

    Everything here runs in this process, one phase after the other (the command line);
    ``int21web.ops.jobs`` runs the same steps as tasks (the API)."""
    from int21web.runs import services as rs
    from int21web.runs.embedded import current, embedded_worker
    from swarm.goals import GoalError
    chosen = search_phases(name, phases)
    if peers:
        search_prepare(name)
    out = {}
    for phase in chosen:
        t0 = time.monotonic()
        tuned = search_tune(name, phase, per_group=tune, on_progress=on_tune) if tune else None
        also = [progress(phase, budget)] if progress else None
        try:
            # a process that already serves the queues (the web app's embedded workers) needs no more
            with embedded_worker(orchestrate=False) if current() is None else contextlib.nullcontext():
                run_id = search_start(name, phase, budget=budget, population=population, confirm=confirm,
                                      user=user, also=also)
                rs.run_drive(run_id=run_id, also=also)
        except GoalError as exc:
            raise EngineRefused(f"{phase}: {exc}") from None
        out[phase] = search_settle(name, phase, run_id, peers=peers, seconds=time.monotonic() - t0, tuned=tuned)
    return search_report(name, out)


def search_phases(name: str, phases=None) -> list[str]:
    """The phases of ``name`` an engine run searches (all, or those named; an unknown one refused)."""
    record = engine_row(name).record
    chosen = [p for p in record["phases"] if not phases or p in phases]
    if not chosen:
        raise EngineRefused(f"{name} has no phase {', '.join(phases)} (it has {', '.join(record['phases'])})")
    return chosen


def search_prepare(name: str) -> None:
    """The ONNX exports, here (trusted), before any timing child needs them."""
    from kernels.engine import service
    service.prepare_peers(name)


def search_tune(name: str, phase: str, *, per_group: int, seed: int = 0, on_progress=None) -> dict:
    """Each fusion group of ``phase`` tuned alone (kernels.engine.tune), and the composed point
    remembered as a lesson of the phase's workload, where the phase's search starts (its
    ``seeded`` agent, generation 0); the groups' knobs also as lessons under their signature
    keys, for the next model with groups of the same kind. Returns the tuning's report."""
    from int21web.runs.services import fingerprint_key
    from int21web.runs.store import DjangoKnowledge
    from kernels.engine import breakdown, tune
    from swarm.knowledge import groups as group_lessons
    try:
        report = tune.tune(name, phase, per_group=per_group, seed=seed, on_progress=on_progress)
    except breakdown.BreakdownError as exc:
        raise EngineRefused(str(exc)) from None
    engine_sync(name)
    knowledge = DjangoKnowledge()
    for lesson in group_lessons.tuned(report, fingerprint_key("cpu")):
        knowledge.record(lesson)
    return report


def phase_goal(name: str, phase: str, *, budget: int, population: int = 8, confirm: int = 3):
    """The swarm goal that searches one phase of an engine."""
    from swarm.types import Budget, Goal
    info = engine_row(name).record["phases"][phase]
    return Goal(workload=info["workload"], target="cpu", population=population, confirm_top=confirm,
                budget=Budget(evaluations=budget, stagnation_generations=6))


def search_start(name: str, phase: str, *, budget: int, population: int = 8, confirm: int = 3, user=None,
                 also=None) -> int:
    """Start the run that searches ``phase`` (not driven yet); its id is kept on the row."""
    from int21web.runs import services as rs
    goal = phase_goal(name, phase, budget=budget, population=population, confirm=confirm)
    run_id = rs.run_start(goal=goal, started_by=user, also=also)
    row = engine_row(name)
    runs = dict(row.runs)
    runs[phase] = [*runs.get(phase, []), run_id]
    row.runs = runs
    row.save(update_fields=["runs"])
    return run_id


def search_settle(name: str, phase: str, run_id: int, *, peers: bool = True, seconds: float = 0.0,
                  tuned: dict | None = None) -> dict:
    """A finished search run's result for its phase: its best kernel, timed once more against
    every peer side by side when ``peers``; kept on the row as the phase's last result."""
    from int21web.runs import models as rm
    from int21web.runs.management.commands.swarm import run_summary
    from swarm.judge import judge
    from int21web.runs.store import goal_from
    row = engine_row(name)
    info = row.record["phases"][phase]
    t0 = time.monotonic()
    s = run_summary(run_id)
    best = s["best"] or {}
    res = {"phase": phase, "workload": info["workload"], "run_id": run_id, "correct": bool(best),
           "status": "ok" if best else "no_correct_kernel", "reason": s["reason"],
           "median_ms": best.get("median_ms"), "speedup": dict(best.get("speedup") or {}),
           "groups": info["groups"], "evaluations": s["evaluations"], "candidate_id": best.get("candidate_id")}
    if best and peers:
        cand = rm.Candidate.objects.get(pk=best["candidate_id"])
        goal = goal_from(rm.Run.objects.get(pk=run_id).spec)
        final, data = judge(replace(goal, eval_settings={"baselines": peers_of(info["workload"])}), cand.source,
                            cand.params)
        res["final_session"] = {"status": final.status, "median_ms": final.median_ms,
                                "speedup": final.speedup, "notes": data.get("notes", [])}
        if final.status == "ok":
            res["speedup"], res["median_ms"] = dict(final.speedup), final.median_ms
        else:
            res.update(correct=False, status=final.status,
                       reason=f"the final session against the peers: {final.reason}")
    if tuned is not None:
        res["tuned"] = {"evaluations": tuned["evaluations"], "groups": len(tuned["groups"]),
                        "moved": sum(1 for r in tuned["groups"] if r["knobs"]), "seconds": tuned["seconds"]}
        res["evaluations"] += tuned["evaluations"]
    res["minutes"] = round((seconds + time.monotonic() - t0) / 60, 2)
    row.results = {**row.results, phase: res}
    row.save(update_fields=["results"])
    return res


def search_report(name: str, phases: dict) -> dict:
    """The engine run's report over its phases' results, with the greedy-decode check run
    again on the best kernels the runs found (still in the sandbox) when both phases have one."""
    from int21web.runs import models as rm
    from kernels.engine import service
    row = engine_row(name)
    record = row.record
    report = summary(row, phases)
    best = {p: r.get("candidate_id") for p, r in (row.results or {}).items() if r.get("correct")}
    if record.get("greedy_shapes") and best.get("prefill") and best.get("decode"):
        cands = {p: rm.Candidate.objects.get(pk=cid) for p, cid in best.items() if p in ("prefill", "decode")}
        try:
            greedy = service.engine_greedy(name, sources={p: (c.source, c.params) for p, c in cands.items()})
        except service.EngineError as exc:
            greedy = {"passed": False, "failure": str(exc)}
        greedy["candidates"] = {p: c.id for p, c in cands.items()}
        report["greedy"] = {k: greedy.get(k) for k in ("passed", "agreed", "decisions", "near_ties",
                                                       "max_logit_error", "failure", "candidates")}
        engine_sync(name)
    return report


def peers_of(workload: str) -> list[str]:
    """The peers a phase is timed against: all four for a decoder or a checkpoint; torch eager
    and torch.compile for a module file (its model is the user's code: no trusted export to
    ONNX, docs/engine.md)."""
    from kernels import workloads
    have = {b.name for b in workloads.get(workload).baselines.get("cpu", ())}
    return [p for p in PEERS if p in have]


def summary(row: m.Engine, phases: dict) -> dict:
    one = len(phases) == 1
    first = next(iter(phases.values()))
    bad = [r for r in phases.values() if not r["correct"]]
    return {
        "correct": not bad and bool(phases),
        "status": bad[0]["status"] if bad else "ok",
        "reason": "; ".join(f"{r['phase']}: {r['reason']}" for r in phases.values() if r.get("reason")),
        "median_ms": first["median_ms"] if one else {p: r["median_ms"] for p, r in phases.items()},
        "speedup": first["speedup"] if one else {p: r["speedup"] for p, r in phases.items()},
        "groups": first["groups"] if one else {p: r["groups"] for p, r in phases.items()},
        "evaluations": sum(r["evaluations"] for r in phases.values()),
        "engine_id": row.id,
        "phases": phases,
    }


_DIM = {"prefill": "SEQ", "decode": "PAST"}


def engine_view(row: m.Engine) -> dict:
    """What ``engine show`` and GET /api/engines/<name> say of an engine."""
    rec = row.record
    phases = {}
    for phase, info in rec.get("phases", {}).items():
        best = (row.results or {}).get(phase) or {}
        phases[phase] = {
            "workload": info["workload"], "shapes": [s["dims"][_DIM.get(phase)] if _DIM.get(phase) else s["dims"]
                                                     for s in info["shapes"]],
            # lengths served by a shared unit besides the captured ones (kernels.codegen.dynamic)
            "ranges": info.get("ranges") or [],
            "groups": info["groups"], "families": info["families"], "knobs": info["knobs"],
            "source_bytes": info["source_bytes"], "arena": {k: info["arena"][k] for k in ("bytes", "bytes_no_reuse")},
            "validation": (rec.get("validation") or {}).get(phase),
            "best": {k: best.get(k) for k in ("correct", "median_ms", "speedup", "run_id", "evaluations")} if best else None,
            "breakdown": (rec.get("breakdown") or {}).get(phase),
        }
    greedy = rec.get("greedy")
    return {"name": row.name, "engine_id": row.id, "model": rec.get("model"), "batch": rec.get("batch"),
            "phases": phases, "runs": row.runs,
            "greedy": {k: greedy[k] for k in ("passed", "agreement", "agreed", "decisions", "near_ties",
                                               "max_logit_error", "failure")} if greedy else None}


def engine_breakdown(name: str, *, phases=None, seeds: int = 2, quick: bool = False, whole: bool = True,
                     on_progress=None) -> dict:
    """Each phase's groups timed one by one (kernels.engine.breakdown), at the knobs of the
    phase's best kernel where an ``engine run`` found one (its median is the whole phase's
    time when ``whole`` is off), else at the defaults. Returns ``{"engine", "phases": {phase:
    report}}``; the record (and the row's copy) keeps each report for the page."""
    from int21web.runs import models as rm
    from kernels.engine import breakdown, store
    row = engine_row(name)
    have = list(store.load(name).get("phases", {}))    # the record's order (the row's JSON copy sorts its keys)
    chosen = list(phases or have)
    missing = [p for p in chosen if p not in have]
    if missing:
        raise EngineRefused(f"{name} has no phase {', '.join(missing)} (it has {', '.join(have)})")
    out = {}
    for phase in chosen:
        best = (row.results or {}).get(phase) or {}
        cand = rm.Candidate.objects.filter(pk=best["candidate_id"]).first() if best.get("correct") and \
            best.get("candidate_id") else None
        say = (lambda d, t, what, _p=phase: on_progress(_p, d, t, what)) if on_progress else None
        try:
            out[phase] = breakdown.breakdown(
                name, phase, params=cand.params if cand else None,
                params_from=f"the best kernel of run {best.get('run_id')} (candidate #{cand.id})" if cand else "",
                whole=whole, whole_ms=best.get("median_ms") if cand else None, seeds=seeds, quick=quick,
                on_progress=say)
        except breakdown.BreakdownError as exc:
            raise EngineRefused(str(exc)) from None
    engine_sync(name)
    return {"engine": name, "phases": out}
