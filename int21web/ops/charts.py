"""Figures of the own-ops pages (pure: data in, Plotly figure dict out)."""
from __future__ import annotations

PALETTE = ["#2f5bd3", "#d3722f", "#2fa36b", "#a33fb5", "#b53f4f", "#3fa9b5", "#8a6d1f", "#5a5a5a"]
_LAYOUT = {"margin": {"l": 20, "r": 20, "t": 40, "b": 20}, "paper_bgcolor": "#fff", "plot_bgcolor": "#fff",
           "font": {"family": "system-ui, sans-serif", "size": 12}}


def graph_figure(graph: dict, groups: list[dict]) -> dict:
    """The captured graph drawn left to right by depth, each node coloured by the fusion group
    that computes it (grey: a view, or an input), with its op and shape on hover."""
    nodes = graph.get("nodes", [])
    values = [t["name"] for t in graph.get("inputs", []) + graph.get("params", [])]
    depth = {v: 0 for v in values}
    kinds = {t["name"]: t.get("role", "input") for t in graph.get("inputs", []) + graph.get("params", [])}
    for n in nodes:
        refs = [a["ref"] for a in n.get("args", []) if isinstance(a, dict) and "ref" in a]
        depth[n["name"]] = 1 + max((depth.get(r, 0) for r in refs), default=0)
    group_of = {}
    for g in groups:
        if g.get("form") == "unfused":
            continue
        for member in g.get("members", []):
            group_of.setdefault(member, g)
    rows: dict[int, int] = {}
    pos = {}
    for name in list(depth):
        d = depth[name]
        pos[name] = (d, rows.get(d, 0))
        rows[d] = rows.get(d, 0) + 1
    edge_x, edge_y = [], []
    for n in nodes:
        for a in n.get("args", []):
            if isinstance(a, dict) and "ref" in a and a["ref"] in pos:
                (x0, y0), (x1, y1) = pos[a["ref"]], pos[n["name"]]
                edge_x += [x0, x1, None]
                edge_y += [-y0, -y1, None]
    data = [{"type": "scatter", "mode": "lines", "x": edge_x, "y": edge_y, "hoverinfo": "skip",
             "line": {"color": "#c5cad3", "width": 1}, "showlegend": False}]
    by_group: dict[str, list] = {}
    for name, (x, y) in pos.items():
        g = group_of.get(name)
        key = f"group {g['id']}: {g['family']}" if g else ("weights" if kinds.get(name) == "param" else
                                                          "inputs" if name in kinds else "views")
        by_group.setdefault(key, []).append((name, x, y))
    op_of = {n["name"]: f"{n['op']} {n.get('shape')}" for n in nodes}
    for i, (key, pts) in enumerate(sorted(by_group.items())):
        colour = PALETTE[i % len(PALETTE)] if key.startswith("group") else "#9aa1ad"
        data.append({"type": "scatter", "mode": "markers+text", "name": key,
                     "x": [p[1] for p in pts], "y": [-p[2] for p in pts], "text": [p[0] for p in pts],
                     "textposition": "top center", "textfont": {"size": 9},
                     "hovertext": [f"{p[0]}: {op_of.get(p[0], kinds.get(p[0], ''))}" for p in pts],
                     "hoverinfo": "text", "marker": {"size": 14, "color": colour}})
    layout = {**_LAYOUT, "title": {"text": "Captured graph, coloured by fusion group", "font": {"size": 14}},
              "xaxis": {"visible": False}, "yaxis": {"visible": False}, "legend": {"orientation": "h"},
              "height": max(280, 90 * max(rows.values(), default=1))}
    return {"data": data, "layout": layout}


def speedup_figure(speedup: dict) -> dict:
    """The best kernel's speedup over each baseline (1x: as fast as it)."""
    names = sorted(speedup)
    return {"data": [{"type": "bar", "x": names, "y": [speedup[n] for n in names],
                      "marker": {"color": ["#2fa36b" if speedup[n] >= 1 else "#b53f4f" for n in names]},
                      "text": [f"{speedup[n]:.2f}x" for n in names], "textposition": "outside"}],
            "layout": {**_LAYOUT, "title": {"text": "Speedup of the best kernel (higher is better)", "font": {"size": 14}},
                       "yaxis": {"title": {"text": "x the baseline"}, "rangemode": "tozero"},
                       "shapes": [{"type": "line", "xref": "paper", "x0": 0, "x1": 1, "y0": 1, "y1": 1,
                                   "line": {"dash": "dot", "color": "#8a93a5"}}]}}


def arena_figure(arena: dict) -> dict:
    """The arena plan of one shape: each intermediate a rectangle from the group that writes
    it to the last that reads it (x: the driver's schedule) over its offsets (y: KiB), so
    memory reused by liveness shows as rectangles stacked at the same height, side by side."""
    data = []
    buffers = sorted(arena.get("buffers", []), key=lambda b: (b["offset"], b["first"]))
    for i, b in enumerate(buffers):
        x0, x1 = b["first"] - 0.4, b["last"] + 0.4
        y0, y1 = b["offset"] * 4 / 1024, (b["offset"] + b["size"]) * 4 / 1024
        data.append({"type": "scatter", "mode": "lines", "fill": "toself", "showlegend": False,
                     "x": [x0, x1, x1, x0, x0], "y": [y0, y0, y1, y1, y0],
                     "line": {"width": 1, "color": PALETTE[i % len(PALETTE)]},
                     "hoverinfo": "text",
                     "text": f"{b['name']}: {b['size'] * 4 / 1024:.1f} KiB at {y0:.1f} KiB, live g-steps "
                             f"{b['first']}..{b['last']}"})
    bytes_, none = arena.get("bytes") or 0, arena.get("bytes_no_reuse") or 0
    title = (f"Arena plan: {bytes_ / 1024:.1f} KiB with reuse, {none / 1024:.1f} KiB without "
             f"({len(buffers)} intermediates)")
    layout = {**_LAYOUT, "title": {"text": title, "font": {"size": 14}}, "height": 320,
              "xaxis": {"title": {"text": "schedule step (fusion group in driver order)"}},
              "yaxis": {"title": {"text": "offset (KiB)"}, "rangemode": "tozero"}}
    return {"data": data, "layout": layout}


