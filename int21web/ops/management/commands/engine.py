"""python manage.py engine import|check|greedy|run|show|list ...  (or the one-shot form below)

    engine --model decoder:hidden=1024,...|FILE.py|DIR [--phase prefill|decode] [--budget N] [--json] --as USER
                  imports the model once (under --name, default engine_<digest of the spec>), then runs it

    engine import --family hidden=64,heads=4,kv_heads=2,ffn=128,layers=2,vocab=256 --name tiny
                  [--checkpoint DIR | --module FILE.py] [--max-seq N] [--prefill-seq 128,...]
                  [--decode-past 128,1024] [--greedy PROMPT,STEPS] [--batch 1] [--json] --as USER
    engine check NAME [--seeds 2] [--json]      each phase judged at every shape, not timed
    engine greedy NAME [--json]                 the greedy-decode check (engine in the sandbox)
    engine run NAME --budget B [--phase prefill|decode] [--no-peers] [--json] --as USER
    engine breakdown NAME [--phase prefill|decode] [--seeds 2] [--quick] [--no-whole] [--json]
                                                each group timed as its own workload (kernels.engine.breakdown)
    engine show NAME [--json]                   arena, groups, validation, best speedups
    engine list [--json]
    engine host [--measure] [--json]            the generator defaults this host's probes measured
                                                (a deep Linear's GEMM form, rows per matrix-vector pass)

``--json`` prints exactly one JSON object on stdout. ``engine run``'s has the names scripts
rely on: ``{"correct", "status", "reason", "median_ms", "speedup": {peer: ratio}, "groups",
"evaluations", "engine_id", "phases"}`` (with several phases, ``median_ms``, ``speedup`` and
``groups`` are by phase). A progress bar goes to stderr.
"""
from __future__ import annotations

import json
import sys

from django.core.management.base import BaseCommand, CommandError

from int21web.api.cli import add_user_arg, user
from int21web.ops import engines
from swarm.progress import Bar, RunProgress


def _ints(text: str | None, what: str) -> list[int] | None:
    if not text:
        return None
    try:
        return [int(v) for v in text.replace(" ", "").split(",") if v]
    except ValueError:
        raise CommandError(f"{what}: give integers separated by commas, e.g. 128,1024", returncode=2) from None


