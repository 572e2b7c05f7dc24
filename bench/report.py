"""A bench result (JSON) → docs/benchmarks.md (tables, with how to run and how it measures)
and a self-contained HTML report (Plotly charts, plotly.js embedded from the installed
package, no CDN). Pure: data in, text out."""
from __future__ import annotations

import html
import re
import statistics

from bench.gpu import gpu_lines
from bench.searchers import KT_STRATEGIES

LABELS = {"swarm_cold": "swarm (cold)", "swarm_warm": "swarm (warm)", "kt_bayes_opt": "Kernel Tuner bayes_opt",
          "kt_genetic_algorithm": "Kernel Tuner genetic_algorithm", "optuna_tpe": "Optuna TPE",
          "random": "random search"}
KINDS = (("numpy", "NumPy/OpenBLAS"), ("torch_eager", "torch eager"), ("torch_compile", "torch.compile"))

METHOD = f"""\
## How to run

```sh
make bench                                   # the full run (under 90 minutes on a 2-core host)
.venv/bin/python -m bench peers --quick     # small shapes and budgets (under 10 minutes)
.venv/bin/python -m bench peers --workload softmax --budgets 25,50,100,200 --seeds 5 --deadline-minutes 120
```

The full run times the kernels at the shapes of the swarm issue's targets (softmax,
rmsnorm, layernorm 4096×4096; matmul 1024³ and 2048³; kda 1×1024×4×64×64), 3 harness
sessions each, and searches every workload with budgets 25 and 50 and 3 seeds on cheaper
shapes of the same kind (1024×4096 rows; kda 1×512×4×64×64; matmul at 1024³ itself, since
the cache blocking that wins on a cube that fits in cache is not the one that wins at the
targets' sizes), so that it fits in 90 minutes on a 2-core host; the best configuration
found is then timed at the target shapes. Larger budgets take longer: e.g. `--workload softmax --budgets 25,50,100,200
--deadline-minutes 120`.

`--quick` uses small shapes, budgets 10/20/40, 3 seeds and one session per kernel; it
searches softmax only (`--search W` to choose) and finds the other workloads' kernels with
one fixed-budget swarm run each. Its kernel figures are indicative, not at the targets'
shapes, so their targets are shown but not assessed.

Options: `--quick`, `--workload W` (repeatable; default all), `--budgets 25,50,100`,
`--seeds N` (default 3), `--shape W=SEARCH[:KERNEL,...]` (e.g. `softmax=4096x2048`),
`--search W` (search only these workloads; the others get one fixed-budget swarm run),
`--searchers swarm_cold,random,...`, `--sessions N` (harness sessions per kernel
comparison), `--min-calls N` / `--search-min-calls N` (timed calls per implementation in
kernel comparisons / search measurements), `--timing-budget S` (seconds of timing per harness
session, both; default the harness's), `--no-compile` (leave out torch.compile),
`--no-gpu`, `--gpu-only` (or `python -m bench gpu`, the GPU section alone),
`--deadline-minutes M` (tasks past it are skipped and reported), `--out DIR` (default
`bench/results`), `--docs PATH` (default `docs/benchmarks.md`; `--docs -` writes none),
`--json` (print the result on stdout), `--render RESULT.json` (measure nothing: assess the
targets of an earlier result again with the current rules, and rewrite it, its HTML report
and this page), `--confirm-top N` / `--confirm-extra N` (below). A progress bar runs on stderr. Outputs:
`bench/results/<date>-<host>[-quick].json` (everything, including every measured point),
the `.html` report beside it, and this page.

## How it measures

- **One run, one harness.** Everything is measured in this one process run, and every
  kernel — the factory's and every configuration a searcher picks — is evaluated by the
  sandboxed harness (static checks, compile, audit, correctness on many shapes and
  distributions, then timing interleaved with the baselines in a fresh child process).
  Untrusted kernel code never runs in the bench process.
- **Kernels.** The factory's best is the library champion when a library exists (hook:
  `kernels.library.champion(workload, target)`), otherwise the best configuration the
  swarm's cold runs found. It is evaluated in N sessions against every CPU baseline of
  the workload: NumPy (OpenBLAS for matmul), torch eager writing into a preallocated
  output, and `torch.compile` (Inductor C++/OpenMP). A ratio is a baseline's median over
  the candidate's median within one session; tables give the median over sessions and
  the min–max range. NumPy runs OpenBLAS's native kernel: the sandbox child's
  environment never carries `OPENBLAS_CORETYPE`/`OPENBLAS_L2_SIZE` (their values in the
  bench process and the BLAS the child loaded are recorded).
- **Roofline.** STREAM-style copy/triad bandwidth and peak FMA throughput are measured at
  the start and again at the end of the run (`kernels/harness/roofline.c`; the FMA probe
  with 256-bit and, on AVX-512 hosts, 512-bit vectors), keeping the higher of each figure,
  since a busy host only ever makes them low. % of copy bandwidth = (bytes read +
  written) / time ÷ copy bandwidth; % of roofline = achieved FLOP/s ÷ min(peak, intensity ×
  copy bandwidth). Each timing session also times a streaming copy of the kernel's input
  into its output, interleaved with the kernel and the baselines (the harness's copy probe):
  "beside it" is the kernel's bandwidth as a share of that copy's, the memory system's pace
  in the very minute the kernel was timed. The ≥ 80%-of-copy target is held against that
  copy where the sessions timed one (the same phase of the host, and the stricter copy:
  streaming stores skip the read-for-ownership STREAM's plain copy pays); the run's probes,
  which on this shared host moved from 48 to 75 GB/s within ten minutes, are shown beside it.
- **Search, on equal terms.** Every searcher works on the same template, design space and
  constraints at the same shape, and every configuration it picks is scored by the same
  harness measurement (speedup over the strongest baseline measured alongside; a failing
  candidate scores 0). Each distinct configuration is measured once per bench run and that
  measurement is shared by all searchers (Kernel Tuner's "simulation mode", filled lazily),
  so they face the same noise; an evaluation is a distinct configuration a searcher asked
  for. The swarm, Optuna and random search do not depend on the budget, so one run at the
  largest budget gives the best found at each smaller budget; Kernel Tuner's strategies do
  (population sizes, the evaluation limit), so they run once per budget.
- **Confirmed best.** One measurement is one draw from a noisy host, and the highest of a
  few hundred draws is an optimist. Once every searcher has run, the best points
  (`--confirm-top`, default 6) are measured again (`--confirm-extra`, default 2 more fresh
  evaluations each, round-robin), until the top points are all confirmed; a point's score
  is then the median of its measurements, and every searcher's trace is rescored from
  them. The best known and its 95% target are confirmed figures, not a lucky draw.
- **Kernel Tuner** ({", ".join(KT_STRATEGIES)}) is driven through its own `tune_kernel`, in
  simulation mode, with its `SimulationRunner` replaced for the call by
  `bench.searchers.HarnessRunner`: Kernel Tuner builds the search space from our params
  and constraints (shape dims substituted), enforces `max_fevals` (distinct
  configurations) and runs its strategy unchanged, with default options; the runner
  answers each configuration with our measurement (objective `speedup`, higher is
  better; failures are `RuntimeFailedConfig`). With default options `bayes_opt` starts from
  a 20-point Latin-hypercube sample and `genetic_algorithm` from a random population of up
  to 26, so at budgets of that size both are still sampling. Its C backend is not used, because it loads
  and times kernels inside the tuner's own process. Kernel Tuner enumerates the whole legal
  space before searching, so spaces over 2,000,000 points (matmul) are not given to it.
- **Swarm warm** starts with the lessons of an earlier run on the same goal (the cold run of
  the same seed, just before it); peers get no such head start, so the fair comparison is
  **swarm (cold)**. Self-improvement = evaluations the warm run needs to reach that earlier
  run's final best, against the evaluations the earlier (cold) run needed.
- **Time limit.** Each workload gets an equal share of `--deadline-minutes`; seeds are the
  outer loop, so a cut loses whole seeds (reported in the status column), never silently.
- **Evaluations to 95%** = evaluations until the best-so-far reaches 95% of the best
  score any searcher found at that shape in this run (median over seeds).
- **Whole space** (`--sweep-up-to N`): a space of at most N legal points is measured in
  full (shuffled order, one shared measurement per point, the best confirmed as above), so
  random search's expected evaluations are exact: with H of V legal points at the 95%
  target, uniform draws without repeats first hit one at draw (V + 1) / (H + 1) on average.
  Without it, the expectation comes from random search's own draws (a lower bound when
  they never hit).
- **Kernel shapes.** Where a kernel is compared at a shape other than the search shape, a
  swarm run at that shape starts from the search's lessons (budget: the smallest of
  `--budgets`), the search's best is measured there too, the best three are confirmed and
  the best of them is compared (`--no-shape-runs`: the search's best as it is).
"""


