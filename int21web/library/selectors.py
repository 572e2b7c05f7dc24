"""Reads for the candidate, review, library and knowledge pages (and the API): no writes."""
from __future__ import annotations

from collections import defaultdict

from django.http import Http404

from int21web.accounts.roles import has_role
from int21web.library import charts, diffs
from int21web.library.highlight import source_html
from int21web.library.models import AuditEntry, Comment, KernelVersion, Proposal
from int21web.library.policy import goal_met
from int21web.runs import models as rm
from kernels import workloads


# --------------------------------------------------------------------------- the gate's reads

def current_result(candidate: rm.Candidate) -> dict:
    """The candidate's latest judged result: the newest finished Evaluation (status, score,
    speedup), else the result the run recorded (a cached outcome has no Evaluation row). A run's
    confirmation (Remeasurement rounds, scored by the median) counts as newer than the
    evaluations it followed; a later re-check (the gate's) is newer than it."""
    ev = (rm.Evaluation.objects.filter(candidate=candidate, finished_at__isnull=False)
          .order_by("-finished_at", "-attempt").first())
    res = candidate.result or {}
    if len(res.get("measurements") or []) > 1 and ev is not None and _confirmed_last(candidate, ev):
        # confirmed after its newest evaluation: the confirmed result (median) is the current one
        return {"evaluation": ev, "status": res.get("status", candidate.status), "score": res.get("score", 0.0),
                "speedup": res.get("speedup") or {}, "measurements": res["measurements"], "outcome": ev.outcome}
    if ev is not None and ev.outcome:
        res = ev.outcome.get("result") or {}
        return {"evaluation": ev, "status": ev.status or res.get("status", ""), "score": res.get("score", 0.0),
                "speedup": res.get("speedup") or ev.outcome.get("speedup") or {}, "outcome": ev.outcome}
    return {"evaluation": None, "status": res.get("status", candidate.status), "score": res.get("score", 0.0),
            "speedup": res.get("speedup") or {}, "measurements": res.get("measurements") or [], "outcome": None}


def _confirmed_last(candidate: rm.Candidate, ev: rm.Evaluation) -> bool:
    rounds = rm.Remeasurement.objects.filter(candidate=candidate, finished_at__isnull=False)
    if rounds.exists():
        return rounds.filter(finished_at__gte=ev.finished_at).exists()
    # measured again in the run's own process (no rounds stored): newer unless re-checked since
    return rm.Evaluation.objects.filter(candidate=candidate, finished_at__isnull=False).count() == 1


def goal_check(candidate: rm.Candidate, result: dict | None = None) -> tuple[bool, str]:
    """Does the candidate (its ``result``, else its current one) meet its goal? (policy.goal_met)"""
    return goal_met(result or current_result(candidate), candidate_id=candidate.id, spec=candidate.run.spec)


def approvals(proposal: Proposal):
    """The approvals that count: given and not dismissed."""
    return proposal.reviews.filter(verdict="approve", dismissed_at__isnull=True)


# --------------------------------------------------------------------------- pages


def _stage(outcome: dict | None, name: str) -> dict:
    return next((s for s in (outcome or {}).get("stages", []) if s.get("name") == name), {})


def timed_shape(workload: str, outcome: dict | None) -> str:
    """The benchmark's shape as the workload writes it (a JSON object's key order is not
    kept by PostgreSQL's jsonb, so the dims are put back in the workload's order)."""
    dims = _stage(outcome, "benchmark").get("details", {}).get("shape") or {}
    try:
        order = workloads.get(workload).shape_dims
    except Exception:
        order = tuple(dims)
    return "x".join(str(dims[d]) for d in order if d in dims)


