"""Reads of the own-ops app: the problems, and one problem's page."""
from __future__ import annotations

import json

from django.http import Http404

from int21web.ops import charts
from int21web.ops import models as m


def problems() -> list[dict]:
    return [{"name": op.name, "summary": op.summary, "created_at": op.created_at,
             "created_by": op.created_by.get_username() if op.created_by else ""}
            for op in m.ImportedOp.objects.select_related("created_by")]


def problem_page(name: str) -> dict:
    """The problem's graph (drawn, with its fusion groups), its ABI and shapes, the generated
    kernel, and the best kernel the swarm found for it: its diff from the best before it, its
    correctness report, and its speed against torch eager and torch.compile."""
    from kernels import workloads
    from kernels.graph import store
    from kernels.spec import SpecError
    from int21web.library import diffs
    from int21web.library.highlight import source_html
    from int21web.library.selectors import correctness_rows, current_result
    from int21web.library.charts import timing_figure
    from int21web.runs import models as rm
    try:
        wl = workloads.get(name)
    except SpecError:
        raise Http404(f"No imported problem named {name!r}")
    path = store.lookup(name)
    if path is None:
        raise Http404(f"{name} is not an imported problem")
    meta = store.read_meta(path)
    graph_json = json.loads((path / "shapes" / "0" / "graph.json").read_text())
    row = m.ImportedOp.objects.filter(name=name).first()
    best, previous = None, None
    ranked = list(rm.Candidate.objects.filter(run__spec__workload=name, status="ok").order_by("-score", "id")[:50])
    if ranked:
        best = ranked[0]
        earlier = [c for c in ranked[1:] if c.id < best.id]
        previous = earlier[0] if earlier else None
    best_view = None
    if best is not None:
        result = current_result(best)
        outcome = result["outcome"] or {}
        diff = []
        if previous is not None:
            diff = diffs.unified_rows(diffs.unified_text(diffs.kernel_text(previous.source, previous.params),
                                                         diffs.kernel_text(best.source, best.params),
                                                         f"#{previous.id}", f"#{best.id}"))
        speed = result.get("speedup") or {}
        best_view = {"cand": best, "previous": previous, "diff": diff, "speedup": speed,
                     "correctness": correctness_rows(outcome),
                     "timing": timing_figure(outcome.get("timings", {}), speed) if outcome.get("timings") else None,
                     "speed_figure": charts.speedup_figure(speed)}
    return {
        "w": wl.describe(), "meta": meta, "row": row,
        "graph_figure": charts.graph_figure(graph_json, meta.get("groups", [])),
        "groups": [g for g in meta.get("groups", []) if g.get("form") != "unfused"],
        "kernel_html": source_html((path / "kernel.c").read_text(), "cpu"),
        "best": best_view,
        "runs": list(rm.Run.objects.filter(spec__workload=name).order_by("-id")[:10]),
    }


def engines() -> list[dict]:
    return [{"name": e.name, "record": e.record, "results": e.results, "created_at": e.created_at,
             "created_by": e.created_by.get_username() if e.created_by else ""}
            for e in m.Engine.objects.select_related("created_by")]


def engine_page(name: str) -> dict:
    """An engine: its model, and per phase the graph drawn by fusion group, the arena plan,
    the validation, the best kernel's speedups against each peer, links to the phase's
    problem page (every group's code is there) and its runs."""
    from kernels.engine import store as engine_store
    from kernels.graph import store
    from int21web.runs import models as rm
    row = m.Engine.objects.filter(name=name).select_related("created_by").first()
    if row is None:
        raise Http404(f"No engine named {name!r}")
    try:
        record = engine_store.load(name)   # the store's record is the newest (checks write it)
    except (engine_store.EngineNotFound, ValueError):
        record = row.record
    phases = []
    for phase, info in record.get("phases", {}).items():
        path = store.lookup(info["workload"])
        view = {"phase": phase, "info": info, "graph_json_id": f"graph-data-{phase}",
                "arena_json_id": f"arena-data-{phase}", "cost_json_id": f"cost-data-{phase}", "best": (row.results or {}).get(phase),
                "validation": (record.get("validation") or {}).get(phase), "graph_figure": None, "arenas": [],
                "runs": list(rm.Run.objects.filter(pk__in=(row.runs or {}).get(phase, [])).order_by("-id"))}
        if path is not None:
            meta = store.read_meta(path)
            graph_json = json.loads((path / "shapes" / "0" / "graph.json").read_text())
            view["graph_figure"] = charts.graph_figure(graph_json, meta.get("groups", []))
            view["groups"] = [g for g in meta.get("groups", []) if g.get("form") != "unfused"]
            view["cost_figure"] = charts.group_cost_figure(meta.get("groups", []))
            shapes = (meta.get("arena") or {}).get("shapes", [])
            view["arena_figure"] = charts.arena_figure(shapes[0]) if shapes else None
            view["arenas"] = [{"dims": a.get("dims"), "bytes": a.get("bytes"), "bytes_no_reuse": a.get("bytes_no_reuse"),
                               "reuse": a.get("reuse"), "buffers": len(a.get("buffers", []))} for a in shapes]
        view["breakdown"] = (record.get("breakdown") or {}).get(phase)
        view["breakdown_json_id"] = f"breakdown-data-{phase}"
        if view["breakdown"]:
            view["breakdown_figure"] = charts.breakdown_figure(view["breakdown"])
            view["breakdown_rows"] = [{**r, "share_text": charts.share_text(r.get("share"))}
                                      for r in sorted(view["breakdown"]["rows"], key=lambda r: -(r.get("total_ms") or 0.0))]
        phases.append(view)
    results = {p: r for p, r in (row.results or {}).items() if r.get("speedup")}
    return {"engine": row, "record": record, "config": (record.get("model") or {}).get("config") or {},
            "phases": phases, "greedy": record.get("greedy"),
            "speed_figure": charts.engine_speed_figure(results) if results else None}