class Command(BaseCommand):
    help = ("Engines: a whole decoder model as generated, verified prefill and decode programs. "
            "Subcommands: import, check, greedy, run, breakdown, show, list, host.")

    def add_arguments(self, parser):
        # the one-shot form: engine --model decoder:...|PATH.py|DIR [--phase P] [--budget N] [--json]
        parser.add_argument("--model", help="one shot: import this model (decoder:hidden=...,... | a module file "
                                            "| a checkpoint directory) unless already imported, then run it")
        parser.add_argument("--phase", dest="top_phase", choices=["prefill", "decode", "forward"])
        parser.add_argument("--budget", dest="top_budget", type=int, default=40)
        parser.add_argument("--name", dest="top_name", help="the engine's name (default: engine_<digest of --model>)")
        parser.add_argument("--json", dest="top_json", action="store_true")
        parser.add_argument("--no-peers", dest="top_no_peers", action="store_true")
        parser.add_argument("--tune-groups", dest="top_tune", type=int, default=0, metavar="N",
                            help="first tune each fusion group alone at N points")
        add_user_arg(parser, default="")
        sub = parser.add_subparsers(dest="action")
        imp = sub.add_parser("import", help="import a model's phases as an engine")
        imp.add_argument("--family", help="the built-in decoder family: hidden=...,heads=...,kv_heads=...,ffn=...,"
                                          "layers=...,vocab=... (decoder: prefix optional)")
        imp.add_argument("--checkpoint", help="a local checkpoint directory (config.json + safetensors)")
        imp.add_argument("--module", help="a KernelBench-format module file (one phase: forward)")
        imp.add_argument("--name", required=True)
        imp.add_argument("--max-seq", type=int, help="positions the engine must hold (the RoPE table's length)")
        imp.add_argument("--prefill-seq", help="prefill lengths, the first timed (default 128 or max_seq)")
        imp.add_argument("--decode-past", help="decode cache lengths, the first timed (default 128 or max_seq - 1)")
        imp.add_argument("--greedy", help="PROMPT,STEPS: also import the lengths the greedy check steps through")
        imp.add_argument("--batch", type=int, default=1)
        imp.add_argument("--json", action="store_true")
        add_user_arg(imp, default="")
        chk = sub.add_parser("check", help="judge each phase at every shape (not timed)")
        chk.add_argument("name")
        chk.add_argument("--seeds", type=int, default=2)
        chk.add_argument("--json", action="store_true")
        gr = sub.add_parser("greedy", help="the greedy-decode check against the torch model")
        gr.add_argument("name")
        gr.add_argument("--json", action="store_true")
        run = sub.add_parser("run", help="search each phase with the swarm, then time the best against the peers")
        run.add_argument("name")
        run.add_argument("--budget", type=int, default=40, help="evaluations per phase (default 40)")
        run.add_argument("--phase", choices=["prefill", "decode", "forward"])
        run.add_argument("--population", type=int, default=8)
        run.add_argument("--confirm", type=int, default=3, metavar="N")
        run.add_argument("--no-peers", action="store_true",
                         help="skip the final session against torch.compile, ONNX Runtime and OpenVINO")
        run.add_argument("--tune-groups", type=int, default=0, metavar="N",
                         help="first tune each fusion group alone at N points (its default among them); the "
                              "phase's search starts from the composed point (default 0: off)")
        run.add_argument("--json", action="store_true")
        add_user_arg(run, default="")
        brk = sub.add_parser("breakdown", help="time each fusion group on its own, at the phase's best knobs "
                                               "(or its defaults)")
        brk.add_argument("name")
        brk.add_argument("--phase", choices=["prefill", "decode", "forward"], help="default: every phase")
        brk.add_argument("--seeds", type=int, default=2, help="correctness seeds per group (default 2)")
        brk.add_argument("--quick", action="store_true",
                         help="a first look: 5 to 20 timed calls per group, no second session on a busy host")
        brk.add_argument("--no-whole", action="store_true",
                         help="do not time the whole phase beside the groups (the run's median is used if any)")
        brk.add_argument("--json", action="store_true")
        show = sub.add_parser("show", help="the engine's arena, groups, validation and best speedups")
        show.add_argument("name")
        show.add_argument("--json", action="store_true")
        ls = sub.add_parser("list", help="the engines")
        ls.add_argument("--json", action="store_true")
        host = sub.add_parser("host", help="the generator defaults this host's probes measured, and from what")
        host.add_argument("--measure", action="store_true", help="measure both probes again, replacing their records")
        host.add_argument("--json", action="store_true")

    def handle(self, *args, **o):
        if not o.get("action"):
            if not o.get("model"):
                raise CommandError("give a subcommand (import, check, greedy, run, breakdown, show, list, host) or --model",
                                   returncode=2)
            o = self._one_shot(o)
        try:
            getattr(self, f"_{o['action']}")(o)
        except engines.EngineRefused as exc:
            raise CommandError(exc.message, returncode=2) from None

    def _print(self, o, data: dict, text) -> None:
        if o.get("json"):
            sys.stdout.write(json.dumps(data, default=str) + "\n")
        else:
            for line in text(data):
                self.stdout.write(line)

    def _one_shot(self, o) -> dict:
        """``--model``: import it under a name derived from the spec (once), then ``run``."""
        import hashlib

        from int21web.ops import models as m
        spec = o["model"].strip()
        name = o.get("top_name") or f"engine_{hashlib.sha256(spec.encode()).hexdigest()[:10]}"
        if not m.Engine.objects.filter(name=name).exists():
            from pathlib import Path
            kind = ("module" if spec.endswith(".py") else "checkpoint" if Path(spec).is_dir() else "family")
            self._import({"family": spec if kind == "family" else None,
                          "checkpoint": spec if kind == "checkpoint" else None,
                          "module": spec if kind == "module" else None, "name": name, "max_seq": None,
                          "prefill_seq": None, "decode_past": None, "greedy": None, "batch": 1, "json": False,
                          "as_user": o["as_user"], "quiet": True})
        return {"action": "run", "name": name, "budget": o["top_budget"], "phase": o["top_phase"],
                "population": min(8, o["top_budget"]), "confirm": min(3, max(0, o["top_budget"] - 1)),
                "no_peers": o["top_no_peers"], "json": o["top_json"], "as_user": o["as_user"],
                "tune_groups": o["top_tune"]}

    # ------------------------------------------------------------------ subcommands

    def _import(self, o):
        from kernels.engine import service
        actor = user(o["as_user"]) if o["as_user"] else None
        try:
            model = service.model_from(o["family"], checkpoint=o["checkpoint"], module=o["module"],
                                       max_seq=o["max_seq"])
        except service.EngineError as exc:
            raise CommandError(str(exc), returncode=2) from None
        greedy = _ints(o["greedy"], "--greedy")
        if greedy is not None and len(greedy) != 2:
            raise CommandError("--greedy: give PROMPT,STEPS, e.g. 4,8", returncode=2)
        bar = Bar(sys.stderr, width=30)
        row = engines.engine_import(model=model, name=o["name"], user=actor, batch=o["batch"],
                                    prefill_seq=_ints(o["prefill_seq"], "--prefill-seq"),
                                    decode_past=_ints(o["decode_past"], "--decode-past"), greedy=greedy,
                                    on_progress=lambda d, t, what: bar.draw(d, t, what, newline=not bar.tty))
        bar.draw(1, 1, f"imported {row.name}", newline=True)
        if not o.get("quiet"):
            self._print(o, engines.engine_view(row), _show_lines)

    def _check(self, o):
        from kernels.engine import service
        row = engines.engine_row(o["name"])
        bar = Bar(sys.stderr, width=30)
        phases = list(row.record["phases"])
        for k, phase in enumerate(phases):
            bar.draw(k, len(phases), f"{phase}: judging at every shape", newline=not bar.tty)
            service.engine_check(o["name"], seeds=o["seeds"], phases=[phase])
        bar.draw(len(phases), len(phases), "checked", newline=True)
        row = engines.engine_sync(o["name"])
        report = row.record.get("validation", {})
        self._print(o, report, lambda r: [f"{p}: {v['status']} — {v['reason']} ({len(v['shapes'])} shapes)"
                                          for p, v in r.items()])

    def _greedy(self, o):
        from kernels.engine import service
        engines.engine_row(o["name"])
        try:
            data = service.engine_greedy(o["name"])
        except service.EngineError as exc:
            raise CommandError(str(exc), returncode=2) from None
        engines.engine_sync(o["name"])
        self._print(o, data, lambda d: [
            f"greedy decode: {'passed' if d['passed'] else 'FAILED'} · {d['agreed']}/{d['decisions']} tokens agree "
            f"({d['near_ties']} near-ties) · max logit error {d['max_logit_error']:.2e}"
            + (f" · {d['failure']}" if d["failure"] else "")])

    def _run(self, o):
        from int21web.runs.embedded import serving
        if o["budget"] < 1:
            raise CommandError("--budget must be at least 1", returncode=2)
        if not 0 <= o["tune_groups"] <= 64:
            raise CommandError("--tune-groups must be from 0 (off) to 64", returncode=2)
        why = serving("cpu")
        if why:
            raise CommandError(f"engine run cannot run its goals: {why}", returncode=2)
        actor = user(o["as_user"]) if o["as_user"] else None
        report = engines.engine_search(o["name"], budget=o["budget"], population=o["population"],
                                       confirm=o["confirm"], phases=[o["phase"]] if o["phase"] else None,
                                       peers=not o["no_peers"], user=actor,
                                       progress=lambda phase, budget: RunProgress(sys.stderr, budget),
                                       tune=o["tune_groups"], on_tune=self._tune_bar())

        def lines(r):
            for p, v in r["phases"].items():
                sp = " · ".join(f"{n} {x:.2f}x" for n, x in sorted(v["speedup"].items()))
                ms = f"{v['median_ms']:.3f} ms" if v["median_ms"] else "—"
                yield (f"{p}: {'correct' if v['correct'] else 'NOT correct'} · {ms} · {sp or 'no speedups'} · "
                       f"{v['evaluations']} evaluations"
                       + (f" ({v['tuned']['evaluations']} of them groups tuned alone, {v['tuned']['moved']} of "
                          f"{v['tuned']['groups']} moved)" if v.get("tuned") else "") + f" · run {v['run_id']}")
        self._print(o, report, lines)

    def _tune_bar(self):
        bar = Bar(sys.stderr, width=30)
        return lambda d, t, what: bar.draw(d, t, f"tuning groups alone: {what}", newline=not bar.tty or d >= t)

    def _breakdown(self, o):
        if o["seeds"] < 1:
            raise CommandError("--seeds must be at least 1", returncode=2)
        bar = Bar(sys.stderr, width=30)
        report = engines.engine_breakdown(
            o["name"], phases=[o["phase"]] if o["phase"] else None, seeds=o["seeds"], quick=o["quick"],
            whole=not o["no_whole"], on_progress=lambda p, d, t, what: bar.draw(d, t, f"{p}: {what}", newline=not bar.tty))
        bar.draw(1, 1, "timed", newline=True)
        self._print(o, report, _breakdown_lines)

    def _show(self, o):
        self._print(o, engines.engine_view(engines.engine_row(o["name"])), _show_lines)

    def _list(self, o):
        from int21web.ops import models as m
        rows = [{"name": r.name, "model": r.record.get("model"), "phases": list(r.record.get("phases", {}))}
                for r in m.Engine.objects.all()]
        self._print(o, {"engines": rows}, lambda d: [f"{r['name']}: {', '.join(r['phases'])}" for r in d["engines"]])

    def _host(self, o):
        """Both host probes' records; with ``--measure``, measured again first. Programs
        generated from then on start from them (imported workloads keep the defaults they
        were generated with)."""
        from kernels.codegen import gemm_form, streaming
        from kernels.targets.base import cache_dir
        if o.get("measure"):
            self.stderr.write("measuring this host's GEMM forms and matrix-vector passes (a few seconds) ...")
        data = {"gemm_form": gemm_form.host_record(again=bool(o.get("measure"))),
                "rows_per_pass": streaming.host_record(again=bool(o.get("measure"))),
                "cache_dir": str(cache_dir())}
        gemm_form.host_gemm_form.cache_clear()
        streaming.host_rows_per_pass.cache_clear()
        self._print(o, data, _host_lines)


