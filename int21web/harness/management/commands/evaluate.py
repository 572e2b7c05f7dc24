"""python manage.py evaluate --workload W --target T --source FILE [--param NAME=VALUE ...] [--json]"""
import json
import sys
from pathlib import Path

from django.core.management.base import BaseCommand, CommandError

from kernels import targets, workloads
from kernels.harness.evaluator import EvalSettings, Evaluator
from kernels.spec import SpecError


def parse_param(text: str) -> tuple[str, object]:
    name, sep, value = text.partition("=")
    if not sep or not name:
        raise CommandError(f"--param {text!r}: expected NAME=VALUE", returncode=2)
    try:
        return name.strip(), int(value)
    except ValueError:
        return name.strip(), value.strip()


class Command(BaseCommand):
    help = ("Evaluate one kernel: static checks, compile, audit, correctness on many shapes and "
            "distributions, timing against the baselines, sanity. Prints a report, or with --json "
            "exactly one JSON object. Exits 0 whenever an evaluation happened, whatever its verdict.")

    def add_arguments(self, parser):
        parser.add_argument("--workload", required=True, help="e.g. softmax (see: manage.py workloads)")
        parser.add_argument("--target", required=True, help="cpu or cuda")
        parser.add_argument("--source", required=True, help="kernel source file (.c for cpu, .cu for cuda)")
        parser.add_argument("--param", action="append", default=[], metavar="NAME=VALUE",
                            help="design-space value, becomes #define NAME VALUE (repeatable)")
        parser.add_argument("--json", action="store_true", help="print one JSON object on stdout")
        parser.add_argument("--shape", help="timing shape, e.g. 4096x4096 (default: the workload's typical)")
        parser.add_argument("--held-out", action="store_true", help="also check the held-out shapes")
        parser.add_argument("--no-timing", action="store_true", help="check correctness only")
        parser.add_argument("--baseline", action="append", default=None, metavar="NAME",
                            help="time against these baselines (default: the workload's defaults)")
        parser.add_argument("--cold-cache", action="store_true", help="flush caches between timed calls")
        parser.add_argument("--fast-math", action="store_true", help="allow -ffast-math")
        parser.add_argument("--arch", default="sm_90", help="CUDA architecture (default sm_90)")
        parser.add_argument("--run-timeout", type=float, default=180.0, help="seconds per sandbox run")
        parser.add_argument("--compile-timeout", type=float, default=120.0, help="seconds to compile")

    def handle(self, *args, **opts):
        try:
            wl = workloads.get(opts["workload"])
            tgt = targets.get(opts["target"])
            timing_shape = wl.shape_from_text(opts["shape"]) if opts["shape"] else None
        except SpecError as exc:
            raise CommandError(str(exc), returncode=2)
        ok, why = tgt.available()
        if not ok:
            raise CommandError(f"target {tgt.name} is not available here: {why}", returncode=2)
        path = Path(opts["source"])
        if not path.is_file():
            raise CommandError(f"source file {path} does not exist", returncode=2)
        try:
            source = path.read_text()
        except (OSError, UnicodeDecodeError) as exc:
            raise CommandError(f"cannot read {path}: {exc}", returncode=2)
        params = dict(parse_param(p) for p in opts["param"])
        settings = EvalSettings(
            timing=not opts["no_timing"], timing_shape=timing_shape, cold_cache=opts["cold_cache"],
            fast_math=opts["fast_math"], run_timeout=opts["run_timeout"],
            compile_timeout=opts["compile_timeout"],
            baselines=tuple(opts["baseline"]) if opts["baseline"] else None,
            extra_shapes=wl.shapes.held_out if opts["held_out"] else (), arch=opts["arch"],
        )
        progress = None if opts["json"] else self._progress
        if progress:
            self.stderr.write(f"Evaluating {path} as {wl.name} on {tgt.name}…")
        outcome = Evaluator(settings, on_stage=progress).evaluate(source, params, wl, tgt.name)
        if opts["json"]:
            sys.stdout.write(json.dumps(outcome.to_json()) + "\n")
            return
        self._report(wl, tgt, outcome)

    def _progress(self, stage):
        mark = {"passed": "✓", "failed": "✗", "skipped": "·"}.get(stage.status, "?")
        self.stderr.write(f"  {mark} {stage.name:<12} {stage.seconds:6.2f}s  {stage.summary[:100]}")

    def _report(self, wl, tgt, outcome):
        w = self.stdout.write
        style = self.style.SUCCESS if outcome.status == "ok" else self.style.WARNING
        w(style(f"\n{wl.name} on {tgt.name}: {outcome.status}"))
        w(outcome.reason)
        if outcome.timings:
            w("\nTiming (median / IQR / min, ms; interleaved in one sandbox session):")
            for name, t in outcome.timings.items():
                ratio = outcome.speedup.get(name)
                tail = f"   candidate is {ratio:.2f}x faster" if ratio and ratio >= 1 else (
                    f"   candidate is {1 / ratio:.2f}x slower" if ratio else "")
                w(f"  {name:<14} {t['median_ms']:10.3f} {t['iqr_ms']:8.3f} {t['min_ms']:10.3f}  n={t['n']}{tail}")
        bench = outcome.stage("sanity")
        if bench and bench.details.get("achieved_gbs") is not None:
            d = bench.details
            w(f"\nAchieved {d['achieved_gbs']:.1f} GB/s"
              + (f" ({d['pct_of_copy_bandwidth']:.0f}% of measured copy bandwidth)" if "pct_of_copy_bandwidth" in d else "")
              + (f" — {d['pct_of_session_copy']:.0f}% of a streaming copy timed beside it "
                 f"({d['session_copy_gbs']:.1f} GB/s)" if "pct_of_session_copy" in d else "")
              + f", {d['achieved_gflops']:.1f} GFLOP/s"
              + (f" ({d['pct_of_peak_flops']:.0f}% of measured peak)" if "pct_of_peak_flops" in d else ""))
        if outcome.resources:
            w(f"\nResources: {json.dumps(outcome.resources)}")
        for note in outcome.notes:
            w(f"Note: {note}")
