"""What calling an approved kernel or engine in-process costs over its own run time.

    python -m bench native [--shape 4x64] [--calls 1000] [--engine-calls 200] [--rounds 101] [--no-engine]

Three ways to make the same call, timed in batches that take turns, round after round, in
one process (a fresh random order each round, as the harness interleaves a candidate with its
baselines, so the host's load drifts over all three alike):

- **own**: a C loop calling the entry point of the very object ``kernels.native`` built and
  loaded (a small helper library, loaded with ctypes, that dlopens it and calls it ``calls``
  times with the same arguments: no Python in between);
- **ctypes**: the Python callable the library returns (``native.load(...)(x, out=y)``, or an
  engine's ``eng.decode(x, kv, out=...)``);
- **torch_op**: the ``torch.library`` custom op (outputs allocated by torch).

The overhead of a path is the median over rounds of (its per-call time − own's per-call
time in the same round); the difference of the per-path minimums is reported beside it
and so is the difference of their 10th percentiles (on a shared host, noise only ever adds
time, so the low ends are the calls least disturbed).

The kernel case is softmax at ``--shape`` (1 thread). The engine case is one decode step of a
tiny decoder engine (hidden 32, 2 heads over 1 K/V head, FFN 64, 1 layer, vocabulary 64,
one token after 3 cached), imported into a temporary ops store, its phases at their default
points written as an approved version of a temporary library and loaded by
``kernels.library.load_engine`` (36 arguments a call). Writes
bench/results/native-<date>[-N].json (never over an earlier file).
"""
from __future__ import annotations

import argparse
import ctypes
import datetime
import json
import os
import random
import statistics
import subprocess
import tempfile
import time
from pathlib import Path

import numpy as np

KINDS = {"in": "const void *", "out": "void *", "dim": "int64_t", "f32": "float"}

HELPER = r"""
#include <dlfcn.h>
#include <stdint.h>
#include <stdlib.h>
#include <time.h>
typedef void (*fn_t)(%(proto)s);
static fn_t k;
%(state)s
int setup(const char *so%(setup_args)s) {
    void *h = dlopen(so, RTLD_NOW | RTLD_LOCAL); if (!h) return 1;
    k = (fn_t)dlsym(h, "kernel"); if (!k) return 2;
%(setup)s
    return 0;
}
static double us(struct timespec a, struct timespec b, long calls) {
    return ((b.tv_sec - a.tv_sec) * 1e9 + (b.tv_nsec - a.tv_nsec)) / calls / 1e3;
}
/* µs per call of this thread's CPU time; *wall gets the wall-clock µs per call */
double loop(long calls, double *wall) {
    struct timespec a, b, c, d;
    clock_gettime(CLOCK_MONOTONIC, &a); clock_gettime(CLOCK_THREAD_CPUTIME_ID, &c);
    for (long i = 0; i < calls; i++) k(%(call)s);
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &d); clock_gettime(CLOCK_MONOTONIC, &b);
    *wall = us(a, b, calls);
    return us(c, d, calls);
}
"""


def _helper(tmp: str, **parts) -> ctypes.CDLL:
    src, so = Path(tmp) / "helper.c", Path(tmp) / "helper.so"
    src.write_text(HELPER % parts)
    subprocess.run(["gcc", "-O2", "-shared", "-fPIC", "-o", str(so), str(src), "-ldl"], check=True)
    lib = ctypes.CDLL(str(so))
    lib.loop.restype, lib.loop.argtypes = ctypes.c_double, [ctypes.c_long, ctypes.POINTER(ctypes.c_double)]
    return lib


def kernel_helper(tmp: str, rows: int, cols: int) -> ctypes.CDLL:
    lib = _helper(tmp, proto="const float *, float *, int64_t, int64_t",
                  state="static float *x, *y; static int64_t rows, cols;", setup_args=", long r, long c",
                  setup="    rows = r; cols = c; x = malloc(sizeof(float) * r * c); y = malloc(sizeof(float) * r * c);\n"
                        "    for (long i = 0; i < r * c; i++) x[i] = (float)(i % 7) * 0.1f;",
                  call="x, y, rows, cols")
    lib.setup.argtypes = [ctypes.c_char_p, ctypes.c_long, ctypes.c_long]
    return lib


