"""The Engine Factory's peers on this CPU (a benchmark, not a test; the product never
imports it): torch eager, torch.compile, ONNX Runtime and OpenVINO running the built-in
decoder family, side by side in one run, at the same thread count.

    python -m bench.engine_peers [--threads 2] [--model decoder:hidden=1024,...] [--quick]
                                 [--cases prefill,decode128,decode1024] [--out FILE]

Cases: prefill 1 x 128 tokens, and one decode step after 128 and after 1024 cached
positions (the cache comes from a real prefill). Each case builds every peer through its
baseline factory (kernels/models/peers.py: the same weights, the same inputs, each peer's
outputs checked against eager once before timing), each peer in a process of its own that is
stopped between its calls, as the harness does with baselines, so no runtime's spin-waiting
thread pool runs beside another's call (docs/engine.md: why the in-process first version
was discarded). They are
timed with the harness's interleaved loop (kernels/harness/timing.interleave: a fresh random
order every round), so a slow phase of the host hits all peers alike. The ONNX export is
made once, here, in the trusted process, before the peers start. Reported per peer: the median and IQR, the
GFLOP/s and the GB/s of weights (and KV cache) it implies; per case: the load average, the
CPUs' worth of other programs' time and the largest steal share while it was timed (the
host is shared; the ratios are what to trust).

Writes bench/results/engine-peers-<date>-<host>.json and prints a table.
"""
import argparse
import datetime
import json
import os
import platform
import signal
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

BENCH_MODEL = "decoder:hidden=1024,heads=16,kv_heads=4,ffn=2816,layers=4,vocab=8192"
QUICK_MODEL = "decoder:hidden=256,heads=4,kv_heads=2,ffn=704,layers=2,vocab=1024"


def _versions() -> dict:
    out = {"python": platform.python_version()}
    for name in ("torch", "onnxruntime", "onnxscript", "onnx", "openvino", "numpy"):
        try:
            out[name] = __import__(name).__version__
        except Exception as exc:   # a peer that does not import is reported, not fatal
            out[name] = f"unavailable ({type(exc).__name__}: {exc})"
    return out


def _cpu() -> str:
    try:
        for line in open("/proc/cpuinfo"):
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor()


def _case_inputs(lm, case, rng):
    import numpy as np
    import torch
    cfg = lm.cfg
    if case["phase"] == "prefill":
        x = rng.standard_normal((1, case["seq"], cfg.hidden), dtype=np.float32)
        return {"x": x}, {"logits": (1, case["seq"], cfg.vocab),
                          "kv": (cfg.layers, 2, 1, cfg.kv_heads, case["seq"], cfg.head_dim)}
    prompt = rng.standard_normal((1, case["past"], cfg.hidden), dtype=np.float32)
    with torch.inference_mode():
        _, kv = lm.prefill(torch.from_numpy(prompt))
    return ({"x": rng.standard_normal((1, 1, cfg.hidden), dtype=np.float32), "kv": kv.numpy().copy()},
            {"logits": (1, 1, cfg.vocab), "kv_new": (cfg.layers, 2, 1, cfg.kv_heads, 1, cfg.head_dim)})


def _worker(conn, name, options, inputs, out_shapes, threads):
    """One peer in a process of its own, as in the harness: prepared once, then one call per
    request, its own clock around the call. Stopped (SIGSTOP) by the parent between calls, so
    its thread pool's spin-waiting never runs beside another peer's call."""
    os.environ["OMP_NUM_THREADS"] = str(threads)
    import numpy as np
    import torch
    torch.set_num_threads(threads)
    from kernels.models import peers
    for a in inputs.values():
        a.setflags(write=False)   # as the harness maps them
    outputs = {k: np.full(s, np.nan, np.float32) for k, s in out_shapes.items()}
    t0 = time.perf_counter()
    try:
        call = getattr(peers, peers.PEERS[name][0].partition(":")[2])(inputs, outputs, {}, **options)
    except Exception as exc:   # an unavailable or mismatching peer is a note in the results
        conn.send(("failed", f"{type(exc).__name__}: {exc}"))
        return
    conn.send(("ready", round(time.perf_counter() - t0, 2)))
    while conn.recv() == "call":
        t = time.perf_counter()
        call()
        conn.send(time.perf_counter() - t)


