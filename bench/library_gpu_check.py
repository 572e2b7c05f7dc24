"""kernels.library.load on a GPU host: each workload's CUDA seeds written to a scratch
library folder as champions, then called on NumPy arrays through the harness (compile,
audit, sandbox child on the GPU) and compared with the float64 reference.

    python -m bench library-gpu        # writes library_gpu_check.json under $OUT or bench/results

No Django: kernels/ is framework-free, so this runs with the device image's python3.
"""
from __future__ import annotations

import json
import os
import tempfile
import time
import traceback
from pathlib import Path

import numpy as np

from kernels import library, targets, workloads
from kernels.spec import Shape

SHAPES = {"softmax": (37, 1000), "rmsnorm": (33, 1001), "layernorm": (33, 1001), "matmul": (65, 33, 47)}


def main(argv: list[str] | None = None) -> int:
    out_dir = Path(os.environ.get("OUT") or Path(__file__).parent / "results")
    out_dir.mkdir(parents=True, exist_ok=True)
    report = {"available": targets.get("cuda").available(), "can_run": targets.get("cuda").can_run(), "checks": []}
    root = Path(tempfile.mkdtemp(prefix="int21-library-"))
    for name, dims_t in SHAPES.items():
        wl = workloads.get(name)
        shape = Shape(tuple(zip(wl.shape_dims, dims_t)))
        for version, (source, params) in enumerate(wl.template("cuda").seeds(), start=1):
            row = {"workload": name, "params": params, "shape": shape.label()}
            t0 = time.monotonic()
            try:
                manifest = {"workload": name, "target": "cuda", "version": version, "params": params,
                            "source_sha256": library.sha256(source), "shape_bucket": library.shape_bucket(shape)}
                library.write_version(manifest, source, root)
                library.set_champion(name, "cuda", manifest["shape_bucket"], version, root)
                fn = library.load(name, "cuda", manifest["shape_bucket"], root=root)
                data = wl.make_inputs(shape, wl.distributions[0], 3)
                arrays = {k: v for k, v in data.items() if isinstance(v, np.ndarray)}
                scalars = {k: v for k, v in data.items() if not isinstance(v, np.ndarray)}
                got = fn(**arrays, **scalars)
                got = got if isinstance(got, dict) else {wl.output_names()[0]: got}
                ref = wl.reference({**arrays, **scalars}, shape)
                row["max_abs_err"] = {k: float(np.max(np.abs(got[k].astype(np.float64) - ref[k]))) for k in ref}
                tol = wl.tolerance
                row["passed"] = all(np.allclose(got[k], ref[k], atol=tol.atol or 1e-4, rtol=tol.rtol or 1e-4)
                                    for k in ref)
            except Exception as exc:
                row["passed"] = False
                row["error"] = f"{type(exc).__name__}: {exc}"
                row["trace"] = traceback.format_exc()[-1500:]
            row["seconds"] = round(time.monotonic() - t0, 2)
            print(json.dumps({k: v for k, v in row.items() if k != "trace"}), flush=True)
            report["checks"].append(row)
    (out_dir / "library_gpu_check.json").write_text(json.dumps(report, indent=2, default=str))
    return 0 if all(r["passed"] for r in report["checks"]) else 1

