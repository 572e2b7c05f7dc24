"""Times an imported problem's baselines (the user's model: torch eager, torch.compile) on
the workload's own timing inputs, in this process — run it as a subprocess, never in the
process that computes references. Prints one JSON object: {name: {"median_ms", "min_ms"}}.

Used by bench/ownops/run.py while the harness's timing child does not yet pass a baseline's
``options`` (then the evaluator times them interleaved with the kernel, which is better).
"""
from __future__ import annotations

import json
import sys
import time


def main(name: str, which: list[str], calls: int = 20) -> dict:
    import importlib

    import numpy as np
    import torch
    from kernels import workloads
    torch.set_num_threads(__import__("os").cpu_count() or 1)
    wl = workloads.get(name)
    shape = wl.shapes.typical[0]
    feeds = wl.make_inputs(shape, wl.distributions[0], 9001)
    out = {}
    for b in wl.baselines["cpu"]:
        if b.name not in which:
            continue
        outputs = {k: np.empty(s, dtype=np.float32) for k, s in wl.out_shapes(shape).items()}
        mod, _, attr = b.fn.partition(":")
        call = getattr(importlib.import_module(mod), attr)(feeds, outputs, shape.as_dict(), **b.options)
        for _ in range(3):
            call()
        ts = []
        for _ in range(calls):
            t = time.perf_counter()
            call()
            ts.append((time.perf_counter() - t) * 1e3)
        ts.sort()
        out[b.name] = {"median_ms": ts[len(ts) // 2], "min_ms": ts[0]}
    return out


if __name__ == "__main__":
    print(json.dumps(main(sys.argv[1], sys.argv[2].split(","))))