class _Peer:
    def __init__(self, ctx, name, options, inputs, out_shapes, threads):
        self.name = name
        self.conn, child = ctx.Pipe()
        self.proc = ctx.Process(target=_worker, args=(child, name, options, inputs, out_shapes, threads), daemon=True)
        self.proc.start()

    def ready(self):
        return self.conn.recv()

    def __call__(self):
        os.kill(self.proc.pid, signal.SIGCONT)
        self.conn.send("call")
        t = self.conn.recv()
        os.kill(self.proc.pid, signal.SIGSTOP)
        return t

    def close(self):
        if self.proc.is_alive():
            os.kill(self.proc.pid, signal.SIGCONT)
            try:
                self.conn.send("exit")
            except OSError:
                pass
        self.proc.join(10)
        if self.proc.is_alive():
            self.proc.kill()


def run_case(cfg, lm, case, names, threads, args) -> dict:
    import multiprocessing

    import numpy as np

    from kernels.harness import calm
    from kernels.harness.timing import Impl, interleave, summarize
    from kernels.models import cost, peers

    rng = np.random.default_rng(case.get("seed", 0))
    inputs, out_shapes = _case_inputs(lm, case, rng)
    options = {"phase": case["phase"], "config": cfg.to_json(), "threads": threads}
    if any(n in ("onnxruntime", "openvino") for n in names):
        # The export happens here, in the trusted process, once; the peers' processes find
        # it in the cache (kernels/models/peers.py).
        t0 = time.perf_counter()
        peers.export_onnx(lm, case["phase"], [a.shape for a in inputs.values()])
        print(f"  ONNX export ready in {time.perf_counter() - t0:.1f} s", flush=True)
    ctx = multiprocessing.get_context("spawn")
    procs, impls, prep, notes = [], [], {}, {}
    try:
        for name in names:   # prepared one at a time: torch.compile and the exports take both cores
            peer = _Peer(ctx, name, options, inputs, out_shapes, threads)
            procs.append(peer)
            status, value = peer.ready()
            if status == "failed":
                notes[name] = value
                print(f"  {name}: not timed: {value}", flush=True)
                continue
            os.kill(peer.proc.pid, signal.SIGSTOP)
            prep[name] = value
            print(f"  {name}: prepared in {value} s", flush=True)
            impls.append(Impl(name, peer))
        pids = [p.proc.pid for p in procs]
        load_before = os.getloadavg()
        host0, ticks0 = calm.host_sample(pids), calm.cpu_ticks()
        samples = interleave(impls, rng=rng, min_calls=case["min_calls"], max_calls=case["max_calls"],
                             budget_s=args.budget, target_rel_err=0.01, warmup=2) or {}
        host1, ticks1 = calm.host_sample(pids), calm.cpu_ticks()
    finally:
        for peer in procs:
            peer.close()
    positions = case.get("past", 0)
    fl = cost.flops(cfg, case["phase"], seq=case.get("seq", 1), past=positions)
    wbytes, kbytes = cost.weight_bytes(cfg), cost.kv_bytes(cfg, positions=positions)
    results = {}
    for name, s in samples.items():
        summary = summarize(s)
        med_s = summary["median_ms"] / 1e3
        results[name] = {k: summary[k] for k in ("n", "median_ms", "q1_ms", "q3_ms", "iqr_ms", "min_ms")}
        results[name].update(gflops=round(fl / med_s / 1e9, 1), weight_gbs=round(wbytes / med_s / 1e9, 2),
                             read_gbs=round((wbytes + kbytes) / med_s / 1e9, 2), prepare_s=prep[name])
    others = calm.others_between(host0, host1)
    steal = calm.steal_between(ticks0, ticks1)
    return {
        "case": case["name"], "phase": case["phase"], "seq": case.get("seq"), "past": case.get("past"),
        "flops": fl, "weight_bytes": wbytes, "kv_bytes": kbytes, "peers": results, "not_timed": notes,
        "host": {"loadavg_before": [round(x, 2) for x in load_before],
                 "loadavg_after": [round(x, 2) for x in os.getloadavg()],
                 "others_cpus": None if others is None else round(others, 3),
                 "max_steal": None if steal is None else round(steal, 4)},
    }