def _host_lines(d: dict):
    from kernels.codegen import streaming
    from kernels.codegen.gemm_form import MARGIN, NAMES, SHAPES, WORDS
    g, r = d["gemm_form"], d["rows_per_pass"]
    yield f"the generator's defaults on this host (records in {d['cache_dir']}; `engine host --measure` measures again)"
    yield f"  a deep Linear starts {NAMES[g['form']]}"
    if g.get("not_kept"):
        yield f"    measuring again was not kept ({g['not_kept']}): the earlier measurement stands"
    if g["measured"]:
        shapes = " and ".join(f"{m}x{k}->{n}" for m, n, k in SHAPES)
        times = ", ".join(f"{WORDS[int(f)]} {1e3 * float(t):.2f} ms" for f, t in sorted(g["seconds"].items()))
        yield (f"    measured: {times} for the Linears {shapes}; the registers rule's "
               f"{WORDS[g['incumbent']]} stays unless the other is {100 * MARGIN:.0f}% faster")
    else:
        yield f"    not measured ({g['reason']}): the registers rule decides until a later process measures"
    yield f"  a matrix-vector pass sums {'one weight row' if r['rows'] == 1 else str(r['rows']) + ' weight rows'}"
    if r.get("not_kept"):
        yield f"    measuring again was not kept ({r['not_kept']}): the earlier measurement stands"
    if r["measured"]:
        times = ", ".join(f"{g_} rows {1e3 * float(t):.1f} ms" for g_, t in sorted(r["seconds"].items(), key=lambda x: int(x[0])))
        yield f"    measured over {r['matrices']} weights of {streaming.N * streaming.K * 4 / 1e6:.1f} MB: {times}"
    else:
        yield f"    not measured ({r['reason']}): four rows until a later process measures"


