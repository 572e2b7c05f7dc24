"""What a promoted kernel ships as: files that build as shipped and test themselves.

``files(...)`` returns, by path inside the bundle:

- ``kernel.c``: the source with its tuned parameters baked in as ``#define`` lines (the
  library keeps the source and the parameters apart; compiled as shipped it is the kernel
  that was approved, not the template's defaults);
- ``kernel.h``: the entry point's declaration;
- ``include/int21/*.h``: the harness headers the source includes;
- ``test.c``: a tiny program calling the kernel on a known input (drawn by the workload,
  written out as C arrays) and checking every output against the float64 reference within
  the workload's tolerance — it prints ``ok`` and exits 0, or says which value is off;
- ``build.sh``: the exact compiler commands and flags (the harness's own), then the test;
- ``manifest.json``: the evidence.
CUDA kernels ship their source, header, the nvcc command and the manifest (a test program
needs a GPU; the campaign's checks are the equivalent).
"""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from kernels import workloads
from kernels.spec import Shape, c_signature

INCLUDE = Path(__file__).resolve().parent / "harness" / "include"


def baked(source: str, params: dict) -> str:
    lines = ["/* Tuned parameters, as approved (the harness passes them as -D flags). */"]
    for name, value in sorted(params.items()):
        if isinstance(value, bool):
            value = int(value)
        if isinstance(value, int):
            lines.append(f"#define {name} {value}")
        else:
            lines.append(f"/* {name} = {value} (a variant: this source is that variant) */")
    return "\n".join(lines) + "\n\n" + source


def _c_array(name: str, arr: np.ndarray, const: bool = True) -> str:
    flat = np.ascontiguousarray(arr, dtype=np.float64).reshape(-1)
    values = ", ".join(repr(float(v)) if np.isfinite(v) else ("-INFINITY" if v < 0 else "INFINITY" if v > 0 else "NAN")
                       for v in flat)
    kind = "static const double" if arr.dtype == np.float64 else ("static const float" if const else "static float")
    return f"{kind} {name}[{max(flat.size, 1)}] = {{{values or '0'}}};"


def test_program(workload: str, shape: Shape | None = None) -> str:
    wl = workloads.get(workload)
    shape = shape or wl.shapes.minimal[-1]
    data = wl.make_inputs(shape, wl.distributions[0], 0)
    inputs = {n: np.ascontiguousarray(v, dtype=np.float32) for n, v in data.items() if isinstance(v, np.ndarray)}
    scalars = {n: float(v) for n, v in data.items() if not isinstance(v, np.ndarray)}
    ref = wl.reference({**inputs, **scalars}, shape)
    tol = wl.tolerance
    lines = ["/* generated: calls the kernel on a known input and checks it against the float64 reference */",
             "#include <math.h>", "#include <stdio.h>", "#include <stdint.h>", '#include "kernel.h"', ""]
    for n, a in inputs.items():
        lines.append(_c_array(f"in_{n}", a))
    for n, r in ref.items():
        lines.append(_c_array(f"want_{n}", r))
        lines.append(f"static float out_{n}[{max(r.size, 1)}];")
    call = []
    for a in wl.args:
        if a.kind == "in":
            call.append(f"in_{a.name}")
        elif a.kind == "out":
            call.append(f"out_{a.name}")
        elif a.kind == "dim":
            call.append(str(int(shape[a.name])))
        else:
            call.append(repr(float(scalars[a.name])) + "f")
    lines += ["", "int main(void) {", f"    kernel({', '.join(call)});", "    int bad = 0;"]
    for n, r in ref.items():
        if tol.rel_rmse is not None:
            lines += [f"    {{ double num = 0, den = 0; for (long i = 0; i < {r.size}; i++) {{",
                      f"        double d = out_{n}[i] - want_{n}[i]; num += d * d; den += want_{n}[i] * want_{n}[i]; }}",
                      "      double e = den > 0 ? sqrt(num / den) : sqrt(num);",
                      f"      if (!(e <= {tol.rel_rmse!r})) {{ printf(\"{n}: relative RMSE %g > {tol.rel_rmse!r}\\n\", e); bad = 1; }} }}"]
        else:
            lines += [f"    for (long i = 0; i < {r.size}; i++) {{",
                      f"        double w = want_{n}[i], g = out_{n}[i];",
                      f"        if (!(fabs(g - w) <= {tol.atol!r} + {tol.rtol!r} * fabs(w))) {{",
                      f"            printf(\"{n}[%ld] = %.9g, expected %.9g\\n\", i, g, w); bad = 1; break; }} }}"]
    lines += ['    if (!bad) printf("ok\\n");', "    return bad;", "}", ""]
    return "\n".join(lines)


def files(workload: str, target: str, source: str, params: dict, manifest: dict, *, name: str = "kernel") -> dict:
    wl = workloads.get(workload)
    out: dict[str, str | bytes] = {}
    if target == "cuda":
        out["kernel.cu"] = baked(source, params)
        out["kernel.h"] = f"#pragma once\n#include <stdint.h>\n{wl.signature('cuda')};\n"
        out["build.sh"] = ("#!/bin/sh\n# The harness's own build of this kernel (set -arch for your GPU).\nset -e\n"
                           "nvcc -cubin -arch=sm_90 -O3 -Xptxas -v -o kernel.cubin kernel.cu\n")
    else:
        from kernels.targets.cpu import BASE_FLAGS
        flags = " ".join(f for f in BASE_FLAGS if not f.startswith("-I") and f != "-fPIE")
        out["kernel.c"] = baked(source, params)
        out["kernel.h"] = f"#pragma once\n#include <stdint.h>\n{c_signature(wl.args)};\n"
        for h in sorted(INCLUDE.rglob("*.h")):
            out[f"include/{h.relative_to(INCLUDE).as_posix()}"] = h.read_text()
        out["test.c"] = test_program(workload)
        out["build.sh"] = ("#!/bin/sh\n# The harness's own flags; libkernel.so is the kernel as approved.\nset -e\n"
                           f"cd \"$(dirname \"$0\")\"\n"
                           f"${{CC:-gcc}} {flags} -fPIC -shared -Iinclude -o libkernel.so kernel.c -lm\n"
                           f"${{CC:-gcc}} -O2 -o test test.c -L. -lkernel -Wl,-rpath,'$ORIGIN' -lm\n"
                           "./test\n")
    out["manifest.json"] = json.dumps(manifest, indent=2, sort_keys=True, default=str)
    return out