def engine_speed_figure(results: dict) -> dict:
    """Each phase's best engine against each peer (x the peer's time: higher is better)."""
    peers = sorted({p for r in results.values() for p in (r.get("speedup") or {})})
    data = [{"type": "bar", "name": phase, "x": peers, "y": [(r.get("speedup") or {}).get(p) for p in peers],
             "text": [f"{(r.get('speedup') or {}).get(p, 0):.2f}x" for p in peers], "textposition": "outside"}
            for phase, r in results.items()]
    return {"data": data,
            "layout": {**_LAYOUT, "barmode": "group",
                       "title": {"text": "End-to-end speedup of the best engine over each peer", "font": {"size": 14}},
                       "yaxis": {"title": {"text": "x the peer"}, "rangemode": "tozero"},
                       "shapes": [{"type": "line", "xref": "paper", "x0": 0, "x1": 1, "y0": 1, "y1": 1,
                                   "line": {"dash": "dot", "color": "#8a93a5"}}]}}


def group_cost_figure(groups: list[dict]) -> dict:
    """Each fusion group's share of the phase's FLOPs and bytes moved, as the generator counts
    them at the timed shape (an estimate of where the time goes; not a timing)."""
    rows = [g for g in groups if g.get("form") in (None, "fused")]
    flops = sum(g.get("flops") or 0 for g in rows) or 1.0
    nbytes = sum(g.get("bytes") or 0 for g in rows) or 1.0
    labels = [f"g{g['id']} {g['family']}" for g in rows]
    data = [{"type": "bar", "name": "share of FLOPs", "x": labels, "y": [100 * (g.get("flops") or 0) / flops for g in rows]},
            {"type": "bar", "name": "share of bytes", "x": labels, "y": [100 * (g.get("bytes") or 0) / nbytes for g in rows]}]
    return {"data": data, "layout": {**_LAYOUT, "barmode": "group", "height": 300,
                                     "title": {"text": "Where the work is: each group's share (generator's counts, "
                                                       "not timed)", "font": {"size": 14}},
                                     "yaxis": {"title": {"text": "% of the phase"}, "rangemode": "tozero"},
                                     "legend": {"orientation": "h"}}}


def breakdown_figure(report: dict) -> dict:
    """Each distinct group's time in the phase (its median alone × how often it runs), as
    horizontal bars, largest on top; the sum and the whole phase's median in the title.
    Groups the harness did not time are listed at zero with the reason on hover."""
    rows = sorted(report.get("rows", []), key=lambda r: r.get("total_ms") or 0.0)
    labels = [f"{','.join(f'g{i}' for i in r['ids'])}: {r['description']}"
              + (f" (x{r['count']})" if r["count"] > 1 else "") for r in rows]
    labels = [lb if len(lb) <= 70 else lb[:67] + "..." for lb in labels]
    timed = [r.get("median_ms") is not None for r in rows]
    hover = [(f"{r['count']} x {r['median_ms']:.4f} ms (IQR {r['iqr_ms']:.4f}) = {r['total_ms']:.4f} ms, "
              f"{100 * (r.get('share') or 0):.1f}% of the sum") if ok else r.get("reason", "not timed")
             for r, ok in zip(rows, timed)]
    data = [{"type": "bar", "orientation": "h", "y": labels, "x": [r.get("total_ms") or 0.0 for r in rows],
             "text": [share_text(r.get("share")) if ok else "not timed" for r, ok in zip(rows, timed)],
             "textposition": "outside", "hovertext": hover, "hoverinfo": "text",
             "marker": {"color": [PALETTE[0] if ok else "#b53f4f" for ok in timed]}}]
    title = "Time per group, each timed alone"
    if report.get("sum_ms") is not None:
        title += f": sum {_ms(report['sum_ms'])}"
    if report.get("whole_ms"):
        title += f", whole phase {_ms(report['whole_ms'])}"
    layout = {**_LAYOUT, "title": {"text": title, "font": {"size": 14}}, "height": max(260, 60 + 22 * len(rows)),
              "margin": {**_LAYOUT["margin"], "l": 20, "b": 60},
              "xaxis": {"title": {"text": "ms per phase call (median alone x times it runs)"}, "rangemode": "tozero"},
              "yaxis": {"automargin": True, "tickfont": {"size": 10}}}
    return {"data": data, "layout": layout}


def share_text(x: float | None) -> str:
    """A share of a sum in words: ``46.8%``, ``<0.1%``."""
    if x is None:
        return ""
    return "<0.1%" if x < 0.001 else f"{100 * x:.1f}%"


def _ms(x: float) -> str:
    return f"{x:.1f} ms" if x >= 10 else f"{x:.3g} ms"