def _confirmed(s: dict) -> str:
    c = s.get("confirmed") or {}
    if not c.get("top"):
        return " Scores are single measurements (no confirmation in this run)."
    return (f" The best {c['top']} points were confirmed ({c['measurements_each']} measurements each, "
            f"{s.get('confirmation_evaluations', 0)} extra evaluations); their scores are medians.")


def _f(x, fmt="{:.2f}", none="—"):
    return none if x is None else fmt.format(x)


def _ratio(b):
    if not b or b.get("ratio_median") is None:
        return "—"
    return f"{b['ratio_median']:.2f}x ({b['ratio_min']:.2f}–{b['ratio_max']:.2f})"


def markdown(result: dict, html_name: str | None = None) -> str:
    host = result["host"]
    fp = host["fingerprint"]
    roof = result["roofline"]
    nt = roof.get("copy_nt_gbs") or 0.0
    plan = result["plan"]
    lines = ["# Benchmarks: the factory against its peers", "",
             "<!-- Generated by `python -m bench peers` (bench/report.py); edit the generator, not this file. -->",
             "", METHOD, "## This run", ""]
    noisy = host.get("shared_or_noisy")
    lines += [f"- Command: `{result['command']}`",
              f"- Date: {result['date']}, {result['seconds'] / 60:.1f} minutes"
              + (" (quick run: small shapes and budgets)" if plan["quick"] else ""),
              f"- Host: `{host['hostname']}`, {fp.get('cpu_model')}, {fp.get('cores')} cores, "
              f"LLC {fp.get('llc_bytes', 0) >> 20} MiB, {fp.get('compiler')}; "
              f"AVX-512: {'yes' if 'avx512f' in fp.get('cpu_flags', []) else 'no'}",
              "- Versions: " + ", ".join(f"{k} {v}" for k, v in host["versions"].items()),
              f"- Load average at start: {host['load_average_at_start']}"
              + (" — **the host was shared with other work: timings are noisy**" if noisy else ""),
              f"- OpenBLAS variables in the bench process: {host['openblas_env_of_bench_process']}; "
              "unset for every measurement (sandbox child)",
              f"- Roofline measured in this run: copy {roof.get('copy_gbs', 0):.1f} GB/s"
              + (f" (with streaming stores {nt:.1f} GB/s)" if nt else "") + ", triad "
              f"{roof.get('triad_gbs', 0):.1f} GB/s, peak {roof.get('peak_gflops', 0):.0f} GFLOP/s "
              f"({roof.get('threads')} threads; {len(roof.get('measurements', [])) or 1} probes, "
              f"the highest of each figure kept)",
              f"- Budgets {plan['budgets']}, {plan['seeds']} seeds, {plan['sessions']} harness session(s) per kernel, "
              f"{plan['min_calls']} timed calls minimum per kernel comparison, "
              f"{plan.get('search_min_calls', plan['min_calls'])} per search measurement"]
    if html_name:
        lines.append(f"- Charts: `bench/results/{html_name}`")
    if result.get("skipped"):
        lines.append(f"- Skipped for time: {', '.join(result['skipped'])}")
    lines += ["", "## Targets", "", "| issue | target | measured | met |", "|---|---|---|---|"]
    for t in result["targets"]:
        mark = {True: "✅ met", False: "❌ not met", None: "— not assessed"}[t["met"]]
        meas = t["measured"]
        meas = "—" if meas is None else (f"{meas:.2f}" if isinstance(meas, float) else str(meas))
        lines.append(f"| #{t['issue']} | {t['text']} | {meas} | {mark}: {t['note']} |")
    lines += ["", "## Kernels: the factory's best against the baselines", "",
              "Ratios are baseline time ÷ our time (above 1: ours is faster): median over sessions (range). "
              "\"In LLC\": the working set fits in the last-level cache, so a share of DRAM copy bandwidth "
              "above 100% is expected there.", "",
              "| workload | shape | our kernel | median ms | vs NumPy/OpenBLAS | vs torch eager | vs torch.compile "
              "| % copy BW (beside it) | % roofline | BLAS in the child |", "|---|---|---|---|---|---|---|---|---|---|"]
    for wl, shapes in result["kernels"].items():
        for shape, k in shapes.items():
            if k.get("status") != "ok":
                lines.append(f"| {wl} | {shape} | {k.get('status')} {k.get('reason', '')} | | | | | | | |")
                continue
            kinds = k.get("by_kind", {})
            rf = k["candidate"]["roofline"]
            blas = ", ".join(f"{b.get('internal_api')} {b.get('architecture')} ({b.get('num_threads')} thr)"
                             for b in (k.get("blas") or []) if b.get("internal_api") in ("openblas", "mkl", "blis"))
            params = " ".join(f"{a}={b}" for a, b in k["params"].items())
            llc = fp.get("llc_bytes") or 0
            moved = rf["achieved_gbs"] * 1e9 * k["candidate"]["median_ms"] / 1e3
            in_llc = " (in LLC)" if llc and moved < llc and rf.get("bound") == "memory" else ""
            beside = (k["candidate"].get("session_copy") or {}).get("pct")
            in_llc += f" ({beside:.0f}%)" if beside else ""
            lines.append(f"| {wl} | {shape} | `{params}` | {k['candidate']['median_ms']:.3f} | "
                         f"{_ratio(kinds.get('numpy'))} | {_ratio(kinds.get('torch_eager'))} | "
                         f"{_ratio(kinds.get('torch_compile'))} | {_f(rf.get('pct_of_copy_bandwidth'), '{:.0f}%')}{in_llc} | "
                         f"{_f(rf.get('pct_of_roofline'), '{:.0f}%')} ({rf.get('bound', '?')}) | {blas or '—'} |")
    origins = sorted({(wl, k.get("origin")) for wl, sh in result["kernels"].items() for k in sh.values()
                      if k.get("origin")})
    if origins:
        lines += ["", "Our kernel: " + "; ".join(f"{wl} — {o}" for wl, o in origins) + "."]
    runs = [(wl, k["shape_run"]) for wl, sh in result["kernels"].items() for k in sh.values()
            if (k.get("shape_run") or {}).get("status") == "ok"]
    for wl, r in runs:
        lines += ["", f"{wl} at {r['shape']}: a swarm run there with the search's lessons (budget {r['budget']}) "
                      f"found `{r['best']['params']}` at {r['best']['score']:.3f}x; the search's best scored "
                      f"{r['search_best_here']:.3f}x at this shape."]
    lines += ["", "Each baseline on its own (median ms, and its own % of the roofline):", "",
              "| workload | shape | baseline | median ms | ratio | % roofline |", "|---|---|---|---|---|---|"]
    for wl, shapes in result["kernels"].items():
        for shape, k in shapes.items():
            for name, b in (k.get("baselines") or {}).items():
                if b.get("median_ms") is None:
                    lines.append(f"| {wl} | {shape} | {name} | {b.get('status')} | | |")
                    continue
                lines.append(f"| {wl} | {shape} | {name} | {b['median_ms']:.3f} | {_ratio(b)} | "
                             f"{_f(b['roofline'].get('pct_of_roofline'), '{:.0f}%')} |")
    lines += ["", "## Search: best speedup found at equal evaluation budgets", "",
              "Score = speedup over the strongest baseline measured alongside. Median over seeds (min–max).", ""]
    for wl, s in result["search"].items():
        lines += [f"### {wl} at {s['shape']}", "",
                  f"Design space: {s['space_size']:,} points; {s['distinct_points_measured']} distinct points "
                  f"measured in this run; best known {s['best_known']['score']:.3f}x "
                  f"(`{s['best_known']['params']}`); 95% target {s['target_95pct']:.3f}x." + _confirmed(s), "",
                  "| searcher | " + " | ".join(f"budget {b}" for b in s["budgets"]) + " | evals to 95% | status |",
                  "|---|" + "---|" * (len(s["budgets"]) + 2)]
        for name, e in s["searchers"].items():
            cells = []
            for b in map(str, s["budgets"]):
                st = e["at_budget"].get(b, {})
                cells.append("—" if st.get("median") is None else
                             f"{st['median']:.3f} ({st['min']:.2f}–{st['max']:.2f})")
            e95 = e.get("evals_to_95pct") or {}
            e95s = "—" if not e95 else (f"{_f(e.get('median_evals_to_95pct'), '{:g}', 'not reached')} "
                                        f"({', '.join(str(v) if v else '×' for v in e95.values())})")
            lines.append(f"| {LABELS.get(name, name)} | " + " | ".join(cells) + f" | {e95s} | {e['status']} |")
        sw = s.get("sweep")
        if sw:
            lines += ["", f"Whole space: {sw['status']}" + (
                f" — all {sw['legal_points']} legal points measured ({sw['measured_by_sweep']} by the sweep, the "
                f"rest by the searchers); {sw['hits']} reach the 95% target, so uniform random search without "
                f"repeats needs {sw['expected_random_evals']:.1f} evaluations on average."
                if sw.get("expected_random_evals") else ".")]
        if s.get("self_improvement"):
            lines += ["", "Self-improvement (evaluations to reach the earlier run's final best): " + "; ".join(
                f"seed {r['seed']}: warm {r['warm_evals'] or '×'}, cold {r['cold_evals'] or '×'}" for r in s["self_improvement"])]
        lines.append("")
    lines += ["## Where the swarm is not ahead", ""]
    lines += honest_account(result)
    lines += ["", "## GPU", ""] + gpu_lines(result.get("gpu") or {})
    return "\n".join(lines) + "\n"