def _show_lines(d: dict):
    model = d["model"] or {}
    cfg = model.get("config") or {}
    yield f"engine {d['name']} (#{d['engine_id']}): {model.get('kind')} " + ", ".join(
        f"{k}={cfg[k]}" for k in ("hidden", "heads", "kv_heads", "ffn", "layers", "vocab", "max_seq") if k in cfg)
    for p, v in d["phases"].items():
        a = v["arena"]
        yield (f"  {p}: {v['workload']} at {v['shapes']} · {v['groups']} groups "
               f"({', '.join(f'{n} {k}' for k, n in sorted(v['families'].items()))}) · {v['knobs']} knobs · "
               f"arena {a['bytes'] / 1024:.1f} KiB (without reuse {a['bytes_no_reuse'] / 1024:.1f} KiB) · "
               f"source {v['source_bytes'] / 1024:.0f} KiB")
        if v["validation"]:
            yield f"    validation: {v['validation']['status']} — {v['validation']['reason']}"
        if v.get("breakdown") and v["breakdown"].get("sum_ms") is not None:
            b = v["breakdown"]
            yield (f"    breakdown: {b['timed_groups']} of {b['groups']} groups timed alone, sum {b['sum_ms']:.4f} ms"
                   + (f" (the whole phase {b['whole_ms']:.4f} ms)" if b.get("whole_ms") else ""))
        if v["best"]:
            sp = " · ".join(f"{n} {x:.2f}x" for n, x in sorted((v["best"]["speedup"] or {}).items()))
            ms = v["best"]["median_ms"]
            yield f"    best: {f'{ms:.3f}' if ms else '—'} ms · {sp} (run {v['best']['run_id']})"
    if d["greedy"]:
        g = d["greedy"]
        yield (f"  greedy decode: {'passed' if g['passed'] else 'FAILED'} · {g['agreed']}/{g['decisions']} agree · "
               f"max logit error {g['max_logit_error']:.2e}")


def _breakdown_lines(d: dict):
    for p, r in d["phases"].items():
        whole = f"; the whole phase {r['whole_ms']:.4f} ms ({r['whole']})" if r.get("whole_ms") else ""
        total = f"{r['sum_ms']:.4f} ms" if r.get("sum_ms") is not None else "nothing timed"
        yield (f"{p}: {r['groups']} groups ({r['distinct']} distinct) at {r['params']}; "
               f"sum of the groups alone {total}{whole}")
        for row in sorted(r["rows"], key=lambda x: -x["total_ms"]):
            ids = ",".join(f"g{i}" for i in row["ids"])
            if row["median_ms"] is None:
                yield f"  {ids}: {row['description']} — {row['reason']}"
            else:
                yield (f"  {row['count']} x {row['median_ms']:.4f} ms (IQR {row['iqr_ms']:.4f}) = "
                       f"{100 * row['share']:.1f}%  {ids}: {row['description']}")
        yield f"  {r['note']}"
