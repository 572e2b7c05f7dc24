"""Plotly figures as plain dicts (pure: data in, figure out; no Django, no I/O).

Pages embed them as JSON and draw them with the plotly.js served from our static files."""
from __future__ import annotations

ACCENT, MUTED = "#2f5bd3", "#8a93a5"
_LAYOUT = {"margin": {"l": 60, "r": 20, "t": 40, "b": 50}, "paper_bgcolor": "#fff", "plot_bgcolor": "#fff",
           "font": {"family": "system-ui, sans-serif", "size": 13}}


def timing_figure(timings: dict, speedup: dict | None = None, shape: str = "") -> dict:
    """Box + strip plot of the timed calls per implementation: the candidate first, then
    each baseline, with its speedup in the label. Outcomes without the raw samples draw
    the box from their quartiles."""
    speedup = speedup or {}
    order = ["candidate"] + sorted(n for n in timings if n != "candidate")
    data = []
    for name in order:
        t = timings.get(name)
        if not t:
            continue
        label = name if name == "candidate" else f"{name} ({speedup[name]:.2f}x)" if name in speedup else name
        trace = {"type": "box", "name": label, "boxmean": False,
                 "marker": {"color": ACCENT if name == "candidate" else MUTED, "size": 4},
                 "line": {"width": 1.5}, "hovertemplate": "%{y:.4f} ms<extra>" + name + "</extra>"}
        samples = t.get("samples_ms")
        if samples:
            trace.update(y=list(samples), boxpoints="all", jitter=0.4, pointpos=0)
        else:
            med = t["median_ms"]
            trace.update(q1=[t.get("q1_ms", med)], median=[med], q3=[t.get("q3_ms", med)],
                         lowerfence=[t.get("min_ms", med)], upperfence=[t.get("max_ms", t.get("q3_ms", med))],
                         x=[label])
        data.append(trace)
    title = "Time per call" + (f" at {shape}" if shape else "") + " (ms, lower is better)"
    layout = {**_LAYOUT, "title": {"text": title, "font": {"size": 14}}, "showlegend": False,
              "yaxis": {"title": {"text": "ms"}, "rangemode": "tozero", "gridcolor": "#e3e6eb"}}
    return {"data": data, "layout": layout}


def agent_payoff_figure(rows: list[dict]) -> dict:
    """Grouped bars: improvements per evaluation for each agent, one colour per
    workload/target. ``rows``: {agent, group, evaluations, improvements}."""
    groups = sorted({r["group"] for r in rows})
    agents = sorted({r["agent"] for r in rows})
    data = []
    for g in groups:
        by_agent = {r["agent"]: r for r in rows if r["group"] == g}
        ys, texts = [], []
        for a in agents:
            r = by_agent.get(a)
            ev = r["evaluations"] if r else 0
            ys.append(round(r["improvements"] / ev, 4) if r and ev else 0.0)
            texts.append(f"{r['improvements']} improvements in {ev} evaluations" if r else "not on the team")
        data.append({"type": "bar", "name": g, "x": agents, "y": ys, "text": texts, "textposition": "none",
                     "hovertemplate": "%{x}: %{y:.2f} per evaluation<br>%{text}<extra>" + g + "</extra>"})
    layout = {**_LAYOUT, "barmode": "group",
              "title": {"text": "Payoff per agent across runs (improvements per evaluation)", "font": {"size": 14}},
              "yaxis": {"title": {"text": "improvements / evaluation"}, "rangemode": "tozero",
                        "gridcolor": "#e3e6eb"},
              "legend": {"orientation": "h", "y": -0.2}}
    return {"data": data, "layout": layout}