def correctness_rows(outcome: dict | None) -> list[dict]:
    """One row per shape × distribution (seeds folded): worst errors per output, pass/fail."""
    cases = _stage(outcome, "correctness").get("details", {}).get("cases", [])
    groups: dict[tuple, dict] = {}
    for c in cases:
        key = (c["kind"], c["shape"], c["distribution"])
        row = groups.setdefault(key, {"kind": c["kind"], "shape": c["shape"], "distribution": c["distribution"],
                                      "seeds": [], "max_abs_err": None, "max_rel_err": None, "passed": True,
                                      "problems": [], "checked": True})
        row["seeds"].append(c["seed"])
        row["passed"] = row["passed"] and bool(c.get("passed"))
        row["problems"] += [p for p in (c.get("problems") or []) if p not in row["problems"]]
        if not c.get("outputs"):
            row["checked"] = False
        for out in (c.get("outputs") or {}).values():
            for k in ("max_abs_err", "max_rel_err"):
                v = out.get(k)
                if v is not None and (row[k] is None or v > row[k]):
                    row[k] = v
            if out.get("why") and out["why"] not in row["problems"]:
                row["problems"].append(out["why"])
    return list(groups.values())


ROOFLINE = {"achieved_gbs": "achieved GB/s", "achieved_gflops": "achieved GFLOP/s",
            "pct_of_copy_bandwidth": "% of this host's copy bandwidth",
            "session_copy_gbs": "GB/s of a streaming copy timed beside it",
            "pct_of_session_copy": "% of that copy", "pct_of_peak_flops": "% of peak FLOP/s"}
RESOURCE_LABELS = {"cpu_per_wall": "CPU seconds per wall second", "registers": "registers per thread",
                   "spill_stores": "spill stores (bytes)", "spill_loads": "spill loads (bytes)",
                   "shared_bytes": "shared memory (bytes)", "stack_bytes": "stack (bytes)"}


def resource_report(outcome: dict | None) -> dict:
    comp, audit, sanity = _stage(outcome, "compile"), _stage(outcome, "audit"), _stage(outcome, "sanity")
    bench = _stage(outcome, "benchmark").get("details", {})
    return {
        "resources": [(RESOURCE_LABELS.get(k, k.replace("_", " ")), round(v, 3) if isinstance(v, float) else v)
                      for k, v in ((outcome or {}).get("resources") or {}).items()],
        "compile_seconds": comp.get("seconds"),
        "compile_log": comp.get("details", {}).get("log", ""),
        "imports": audit.get("details", {}).get("imports", []),
        "text_bytes": audit.get("details", {}).get("text_bytes"),
        "roofline": [(label, sanity["details"][k]) for k, label in ROOFLINE.items()
                     if isinstance(sanity.get("details", {}).get(k), (int, float))],
        "ceilings": sanity.get("details", {}).get("ceilings", {}),
        "flags": sanity.get("details", {}).get("flags", []),
        "blas": bench.get("blas", []),
        "isolation": _stage(outcome, "correctness").get("details", {}).get("isolation", []),
    }


def candidate_page(candidate_id: int, user) -> dict:
    cand = rm.Candidate.objects.select_related("run", "run__goal", "run__started_by").filter(pk=candidate_id).first()
    if cand is None:
        raise Http404(f"there is no candidate #{candidate_id}")
    spec = cand.run.spec
    target = spec.get("target", "cpu")
    parents = list(rm.Candidate.objects.filter(pk__in=cand.parents).only("id", "agent", "status", "score", "run_id"))
    parents.sort(key=lambda p: cand.parents.index(p.id))
    children = [c for c in cand.run.candidates.only("id", "parents", "agent", "status", "score").order_by("id")
                if cand.id in (c.parents or [])]
    parent = parents[0] if parents else None
    side, unified = [], []
    if parent is not None:
        old, new = diffs.kernel_text(parent.source, parent.params), diffs.kernel_text(cand.source, cand.params)
        side = diffs.side_by_side(old, new)
        unified = diffs.unified_rows(cand.diff or diffs.unified_text(old, new, f"#{parent.id}", f"#{cand.id}"))
    elif cand.diff:
        unified = diffs.unified_rows(cand.diff)
    result = current_result(cand)
    outcome = result["outcome"]
    evaluations = list(rm.Evaluation.objects.filter(candidate=cand).order_by("attempt"))
    shape = timed_shape(spec["workload"], outcome)
    timing = charts.timing_figure(outcome.get("timings", {}), outcome.get("speedup", {}), shape) \
        if outcome and outcome.get("timings") else None
    meets, why = goal_check(cand, result)
    open_prop = cand.proposals.filter(state__in=Proposal.OPEN_STATES).first()
    return {
        "cand": cand, "run": cand.run, "goal": cand.run.goal, "spec": spec, "target": target,
        "source_html": source_html(cand.source, target),
        "parents": parents, "children": children, "parent": parent,
        "missing_parents": [p for p in cand.parents if p not in {x.id for x in parents}],
        "side_by_side": side, "unified": unified,
        "result": result, "outcome": outcome, "evaluations": evaluations,
        "stages": (outcome or {}).get("stages", []),
        "correctness": correctness_rows(outcome),
        "correctness_summary": _stage(outcome, "correctness").get("summary", ""),
        "timing_figure": timing, "timings": (outcome or {}).get("timings", {}),
        "resources": resource_report(outcome),
        "fingerprint": (outcome or {}).get("fingerprint", {}),
        "comments": list(Comment.objects.filter(candidate=cand).order_by("id")),
        "proposals": list(cand.proposals.all().prefetch_related("reviews")),
        "meets_goal": meets, "meets_why": why, "open_proposal": open_prop,
        "can_comment": has_role(user, "engineer") or has_role(user, "reviewer"),
        "can_propose": meets and open_prop is None and has_role(user, "engineer"),
        "can_reevaluate": has_role(user, "engineer"),
    }


