"""python -m bench <benchmark> [options]: every benchmark, one entry point (``-h`` after a
benchmark's name lists its options). The product never imports this package; a benchmark
that needs the web app starts it as a user would (``manage.py`` and ``celery`` processes),
except ``live-latency``, which must run inside the server's process (docs/ARCHITECTURE.md)."""
from __future__ import annotations

import sys
from importlib import import_module

# name → (module whose main(argv) runs it, one line for the list)
BENCHMARKS = {
    "peers": ("bench.peers", "the factory against its peers: kernels vs baselines and the roofline, search at "
                             "equal budgets (docs/benchmarks.md; `make bench`)"),
    "harness": ("bench.harness_speed", "the harness itself: seconds per evaluation, ratio spread (`make bench-harness`)"),
    "swarm": ("bench.swarm_bench", "the swarm alone: search efficiency, self-improvement, transfer to a nearby shape"),
    "group-lessons": ("bench.group_lessons", "own ops: a second problem sharing a fusion-group signature, with the "
                                             "first's lessons vs cold (docs/ownops.md)"),
    "fleet": ("bench.fleet_throughput", "evaluations per minute with 1 and 2 CPU workers (`make bench-fleet`)"),
    "live-latency": ("bench.live_latency", "commit → row shown on the run page in Chromium"),
    "replay": ("bench.replay", "searchers replayed against a stored result's table (seconds, nothing measured)"),
    "gpu": ("bench.gpu", "the GPU section alone (GPU hosts; no Django)"),
    "library-gpu": ("bench.library_gpu_check", "kernels.library.load of each CUDA seed on a GPU host"),
    "native": ("bench.native_overhead", "an approved kernel called in-process (ctypes, torch custom op): µs over its run"),
    "engine": ("bench.engine_bench", "generated decoder engines (prefill, decode) against torch eager, torch.compile, "
                                     "ONNX Runtime and OpenVINO in one harness session (`--tiny`: a dry run)"),
    "engine-search": ("bench.engine_search", "the engine-level search: swarm vs random search over a phase's space, "
                                             "and a second model with the first's lessons vs cold"),
}


def usage() -> str:
    width = max(map(len, BENCHMARKS))
    return "\n".join(["usage: python -m bench <benchmark> [options]", "", "benchmarks:",
                      *(f"  {name:<{width}}  {line}" for name, (_, line) in BENCHMARKS.items())])


def main(argv: list[str]) -> int:
    if not argv or argv[0] in ("-h", "--help"):
        print(usage())
        return 0 if argv else 2
    name, rest = argv[0], argv[1:]
    if name not in BENCHMARKS:
        print(f"{usage()}\n\npython -m bench: unknown benchmark {name!r}", file=sys.stderr)
        return 2
    return import_module(BENCHMARKS[name][0]).main(rest) or 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
