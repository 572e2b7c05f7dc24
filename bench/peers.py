"""python -m bench peers [--quick] [--workload W ...] [--budgets 25,50,100] [--seeds N] [--json]

The factory against its peers, measured side by side in one run (see docs/benchmarks.md):
kernels vs NumPy/OpenBLAS, torch eager, torch.compile and the roofline; the swarm vs
Kernel Tuner, Optuna TPE and random search at equal evaluation budgets. Writes
bench/results/<date>-<host>[-quick].json and .html, and docs/benchmarks.md. A bad command
line exits with status 2 and says why on stderr."""
from __future__ import annotations

import argparse
import datetime
import json
import shlex
import sys
from pathlib import Path

from bench import report, searchers, suite, targets
from kernels import workloads
from kernels.spec import SpecError

ROOT = Path(__file__).resolve().parents[1]


def parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(
        prog="python -m bench peers",
        description="Benchmark the factory against its peers in one run: kernels vs NumPy/OpenBLAS, torch eager, "
                    "torch.compile and the roofline; the swarm vs Kernel Tuner, Optuna TPE and random search at "
                    "equal budgets. Writes a JSON result, an HTML report and docs/benchmarks.md.")
    ap.add_argument("--quick", action="store_true", help="small shapes and budgets (under 10 minutes)")
    ap.add_argument("--workload", action="append", default=None, help="repeatable; default: all")
    ap.add_argument("--search", action="append", default=None, metavar="W",
                    help="workloads to search (default: all; --quick: softmax); the others "
                         "get one fixed-budget swarm run")
    ap.add_argument("--budgets", help="evaluation budgets, e.g. 25,50,100,200")
    ap.add_argument("--seeds", type=int, help="seeds per searcher (default 3)")
    ap.add_argument("--shape", action="append", default=[], metavar="W=SEARCH[:KERNEL,...]",
                    help="shapes for a workload, e.g. softmax=4096x2048 or matmul=512x512x512:1024x1024x1024")
    ap.add_argument("--searchers", help=f"comma-separated, from {','.join(searchers.SEARCHERS)}")
    ap.add_argument("--sessions", type=int, help="harness sessions per kernel comparison")
    ap.add_argument("--min-calls", type=int, help="timed calls per implementation, kernel comparisons")
    ap.add_argument("--search-min-calls", type=int, help="timed calls per implementation, search")
    ap.add_argument("--timing-budget", type=float, metavar="S",
                    help="seconds of timing per harness session, search and kernel comparisons alike "
                         "(default: the harness's own)")
    ap.add_argument("--confirm-top", type=int,
                    help="search: measure the best N points again before scoring (default 6; 0: off)")
    ap.add_argument("--confirm-extra", type=int,
                    help="search: extra measurements of each confirmed point (default 2; score: median)")
    ap.add_argument("--sweep-up-to", type=int, metavar="N",
                    help="search: also measure every legal point of a space of at most N points, so random "
                         "search's expected evaluations come from the whole landscape (default: off)")
    ap.add_argument("--random-seeds", type=int, metavar="N",
                    help="search: run random search over N seeds (more than --seeds) for a tighter estimate "
                         "of its hit rate; the other searchers keep --seeds")
    ap.add_argument("--no-shape-runs", action="store_true",
                    help="compare the search's best at each kernel shape as it is, without a swarm run "
                         "at that shape with the search's lessons")
    ap.add_argument("--no-compile", action="store_true", help="leave torch.compile out of the kernel tables")
    ap.add_argument("--no-gpu", action="store_true", help="skip the GPU section")
    ap.add_argument("--gpu-only", action="store_true",
                    help="the GPU section alone (GPU hosts; `python -m bench gpu` needs no Django either)")
    ap.add_argument("--deadline-minutes", type=float, help="skip (and report) tasks past this")
    ap.add_argument("--out", default=None, help="folder for the JSON and HTML (default bench/results)")
    ap.add_argument("--docs", default=None, help="markdown page to write (default docs/benchmarks.md; - for none)")
    ap.add_argument("--json", action="store_true", help="print the result as one JSON object on stdout")
    ap.add_argument("--render", metavar="RESULT.json",
                    help="measure nothing: assess an earlier result's targets again and rewrite it, its HTML "
                         "report and the markdown page")
    return ap