def proposal_row(p: Proposal) -> dict:
    active = list(approvals(p))
    return {"p": p, "cand": p.candidate, "spec": p.candidate.run.spec, "approvals": active,
            "approved": len(active), "required": p.required_approvals,
            "dismissed": [r for r in p.reviews.all() if r.dismissed_at],
            "changes": [r for r in p.reviews.all() if r.verdict == "changes"],
            "result": current_result(p.candidate)}


def review_queue(user) -> dict:
    base = Proposal.objects.select_related("candidate__run", "proposed_by").prefetch_related("reviews")
    base = base.filter(engine_proposal__isnull=True)      # an engine's phases are reviewed with their engine
    open_ = [proposal_row(p) for p in base.filter(state__in=Proposal.OPEN_STATES).order_by("id")]
    decided = [proposal_row(p) for p in base.exclude(state__in=Proposal.OPEN_STATES).order_by("-updated_at")[:20]]
    proposed = set(Proposal.objects.filter(state__in=Proposal.OPEN_STATES + ("promoted",))
                   .values_list("candidate_id", flat=True))
    ready = []
    for c in (rm.Candidate.objects.filter(status="ok", score__gt=0).select_related("run")
              .order_by("-score")[:200]):
        if c.id in proposed:
            continue
        if goal_check(c)[0]:
            ready.append(c)
        if len(ready) >= 20:
            break
    for row in open_:
        row["self_run"] = user.is_authenticated and row["cand"].run.started_by_id == user.pk
        row["already"] = any(r.reviewer_id == user.pk for r in row["approvals"])
    return {"open": open_, "decided": decided, "ready": ready,
            "is_reviewer": has_role(user, "reviewer"), "is_engineer": has_role(user, "engineer"),
            "audit": list(AuditEntry.objects.select_related("proposal")[:30]), **engine_queue()}


def open_proposal_count() -> int:
    from int21web.library.models import EngineProposal
    return (Proposal.objects.filter(state__in=Proposal.OPEN_STATES, engine_proposal__isnull=True).count()
            + EngineProposal.objects.filter(state__in=EngineProposal.OPEN_STATES).count())


def library_index() -> dict:
    groups = defaultdict(lambda: {"champions": [], "versions": []})
    for kv in KernelVersion.objects.select_related("candidate", "promoted_by").order_by("workload", "target",
                                                                                        "-version"):
        g = groups[(kv.workload, kv.target)]
        g["versions"].append(kv)
        if kv.champion:
            g["champions"].append(kv)
    return {"groups": [{"workload": w, "target": t, **g} for (w, t), g in sorted(groups.items())],
            "engine_versions": engine_versions()}