def engine_helper(tmp: str, info: dict, entry: dict, offsets: dict) -> ctypes.CDLL:
    """The phase's call with the weights (read from a weights.bin) and the activations (one
    file, float32, in the phase's input order) in place; outputs allocated once."""
    weights = dict(zip(info["weight_args"], entry["weights"]))
    size = {n: int(np.prod(s)) for n, s in {**entry["inputs"], **entry["outputs"]}.items()}
    total = sum(size[n] for n in info["inputs"])
    setup = ["    FILE *f = fopen(wpath, \"rb\"); W = malloc(nw * sizeof(float));",
             "    if (!f || !W || fread(W, sizeof(float), nw, f) != (size_t)nw) return 3; fclose(f);",
             f"    A = malloc({total} * sizeof(float)); f = fopen(apath, \"rb\");",
             f"    if (!f || !A || fread(A, sizeof(float), {total}, f) != {total}) return 4; fclose(f);"]
    at = 0
    for n in info["inputs"]:
        setup.append(f"    in_{n} = A + {at};")
        at += size[n]
    setup += [f"    out_{n} = malloc({size[n]} * sizeof(float));" for n in entry["outputs"]]
    call = []
    for a in info["args"]:
        if a["kind"] == "dim":
            call.append(str(int(entry["dims"][a["name"]])))
        elif a["kind"] == "out":
            call.append(f"out_{a['name']}")
        elif a["name"] in weights:
            call.append(f"W + {offsets[weights[a['name']]]}")
        else:
            call.append(f"in_{a['name']}")
    state = "#include <stdio.h>\nstatic float *W, *A;\n" + "".join(
        f"static float *in_{n};\n" for n in info["inputs"]) + "".join(f"static float *out_{n};\n" for n in entry["outputs"])
    lib = _helper(tmp, proto=", ".join(KINDS[a["kind"]] for a in info["args"]), state=state,
                  setup_args=", const char *wpath, long nw, const char *apath", setup="\n".join(setup),
                  call=", ".join(call))
    lib.setup.argtypes = [ctypes.c_char_p, ctypes.c_char_p, ctypes.c_long, ctypes.c_char_p]
    return lib


def _batch(fn, calls: int) -> tuple[float, float]:
    """(this thread's CPU µs, wall µs) per call of ``fn`` over ``calls`` calls."""
    w0, c0 = time.perf_counter_ns(), time.thread_time_ns()
    for _ in range(calls):
        fn()
    c1, w1 = time.thread_time_ns(), time.perf_counter_ns()
    return (c1 - c0) / calls / 1e3, (w1 - w0) / calls / 1e3


def _own(loop):
    def run(calls: int) -> tuple[float, float]:
        wall = ctypes.c_double()
        cpu = loop(calls, ctypes.byref(wall))
        return cpu, wall.value
    return run