def table(report: dict) -> str:
    names = list(report["peers"])
    lines = [f"{'median ± IQR/2':<22}" + "".join(f"{n:>16}" for n in names) + "   host: others' CPUs, load"]
    for case in report["cases"]:
        cells = []
        for n in names:
            r = case["peers"].get(n)
            cells.append(f"{r['median_ms']:>10.2f} ms ±{r['iqr_ms'] / 2:<3.1f}" if r else f"{'—':>16}")
        h = case["host"]
        lines.append(f"{case['case']:<22}" + "".join(f"{c:>16}" for c in cells)
                     + f"   {h['others_cpus']}, {h['loadavg_before'][0]}")
        rate = []
        for n in names:
            r = case["peers"].get(n)
            rate.append((f"{r['gflops']:.0f} GF/s" if case["phase"] == "prefill" else f"{r['read_gbs']:.1f} GB/s")
                        if r else "")
        lines.append(f"{'':<22}" + "".join(f"{c:>16}" for c in rate))
        lines.append(f"{'':<22}   {case['flops'] / 1e9:.3f} GFLOP, {case['weight_bytes'] / 1e6:.1f} MB of weights"
                     + (f" + {case['kv_bytes'] / 1e6:.1f} MB of KV cache" if case["kv_bytes"] else "") + " per call"
                     + "".join(f"; {n} not timed: {why}" for n, why in case["not_timed"].items()))
    return "\n".join(lines)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--model", default=None, help=f"a decoder spec (default {BENCH_MODEL})")
    ap.add_argument("--quick", action="store_true", help="a small model and few calls (a smoke run)")
    ap.add_argument("--budget", type=float, default=90.0, help="seconds of timing per case at most")
    ap.add_argument("--peers", default=",".join(["torch_eager", "torch_compile", "onnxruntime", "openvino"]))
    ap.add_argument("--cases", default="prefill,decode128,decode1024", help="which cases, in this order")
    ap.add_argument("--out", default=None)
    args = ap.parse_args(argv)
    # Every runtime's thread pool is sized before it starts: torch's here, ORT's and
    # OpenVINO's by the factories (threads=), OpenMP's through the environment.
    os.environ.setdefault("OMP_NUM_THREADS", str(args.threads))
    import torch

    from kernels.models.decoder import DecoderConfig, DecoderLM
    torch.set_num_threads(args.threads)
    cfg = DecoderConfig.from_text(args.model or (QUICK_MODEL if args.quick else BENCH_MODEL))
    lm = DecoderLM(cfg).eval()
    names = [n.strip() for n in args.peers.split(",") if n.strip()]
    calls = (3, 6) if args.quick else (15, 60)
    every = {
        "prefill": {"name": "prefill 1x128", "phase": "prefill", "seq": 128, "min_calls": calls[0],
                    "max_calls": calls[1]},
        "decode128": {"name": "decode after 128", "phase": "decode", "past": 128, "min_calls": 2 * calls[0],
                      "max_calls": 4 * calls[1]},
        "decode1024": {"name": "decode after 1024", "phase": "decode", "past": 1024, "min_calls": 2 * calls[0],
                       "max_calls": 4 * calls[1]},
    }
    unknown = [c for c in args.cases.split(",") if c not in every]
    if unknown:
        ap.error(f"unknown case(s) {', '.join(unknown)}; choose from {', '.join(every)}")
    cases = [every[c] for c in args.cases.split(",")]
    started = datetime.datetime.now(datetime.timezone.utc)
    out_cases = []
    for case in cases:
        print(f"{case['name']}:", flush=True)
        out_cases.append(run_case(cfg, lm, case, names, args.threads, args))
    report = {
        "benchmark": "engine_peers", "started": started.isoformat(timespec="seconds"),
        "model": cfg.to_json(), "threads": args.threads, "cpu": _cpu(), "cpus": os.cpu_count(),
        "versions": _versions(), "peers": {n: peers_description(n) for n in names}, "cases": out_cases,
    }
    stamp = started.strftime("%Y-%m-%d")
    host = platform.node().split(".")[0] or "host"
    path = Path(args.out) if args.out else ROOT / "bench" / "results" / (
        f"engine-peers-{stamp}-{host}{'-quick' if args.quick else ''}.json")
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(report, indent=1) + "\n")
    print(table(report))
    print(f"wrote {path}")
    return 0


def peers_description(name: str) -> str:
    from kernels.models.peers import DESCRIPTIONS
    return DESCRIPTIONS.get(name, name)


if __name__ == "__main__":
    sys.exit(main())