def honest_account(result: dict) -> list[str]:
    """Where the swarm (cold) is behind a peer, with what the data says about why."""
    out = []
    for t in result["targets"]:
        if t["issue"] != 7 or t["met"]:
            continue
        wl = t["workload"]
        s = result["search"][wl]
        rows = [r for r in result.get("table", {}).get(wl, []) if r["shape"] == s["shape"]]
        good = sum(1 for r in rows if r["result"]["score"] >= s["target_95pct"])
        text = f"- **{wl}** at {s['shape']}: " + "; ".join(
            f"at budget {x['budget']} behind {LABELS.get(x['peer'], x['peer'])} "
            f"({x['swarm']:.3f}x vs {x['peer_best']:.3f}x, {x['gap_pct']:.1f}%"
            + (", within the harness's run-to-run noise" if x["within_noise"] else "") + ")"
            for x in t["behind"]) + "."
        real = [x for x in t["behind"] if not x["within_noise"]]
        scores = sorted((r["result"]["score"] for r in rows), reverse=True)
        if len(scores) >= 2 and scores[1] < 0.95 * scores[0]:
            top = max(rows, key=lambda r: r["result"]["score"])
            n = len(top.get("scores") or [1])
            text += (f" The best-known point ({scores[0]:.3f}x) stands {100 * (scores[0] / scores[1] - 1):.0f}% "
                     f"above the next best ({scores[1]:.3f}x)"
                     + (f" (the median of {n} measurements: {', '.join(f'{x:.2f}' for x in top['scores'])}x)"
                        if n > 1 else ": one measurement, possibly a lucky one on a noisy host")
                     + ", which makes \"95% of the best\" a hard line here.")
        if real and rows:
            p = good / len(rows)
            small = min(x["budget"] for x in real)
            text += (f" {good} of the {len(rows)} points measured here ({100 * p:.0f}%) reach 95% of the best, "
                     f"so {small} random draws find one with probability {100 * (1 - (1 - p) ** small):.0f}%: "
                     f"with {s['seeds']} seeds the medians at budget {small} largely record which seeds were lucky.")
        if real and min(x["budget"] for x in real) <= 16:
            text += (" At budgets of two generations or less the swarm has not yet used what makes it a swarm: "
                     "its first generation of 8 comes from the explorer and the tuner (the mutator, crossover "
                     "and variant agents need correct candidates first; the seeded agent needs lessons), so it "
                     "is a space-filling sampler spending its draws evenly over values that random search or "
                     "a Bayesian optimiser may spend on the better half.")
        if not real:
            text += " Every gap is within the noise of the measurement."
        out.append(text)
    for t in result["targets"]:
        if t["issue"] == 3 and t["met"] is False:
            out.append(f"- Target not met: {t['text']} — measured {_f(t['measured'])} ({t['note']}).")
    if not out:
        out.append("Nowhere in this run: the swarm (cold) was ahead of or level with every peer at every budget, "
                   "and every assessed target of the swarm issue was met.")
    return out