def interleaved(paths: dict, calls: int, rounds: int) -> dict:
    """{"cpu": {path: [per-call µs of this thread's CPU time, one per round]}, "wall": the same
    by the wall clock}; ``paths["own"]`` is the helper's loop."""
    runs = {name: (_own(fn) if name == "own" else (lambda calls, fn=fn: _batch(fn, calls))) for name, fn in paths.items()}
    for run in runs.values():             # warm up each once
        run(max(calls // 10, 1))
    out = {"cpu": {name: [] for name in runs}, "wall": {name: [] for name in runs}}
    rng = random.Random(0)
    for _ in range(rounds):
        order = list(runs)
        rng.shuffle(order)
        for name in order:
            cpu, wall = runs[name](calls)
            out["cpu"][name].append(cpu)
            out["wall"][name].append(wall)
    return out


def summary(times: dict) -> dict:
    """Per clock: own's median and minimum, and each path's overhead over own."""
    out = {}
    for clock, by_path in times.items():
        own = by_path["own"]
        over = {}
        for name, ts in by_path.items():
            if name == "own":
                continue
            over[name] = {"median_of_differences_us": statistics.median(t - o for t, o in zip(ts, own)),
                          "difference_of_10th_percentiles_us": _p10(ts) - _p10(own),
                          "difference_of_minimums_us": min(ts) - min(own), "median_us": statistics.median(ts)}
        out[clock] = {"own_median_us": statistics.median(own), "own_min_us": min(own), "overhead": over}
    return out


def _p10(values: list[float]) -> float:
    return sorted(values)[len(values) // 10]


def kernel_case(shape: str, calls: int, rounds: int) -> dict:
    import torch

    from kernels import library, native, workloads
    rows, cols = (int(v) for v in shape.split("x"))
    source, params = workloads.get("softmax").template("cpu").seeds()[0]
    params = {**params, "THREADS": 1}
    with tempfile.TemporaryDirectory() as root:
        manifest = {"workload": "softmax", "target": "cpu", "version": 1, "source_sha256": library.sha256(source),
                    "params": params, "proposal": {"required_approvals": 1}, "approvals": [{"reviewer": "bench"}]}
        library.write_version(manifest, source, root)
        library.set_champion("softmax", "cpu", library.shape_bucket({"rows": rows, "cols": cols}), 1, root)
        k = native.load("softmax", root=root)
        op = native.torch_op("softmax", root=root)
        helper = kernel_helper(root, rows, cols)
        assert helper.setup(str(k.path).encode(), rows, cols) == 0
        x = np.random.default_rng(0).standard_normal((rows, cols)).astype(np.float32)
        y = np.empty_like(x)
        tx = torch.from_numpy(x)
        times = interleaved({"own": helper.loop, "ctypes": lambda: k(x, out=y), "torch_op": lambda: op(tx)},
                            calls, rounds)
    return {"workload": "softmax", "shape": shape, "calls_per_batch": calls, "rounds": rounds, "times_us": times,
            "summary": summary(times)}


def engine_case(calls: int, rounds: int) -> dict:
    import torch

    from kernels import library, workloads
    from kernels.engine import release, service
    from kernels.models.decoder import DecoderConfig
    # as small as the family goes: the overhead is per call, and a short call keeps the host's
    # noise (preemption on a shared 2-core VM: tens of µs) from hiding it
    cfg = DecoderConfig(hidden=32, heads=2, kv_heads=1, ffn=64, layers=1, vocab=64, max_seq=4)
    old_ops = os.environ.get("INT21_OPS_DIR")
    try:
        with tempfile.TemporaryDirectory() as tmp:
            os.environ["INT21_OPS_DIR"] = f"{tmp}/ops"
            record = service.engine_import(service.Model("decoder", cfg), name="bench")
            chosen = {p: workloads.get(i["workload"]).template("cpu").seeds()[0] for p, i in record["phases"].items()}
            rel = release.release("bench", chosen)
            manifest = {**rel.manifest, "version": 1, "proposal": {"required_approvals": 1},
                        "approvals": [{"reviewer": "bench"}]}
            library.write_engine_version(manifest, rel.sources, rel.weights, f"{tmp}/lib")
            eng = library.load_engine("bench", root=f"{tmp}/lib")
            phase, info = eng.phases["decode"], manifest["phases"]["decode"]
            entry = next(e for e in info["shapes"] if e["dims"]["PAST"] == 3)
            rng = np.random.default_rng(0)
            acts = {n: rng.standard_normal(entry["inputs"][n]).astype(np.float32) for n in info["inputs"]}
            (Path(tmp) / "w.bin").write_bytes(rel.weights)
            (Path(tmp) / "a.bin").write_bytes(b"".join(acts[n].tobytes() for n in info["inputs"]))
            helper = engine_helper(tmp, info, entry, {t["name"]: t["offset"] for t in manifest["weights"]["tensors"]})
            assert helper.setup(str(phase.path).encode(), f"{tmp}/w.bin".encode(), len(rel.weights) // 4,
                                f"{tmp}/a.bin".encode()) == 0
            x, kv = acts["x"], acts["kv"]
            out = tuple(np.empty(entry["outputs"][n], dtype=np.float32) for n in phase.outputs)
            op = eng.torch_op("decode")
            tx, tkv = torch.from_numpy(x), torch.from_numpy(kv)
            times = interleaved({"own": helper.loop, "ctypes": lambda: eng.decode(x, kv, out=out),
                                 "torch_op": lambda: op(tx, tkv)}, calls, rounds)
    finally:
        if old_ops is None:
            os.environ.pop("INT21_OPS_DIR", None)
        else:
            os.environ["INT21_OPS_DIR"] = old_ops
    return {"model": cfg.to_json(), "phase": "decode", "past": 3, "arguments": len(info["args"]),
            "calls_per_batch": calls, "rounds": rounds, "times_us": times, "summary": summary(times)}


def _cpu_seconds() -> tuple[float, float]:
    """(CPU seconds every program has used since boot, now): the host's load while timed."""
    with open("/proc/stat") as f:
        cpu = [int(v) for v in f.readline().split()[1:]]
    hz = os.sysconf("SC_CLK_TCK")
    return sum(cpu[:3]) / hz, time.monotonic()


def main(argv=None) -> int:
    import torch
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--shape", default="4x64")
    ap.add_argument("--calls", type=int, default=1000, help="kernel calls per batch")
    ap.add_argument("--engine-calls", type=int, default=200, help="engine calls per batch")
    ap.add_argument("--rounds", type=int, default=101)
    ap.add_argument("--no-engine", action="store_true", help="the kernel case alone")
    args = ap.parse_args(argv)
    torch.set_num_threads(1)
    command = (f"python -m bench native --shape {args.shape} --calls {args.calls} --engine-calls {args.engine_calls} "
               f"--rounds {args.rounds}" + (" --no-engine" if args.no_engine else ""))
    result = {"date": datetime.datetime.now().isoformat(timespec="seconds"), "command": command, "target_us": 10.0,
              "cpus": os.cpu_count(), "loadavg_before": list(os.getloadavg())}
    busy0, wall0 = _cpu_seconds()
    result["kernel"] = kernel_case(args.shape, args.calls, args.rounds)
    if not args.no_engine:
        result["engine"] = engine_case(args.engine_calls, args.rounds)
    busy1, wall1 = _cpu_seconds()
    result["loadavg_after"] = list(os.getloadavg())
    result["cpus_busy_while_timed"] = round((busy1 - busy0) / (wall1 - wall0), 2)
    folder = Path(__file__).resolve().parent / "results"
    out = folder / f"native-{datetime.date.today()}.json"
    n = 2
    while out.exists():
        out = folder / f"native-{datetime.date.today()}-{n}.json"
        n += 1
    out.write_text(json.dumps(result, indent=2))
    for case in ("kernel", "engine"):
        if case not in result:
            continue
        for clock in ("cpu", "wall"):
            r = result[case]["summary"][clock]
            print(f"{case} ({clock}): alone {r['own_median_us']:.2f} us/call (min {r['own_min_us']:.2f}); "
                  + "; ".join(f"{p} +{v['median_of_differences_us']:.2f} us (10th percentiles: "
                              f"+{v['difference_of_10th_percentiles_us']:.2f}, minimums: "
                              f"+{v['difference_of_minimums_us']:.2f})" for p, v in r["overhead"].items()))
    print(f"target <= 10 us over the call's own time; CPUs busy while timed {result['cpus_busy_while_timed']} "
          f"of {result['cpus']} -> {out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