def _ints(ap: argparse.ArgumentParser, text: str) -> list[int]:
    try:
        values = sorted({int(x) for x in text.split(",") if x.strip()})
    except ValueError:
        ap.error(f"expected comma-separated integers, got {text!r}")
    if not values or values[0] < 1:
        ap.error(f"budgets must be >= 1, got {text!r}")
    return values


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    ap = parser()
    o = vars(ap.parse_args(argv))
    if o["render"]:
        return render(ap, Path(o["render"]), o["docs"] or str(ROOT / "docs" / "benchmarks.md"))
    names = o["workload"] or workloads.names()
    try:
        for n in names:
            workloads.get(n)
    except SpecError as exc:
        ap.error(str(exc))
    chosen = None
    if o["searchers"]:
        chosen = [s.strip() for s in o["searchers"].split(",") if s.strip()]
        unknown = [s for s in chosen if s not in searchers.SEARCHERS]
        if unknown:
            ap.error(f"unknown searcher(s) {unknown}; choose from {list(searchers.SEARCHERS)}")
    plan = suite.Plan.make(o["quick"], workloads=names, budgets=_ints(ap, o["budgets"]) if o["budgets"] else None,
                           seeds=o["seeds"], sessions=o["sessions"], min_calls=o["min_calls"],
                           search_min_calls=o["search_min_calls"],
                           confirm_top=o["confirm_top"], confirm_extra=o["confirm_extra"],
                           sweep_up_to=o["sweep_up_to"], random_seeds=o["random_seeds"],
                           searchers=chosen, deadline_minutes=o["deadline_minutes"],
                           search_workloads=o["search"])
    plan.compile_baseline = not o["no_compile"]
    if o["timing_budget"] is not None:
        if o["timing_budget"] <= 0:
            ap.error("--timing-budget must be a positive number of seconds")
        plan.timing_budget_s = o["timing_budget"]
        plan.search_eval = {**plan.search_eval, "timing_budget_s": o["timing_budget"]}
    plan.shape_runs = not o["no_shape_runs"]
    plan.gpu = not o["no_gpu"]
    plan.gpu_only = o["gpu_only"]
    if plan.gpu_only and not plan.gpu:
        ap.error("--gpu-only and --no-gpu contradict each other")
    for spec in o["shape"]:
        wl, sep, rest = spec.partition("=")
        if not sep or wl not in names:
            ap.error(f"--shape {spec!r}: expected W=SEARCH[:KERNEL,...] for a chosen workload")
        search, _, kernel = rest.partition(":")
        try:
            for s in [search] + kernel.split(","):
                if s:
                    workloads.get(wl).shape_from_text(s)
        except SpecError as exc:
            ap.error(str(exc))
        plan.shapes[wl] = (search, [s for s in kernel.split(",") if s] or [search])
    plan.command = " ".join(["python -m bench peers", *map(shlex.quote, argv)])
    result = suite.run(plan, stream=sys.stderr)
    out_dir = Path(o["out"]) if o["out"] else ROOT / "bench" / "results"
    out_dir.mkdir(parents=True, exist_ok=True)
    stem = f"{datetime.date.today()}-{result['host']['hostname']}" + ("-quick" if plan.quick else "")
    json_path, html_path = out_dir / f"{stem}.json", out_dir / f"{stem}.html"
    md = report.markdown(result, html_name=html_path.name)
    json_path.write_text(json.dumps(result, indent=1, default=str))
    html_path.write_text(report.html_report(result, md))
    docs = o["docs"] if o["docs"] is not None else str(ROOT / "docs" / "benchmarks.md")
    if docs != "-":
        Path(docs).write_text(md)
    if o["json"]:
        sys.stdout.write(json.dumps({k: v for k, v in result.items() if k != "table"}, default=str) + "\n")
        return 0
    print(f"Wrote {json_path}, {html_path}" + ("" if docs == "-" else f" and {docs}"))
    for t in result["targets"]:
        mark = {True: "met", False: "NOT met", None: "not assessed"}[t["met"]]
        print(f"  [{mark}] #{t['issue']} {t['text']}: {t['note']}")
    return 0


def render(ap: argparse.ArgumentParser, json_path: Path, docs: str) -> int:
    if not json_path.is_file():
        ap.error(f"no result file {json_path}")
    result = json.loads(json_path.read_text())
    # The targets are a pure function of the measurements: assessed again with today's rules.
    result["targets"] = targets.assess(result)
    json_path.write_text(json.dumps(result, indent=1, default=str))
    html_path = json_path.with_suffix(".html")
    md = report.markdown(result, html_name=html_path.name)
    html_path.write_text(report.html_report(result, md))
    if docs != "-":
        Path(docs).write_text(md)
    print(f"Wrote {html_path}" + ("" if docs == "-" else f" and {docs}"))
    return 0
