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

``engine_files(...)`` is the same for an engine version (one unit, several phases):
``<engine>_<phase>.c`` per phase (tuned parameters baked in; the entry point renamed
``<engine>_<phase>`` so the phases link into one library), ``<engine>.h`` with every entry
point, ``weights.bin`` (float32, the layout in the manifest; left out above
``WEIGHTS_IN_ZIP`` bytes, the example then reads the library's copy), ``example.c`` (loads
the weights, runs the smallest prefill and a decode step fed its K/V output, checks both
against the float64 reference), ``build.sh`` (the harness's flags, then the example) and
``manifest.json``.
"""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from kernels import workloads
from kernels.harness.cases import Case, materialise
from kernels.spec import Shape, c_signature

INCLUDE = Path(__file__).resolve().parent / "harness" / "include"


WEIGHTS_IN_ZIP = 64 << 20


def baked(source: str, params: dict, entry: str | None = None) -> str:
    lines = ["/* Tuned parameters, as approved (the harness passes them as -D flags). */"]
    if entry:
        lines = ["/* The entry point, named for its engine and phase (the harness calls it kernel). */",
                 f"#define kernel {entry}"] + lines
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


def _check(got: str, want: str, size: int, label: str, atol: float, rtol: float, rel_rmse: float | None) -> list[str]:
    """C lines comparing ``got`` with ``want`` (double) within the tolerance; set ``bad``."""
    if rel_rmse is not None:
        return [f"    {{ double num = 0, den = 0; for (long i = 0; i < {size}; i++) {{",
                f"        double d = {got}[i] - {want}[i]; num += d * d; den += {want}[i] * {want}[i]; }}",
                "      double e = den > 0 ? sqrt(num / den) : sqrt(num);",
                f"      if (!(e <= {rel_rmse!r})) {{ printf(\"{label}: relative RMSE %g > {rel_rmse!r}\\n\", e); bad = 1; }} }}"]
    return [f"    for (long i = 0; i < {size}; i++) {{",
            f"        double w = {want}[i], g = {got}[i];",
            f"        if (!(fabs(g - w) <= {atol!r} + {rtol!r} * fabs(w))) {{",
            f"            printf(\"{label}[%ld] = %.9g, expected %.9g\\n\", i, g, w); bad = 1; break; }} }}"]


def test_program(workload: str, shape: Shape | None = None) -> str:
    wl = workloads.get(workload)
    shape = shape or wl.shapes.minimal[-1]
    case = Case("bundle", "minimal", shape, wl.distributions[0], 0)
    materialise(wl, case)        # in the harness's memory-limited child, as every reference is
    inputs, scalars, ref = case.inputs, case.scalars, case.reference
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
        lines += _check(f"out_{n}", f"want_{n}", r.size, n, tol.atol, tol.rtol, tol.rel_rmse)
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
        flags = _cpu_flags()
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


# --------------------------------------------------------------------------- engines

def _cpu_flags() -> str:
    from kernels.targets.cpu import BASE_FLAGS
    return " ".join(f for f in BASE_FLAGS if not f.startswith("-I") and f != "-fPIE")


def engine_example(manifest: dict, calls: list[dict]) -> str:
    """The C example: read weights.bin, make the calls in ``calls`` (kernels.engine.release.
    example_case), check each output against its reference; prints ``ok`` and exits 0."""
    name = manifest["engine"]
    lines = ["/* generated: loads the weights, calls the engine's phases in order and checks each output",
             "   against the float64 reference of the whole model. Usage: ./example [weights.bin] */",
             "#include <math.h>", "#include <stdio.h>", "#include <stdlib.h>", "#include <stdint.h>",
             f'#include "{name}.h"', ""]
    offsets = {t["name"]: t["offset"] for t in manifest["weights"]["tensors"]}
    body = []
    for k, call in enumerate(calls):
        info = manifest["phases"][call["phase"]]
        entry = info["shapes"][call["shape"]]
        for n, v in call["inputs"].items():
            if not isinstance(v, tuple):
                lines.append(_c_array(f"in{k}_{n}", np.asarray(v, dtype=np.float32)))
        for n, r in call["expected"].items():
            lines.append(_c_array(f"want{k}_{n}", np.asarray(r, dtype=np.float64)))
            lines.append(f"static float out{k}_{n}[{max(int(np.size(r)), 1)}];")
        weights = dict(zip(info["weight_args"], entry["weights"]))
        args = []
        for a in info["args"]:
            if a["kind"] == "dim":
                args.append(str(int(entry["dims"][a["name"]])))
            elif a["kind"] == "out":
                args.append(f"out{k}_{a['name']}")
            elif a["name"] in weights:
                args.append(f"W + {offsets[weights[a['name']]]}")
            else:
                v = call["inputs"][a["name"]]
                args.append(f"out{v[1]}_{v[2]}" if isinstance(v, tuple) else f"in{k}_{a['name']}")
        tol = info["tolerance"]
        body += [f"    /* {call['phase']} at {', '.join(f'{n} {s}' for n, s in entry['inputs'].items())} */",
                 f"    {name}_{call['phase']}({', '.join(args)});"]
        for n, r in call["expected"].items():
            body += _check(f"out{k}_{n}", f"want{k}_{n}", int(np.size(r)), f"{call['phase']} {n}",
                           tol["atol"], tol["rtol"], tol.get("rel_rmse"))
    n_floats = manifest["weights"]["bytes"] // 4
    lines += ["", "int main(int argc, char **argv) {",
              '    const char *path = argc > 1 ? argv[1] : "weights.bin";',
              f"    float *W = malloc({max(n_floats, 1)} * sizeof(float));",
              '    FILE *f = fopen(path, "rb");',
              f"    if (!W || !f || fread(W, sizeof(float), {n_floats}, f) != {n_floats}) {{",
              '        fprintf(stderr, "cannot read %s\\n", path); return 2; }',
              "    fclose(f);", "    int bad = 0;", *body,
              '    if (!bad) printf("ok\\n");', "    free(W);", "    return bad;", "}", ""]
    return "\n".join(lines)


def engine_files(manifest: dict, sources: dict, weights: bytes | None, calls: list[dict] | None) -> dict:
    """An engine version's bundle, by path (see the module's docstring)."""
    name = manifest["engine"]
    out: dict[str, str | bytes] = {}
    for phase, info in manifest["phases"].items():
        out[f"{name}_{phase}.c"] = baked(sources[phase], info.get("params") or {}, entry=f"{name}_{phase}")
    out[f"{name}.h"] = ("#pragma once\n#include <stdint.h>\n/* One entry point per phase: activations, then the "
                        "weights (offsets into weights.bin: manifest.json), then the outputs, then the dims. */\n"
                        + "".join(f"{info['entry_point']};\n" for info in manifest["phases"].values()))
    for h in sorted(INCLUDE.rglob("*.h")):
        out[f"include/{h.relative_to(INCLUDE).as_posix()}"] = h.read_text()
    srcs = " ".join(f"{name}_{p}.c" for p in manifest["phases"])
    run = "./example weights.bin\n"
    if weights is not None and len(weights) <= WEIGHTS_IN_ZIP:
        out["weights.bin"] = weights
    else:
        run = ("# weights.bin is not in the zip (too large): it is the library's copy,\n"
               f"# <INT21_LIBRARY_DIR>/_engines/{name}/v{manifest['version']:04d}/weights.bin\n"
               "./example \"${1:-weights.bin}\"\n")
    if calls:
        out["example.c"] = engine_example(manifest, calls)
    out["build.sh"] = ("#!/bin/sh\n# The harness's own flags; lib" + name + ".so is the engine as approved.\nset -e\n"
                       "cd \"$(dirname \"$0\")\"\n"
                       f"${{CC:-gcc}} {_cpu_flags()} -fPIC -shared -Iinclude -o lib{name}.so {srcs} -lm\n"
                       + (f"${{CC:-gcc}} -O2 -o example example.c -L. -l{name} -Wl,-rpath,'$ORIGIN' -lm\n" + run
                          if calls else ""))
    out["manifest.json"] = json.dumps(manifest, indent=2, sort_keys=True, default=str)
    return out