# --------------------------------------------------------------------------- HTML

def _median_curve(runs: dict) -> list:
    curves = [r["curve"] for r in runs.values() if r.get("curve")]
    if not curves:
        return []
    n = max(len(c) for c in curves)
    return [statistics.median(c[min(i, len(c) - 1)] for c in curves) for i in range(n)]


def figures(result: dict) -> list:
    import plotly.graph_objects as go
    figs = []
    for wl, s in result["search"].items():
        fig = go.Figure()
        for name, e in s["searchers"].items():
            curve = _median_curve(e.get("runs", {}))
            if curve:
                fig.add_trace(go.Scatter(x=list(range(1, len(curve) + 1)), y=curve, mode="lines",
                                         name=LABELS.get(name, name)))
        fig.update_layout(title=f"{wl} at {s['shape']}: best-so-far speedup vs evaluations (median over "
                                f"{s['seeds']} seeds)", xaxis_title="evaluations",
                          yaxis_title="best speedup vs strongest baseline", height=420)
        figs.append(fig)
    fig = go.Figure()
    labels = [f"{wl} {shape}" for wl, sh in result["kernels"].items() for shape, k in sh.items()
              if k.get("status") == "ok"]
    for kind, label in KINDS:
        ys, lo, hi = [], [], []
        for wl, sh in result["kernels"].items():
            for shape, k in sh.items():
                if k.get("status") != "ok":
                    continue
                b = k["by_kind"].get(kind) or {}
                m = b.get("ratio_median")
                ys.append(m)
                lo.append(None if m is None else m - b["ratio_min"])
                hi.append(None if m is None else b["ratio_max"] - m)
        fig.add_trace(go.Bar(x=labels, y=ys, name=f"vs {label}",
                             error_y=dict(type="data", symmetric=False, array=hi, arrayminus=lo)))
    fig.update_layout(title="Speedup of the factory's best over each baseline (median over sessions, min–max)",
                      yaxis_type="log", yaxis_title="baseline time ÷ our time", barmode="group", height=440)
    fig.add_hline(y=1.0, line_dash="dot")
    figs.append(fig)
    fig = go.Figure()
    names = ["ours"] + [k for k, _ in KINDS]
    for who in names:
        ys = []
        for wl, sh in result["kernels"].items():
            for shape, k in sh.items():
                if k.get("status") != "ok":
                    continue
                if who == "ours":
                    ys.append(k["candidate"]["roofline"].get("pct_of_roofline"))
                else:
                    b = (k["by_kind"].get(who) or {}).get("name")
                    ys.append(k["baselines"][b]["roofline"].get("pct_of_roofline") if b else None)
        fig.add_trace(go.Bar(x=labels, y=ys, name="factory's best" if who == "ours" else dict(KINDS)[who]))
    fig.update_layout(title="% of this host's roofline (measured in the same run)", yaxis_title="% of attainable",
                      barmode="group", height=440)
    figs.append(fig)
    return figs


