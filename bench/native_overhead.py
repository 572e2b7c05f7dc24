"""What calling an approved kernel in-process costs over the kernel's own run time.

    python -m bench.native_overhead [--shape 4x64] [--calls 20000]

The kernel's own time is measured by a tiny C driver that dlopens the same built object and
calls ``kernel`` in a loop (no Python in between); then the same kernel through
``kernels.native.load(...)(x, out=y)`` (ctypes) and through ``kernels.native.torch_op(...)``
(a torch.library custom op, output allocated by torch). The overhead is the difference of
medians over repeated batches, measured side by side. Writes bench/results/native-<date>.json.
"""
from __future__ import annotations

import argparse
import datetime
import json
import statistics
import subprocess
import tempfile
import time
from pathlib import Path

import numpy as np

DRIVER = r"""
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
typedef void (*fn_t)(const float *, float *, int64_t, int64_t);
int main(int argc, char **argv) {
    void *h = dlopen(argv[1], RTLD_NOW); if (!h) return 1;
    fn_t k = (fn_t)dlsym(h, "kernel");
    int64_t rows = atoll(argv[2]), cols = atoll(argv[3]); long calls = atol(argv[4]);
    float *x = malloc(sizeof(float) * rows * cols), *y = malloc(sizeof(float) * rows * cols);
    for (long i = 0; i < rows * cols; i++) x[i] = (float)(i % 7) * 0.1f;
    for (int rep = 0; rep < 7; rep++) {
        struct timespec a, b; clock_gettime(CLOCK_MONOTONIC, &a);
        for (long i = 0; i < calls; i++) k(x, y, rows, cols);
        clock_gettime(CLOCK_MONOTONIC, &b);
        printf("%.6f\n", ((b.tv_sec - a.tv_sec) * 1e9 + (b.tv_nsec - a.tv_nsec)) / calls / 1e3);
    }
    return 0;
}
"""


def _per_call_us(fn, calls: int, reps: int = 7) -> list[float]:
    out = []
    for _ in range(reps):
        t0 = time.perf_counter_ns()
        for _ in range(calls):
            fn()
        out.append((time.perf_counter_ns() - t0) / calls / 1e3)
    return out


def main(argv=None) -> int:
    from kernels import library, native, workloads
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--shape", default="4x64")
    ap.add_argument("--calls", type=int, default=20000)
    args = ap.parse_args(argv)
    rows, cols = (int(v) for v in args.shape.split("x"))
    wl = workloads.get("softmax")
    source, params = wl.template("cpu").seeds()[0]
    params = {**params, "THREADS": 1}
    with tempfile.TemporaryDirectory() as root:
        manifest = {"workload": "softmax", "target": "cpu", "version": 1, "source_sha256": library.sha256(source),
                    "params": params, "proposal": {"required_approvals": 1}, "approvals": [{"reviewer": "bench"}]}
        library.write_version(manifest, source, root)
        library.set_champion("softmax", "cpu", library.shape_bucket({"rows": rows, "cols": cols}), 1, root)
        k = native.load("softmax", root=root)
        with tempfile.TemporaryDirectory() as tmp:
            (Path(tmp) / "d.c").write_text(DRIVER)
            subprocess.run(["gcc", "-O2", "-o", f"{tmp}/d", f"{tmp}/d.c", "-ldl"], check=True)
            own = [float(v) for v in subprocess.run([f"{tmp}/d", str(k.path), str(rows), str(cols), str(args.calls)],
                                                    check=True, capture_output=True, text=True).stdout.split()]
        x = np.random.default_rng(0).standard_normal((rows, cols)).astype(np.float32)
        y = np.empty_like(x)
        ctypes_us = _per_call_us(lambda: k(x, out=y), args.calls)
        result = {"date": datetime.datetime.now().isoformat(timespec="seconds"), "shape": args.shape,
                  "calls_per_batch": args.calls, "own_us": own, "ctypes_us": ctypes_us,
                  "command": f"python -m bench.native_overhead --shape {args.shape} --calls {args.calls}"}
        try:
            import torch
            torch.set_num_threads(1)
            op = native.torch_op("softmax", root=root)
            tx = torch.from_numpy(x)
            result["torch_op_us"] = _per_call_us(lambda: op(tx), args.calls // 4)
        except ImportError:
            result["torch_op_us"] = None
    med = {k2: statistics.median(v) for k2, v in result.items() if k2.endswith("_us") and v}
    result["overhead_us"] = {"ctypes": med["ctypes_us"] - med["own_us"],
                             "torch_op": (med["torch_op_us"] - med["own_us"]) if "torch_op_us" in med else None}
    result["target_us"] = 10.0
    out = Path(__file__).resolve().parent / "results" / f"native-{datetime.date.today()}.json"
    out.write_text(json.dumps(result, indent=2))
    print(f"kernel alone {med['own_us']:.2f} us/call; ctypes {med['ctypes_us']:.2f} us "
          f"(+{result['overhead_us']['ctypes']:.2f}); torch op "
          f"{med.get('torch_op_us', float('nan')):.2f} us (+{result['overhead_us']['torch_op'] or float('nan'):.2f}); "
          f"target <= 10 us over the kernel -> {out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