def kernel_detail(kernel_id: int) -> dict:
    kv = KernelVersion.objects.select_related("candidate__run", "proposal").filter(pk=kernel_id).first()
    if kv is None:
        raise Http404(f"there is no promoted kernel #{kernel_id}")
    recheck = next((e for e in reversed(kv.manifest.get("evaluations", []))
                    if e["id"] == kv.manifest.get("held_out_recheck", {}).get("evaluation")), None)
    outcome = (recheck or {}).get("outcome") or {}
    shape = timed_shape(kv.workload, outcome)
    return {"kv": kv, "m": kv.manifest, "source_html": source_html(kv.source, kv.target),
            "correctness": correctness_rows(outcome),
            "timing_figure": charts.timing_figure(outcome["timings"], outcome.get("speedup"), shape)
            if outcome.get("timings") else None,
            "resources": resource_report(outcome),
            "others": KernelVersion.objects.filter(workload=kv.workload, target=kv.target).exclude(pk=kv.pk)}


def knowledge(workload: str = "", target: str = "") -> dict:
    lessons = rm.Lesson.objects.order_by("workload", "target", "kind", "-id")
    runs = rm.Run.objects.all()
    if workload:
        lessons, runs = lessons.filter(workload=workload), runs.filter(spec__workload=workload)
    if target:
        lessons, runs = lessons.filter(target=target), runs.filter(spec__target=target)
    lessons = list(lessons[:500])
    known = set(rm.Candidate.objects.filter(pk__in={e for l in lessons for e in (l.evidence or [])
                                                    if isinstance(e, int)}).values_list("id", flat=True))
    by_group = defaultdict(list)
    for lesson in lessons:
        lesson.evidence_links = [e for e in (lesson.evidence or []) if e in known]
        by_group[(lesson.workload, lesson.target)].append(lesson)
    totals: dict[tuple, dict] = {}
    for run in runs.only("id", "spec", "agent_stats"):
        group = f"{run.spec.get('workload')}/{run.spec.get('target', 'cpu')}"
        for agent, s in (run.agent_stats or {}).items():
            row = totals.setdefault((group, agent), {"group": group, "agent": agent, "evaluations": 0,
                                                     "improvements": 0, "runs": 0, "slots": 0})
            row["evaluations"] += int(s.get("total_evaluations", 0))
            row["improvements"] += int(s.get("total_improvements", 0))
            row["runs"] += 1
    for gen in rm.Generation.objects.filter(run__in=runs).select_related("run").only("allocation", "run__spec"):
        group = f"{gen.run.spec.get('workload')}/{gen.run.spec.get('target', 'cpu')}"
        for agent, n in (gen.allocation or {}).items():
            if (group, agent) in totals and isinstance(n, int):
                totals[(group, agent)]["slots"] += n
    payoff = sorted(totals.values(), key=lambda r: (r["group"], -r["improvements"], r["agent"]))
    for r in payoff:
        r["rate"] = r["improvements"] / r["evaluations"] if r["evaluations"] else 0.0
    return {"groups": [{"workload": w, "target": t, "lessons": ls} for (w, t), ls in sorted(by_group.items())],
            "payoff": payoff, "figure": charts.agent_payoff_figure(payoff) if payoff else None,
            "workload": workload, "target": target,
            "workloads": sorted(set(rm.Lesson.objects.values_list("workload", flat=True))),
            "targets": sorted(set(rm.Lesson.objects.values_list("target", flat=True)))}


# --------------------------------------------------------------------------- engines

def _engine_phase_row(prop: Proposal) -> dict:
    from kernels.engine import release
    cand = prop.candidate
    result = current_result(cand)
    try:
        groups = release.group_summary(cand.run.spec["workload"], cand.params)
    except (LookupError, OSError, ValueError):
        groups = []             # the phase's import is gone from this host's ops store
    return {"p": prop, "phase": prop.phase, "cand": cand, "result": result, "meets": goal_check(cand, result),
            "correctness": correctness_rows(result.get("outcome")), "groups": groups,
            "reviews": list(prop.reviews.all()), "approved": approvals(prop).count()}