def html_report(result: dict, markdown_text: str) -> str:
    import plotly.io as pio
    parts = []
    for i, fig in enumerate(figures(result)):
        parts.append(pio.to_html(fig, include_plotlyjs=(i == 0), full_html=False))
    host = result["host"]
    rows = "".join(
        f"<tr><td>#{t['issue']}</td><td>{html.escape(t['text'])}</td><td>"
        f"{html.escape(str(round(t['measured'], 3)) if isinstance(t['measured'], float) else str(t['measured']))}"
        f"</td><td>{ {True: '✅ met', False: '❌ not met', None: '— not assessed'}[t['met']] }"
        f": {html.escape(t['note'])}</td></tr>" for t in result["targets"])
    account = "".join("<li>" + re.sub(r"\*\*(.+?)\*\*", r"<strong>\1</strong>", html.escape(x.lstrip("- ")))
                      + "</li>" for x in honest_account(result))
    return f"""<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>INT21 benchmarks {html.escape(result['date'])}</title>
<style>body{{font-family:system-ui,sans-serif;max-width:1100px;margin:2em auto;padding:0 1em}}
table{{border-collapse:collapse}}td,th{{border:1px solid #ccc;padding:3px 6px;font-size:90%}}
pre{{background:#f6f6f6;padding:1em;overflow:auto;font-size:85%}}</style></head><body>
<h1>The factory against its peers</h1>
<p>Command: <code>{html.escape(result['command'])}</code><br>Date: {html.escape(result['date'])}
({result['seconds'] / 60:.1f} min)<br>Host: <code>{html.escape(host['hostname'])}</code>
<code>{html.escape(str(host['fingerprint']))}</code><br>Load average at start: {host['load_average_at_start']}
{'<strong>(shared host: timings are noisy)</strong>' if host.get('shared_or_noisy') else ''}</p>
<h2>Targets</h2><table><tr><th>issue</th><th>target</th><th>measured</th><th>met</th></tr>{rows}</table>
<h2>Where the swarm is not ahead</h2><ul>{account}</ul>
<h2>Charts</h2>{''.join(parts)}
<h2>All tables</h2><pre>{html.escape(markdown_text)}</pre>
</body></html>
"""