def engine_review(proposal_id: int, user) -> dict:
    """An engine proposal as reviewers see it: every phase's candidate with its verdict
    evidence (status, speedups, correctness by shape) and its fusion groups as tuned."""
    from int21web.library.engines import engine_approvals
    from int21web.library.models import EngineProposal
    ep = EngineProposal.objects.select_related("engine", "proposed_by").filter(pk=proposal_id).first()
    if ep is None:
        raise Http404(f"No engine proposal #{proposal_id}")
    phases = [_engine_phase_row(p) for p in ep.phases.select_related("candidate__run", "recheck").order_by("phase")]
    names = engine_approvals(ep)
    uid = user.pk if user.is_authenticated else None
    return {"ep": ep, "phases": phases, "approvals": names, "required": ep.required_approvals,
            "self_run": any(r["cand"].run.started_by_id == uid for r in phases if uid is not None),
            "already": user.is_authenticated and user.get_username() in names,
            "version": getattr(ep, "version", None) if hasattr(ep, "version") else None,
            "is_reviewer": has_role(user, "reviewer"), "is_engineer": has_role(user, "engineer"),
            "audit": list(AuditEntry.objects.filter(engine_proposal=ep).order_by("-id"))}


def engine_queue() -> dict:
    from int21web.library.engines import engine_approvals
    from int21web.library.models import EngineProposal
    rows = EngineProposal.objects.select_related("engine", "proposed_by").prefetch_related("phases")
    pack = [{"ep": ep, "approved": len(engine_approvals(ep)), "phases": sorted(p.phase for p in ep.phases.all())}
            for ep in rows.order_by("-id")[:50]]
    return {"engines_open": [r for r in pack if r["ep"].state in EngineProposal.OPEN_STATES],
            "engines_decided": [r for r in pack if r["ep"].state not in EngineProposal.OPEN_STATES][:20]}


def engine_gate_for(engine) -> dict:
    """What the engine page says of the gate: its proposals and versions, and whether every
    phase has a champion to propose."""
    from int21web.library.engines import champion_candidates
    champions = champion_candidates(engine)
    phases = list((engine.record or {}).get("phases") or {})
    return {"proposals": list(engine.proposals.order_by("-id")[:10]),
            "versions": list(engine.versions.order_by("-version")),
            "proposable": bool(phases) and all(p in champions for p in phases)
            and not engine.proposals.filter(state__in=("open", "rechecking")).exists()}


def engine_version_detail(version_id: int) -> dict:
    from int21web.library.models import EngineVersion
    ver = EngineVersion.objects.select_related("proposal", "promoted_by").filter(pk=version_id).first()
    if ver is None:
        raise Http404(f"No engine version #{version_id}")
    return {"ver": ver, "m": ver.manifest}


def engine_versions() -> list:
    from int21web.library.models import EngineVersion
    return list(EngineVersion.objects.order_by("engine_name", "-version"))


def engine_proposal_json(ep) -> dict:
    """The API's engine proposal: its state, approvals and each phase's candidate and result."""
    from int21web.library.engines import engine_approvals
    phases = {}
    for prop in ep.phases.select_related("candidate__run", "recheck").order_by("phase"):
        result = current_result(prop.candidate)
        phases[prop.phase] = {"proposal": prop.id, "candidate": prop.candidate_id, "state": prop.state,
                              "reason": prop.reason, "status": result["status"], "score": result["score"],
                              "speedup": result["speedup"], "approvals": approvals(prop).count(),
                              "recheck": {"evaluation": prop.recheck_id, "status": prop.recheck.status or None}
                              if prop.recheck_id else None}
    version = getattr(ep, "version", None) if hasattr(ep, "version") else None
    return {"id": ep.id, "engine": ep.engine.name, "state": ep.state, "reason": ep.reason, "note": ep.note,
            "required_approvals": ep.required_approvals, "approvals": engine_approvals(ep),
            "proposed_by": ep.proposed_by.get_username() if ep.proposed_by else None, "phases": phases,
            "version": {"id": version.id, "version": version.version} if version else None,
            "page": f"/reviews/engines/{ep.id}/"}


def engine_version_json(ver, detail: bool = False) -> dict:
    out = {"id": ver.id, "engine": ver.engine_name, "version": ver.version,
           "phases": {p: {"source_sha256": i["source_sha256"], "params": i["params"], "entry_point": i["entry_point"]}
                      for p, i in ver.manifest.get("phases", {}).items()},
           "weights_sha256": (ver.manifest.get("weights") or {}).get("sha256"),
           "approvals": ver.manifest.get("approvals"), "promoted_at": ver.manifest.get("promoted_at"),
           "download": f"/api/engines/{ver.engine_name}/versions/{ver.version}/download"}
    if detail:
        out["manifest"] = ver.manifest
    return out
