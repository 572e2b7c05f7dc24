"""A stored import as a :class:`kernels.spec.Workload`.

- **Shapes.** A problem's named dims are its integer module constants (``batch_size``,
  ``in_features``…, in source order; a problem without any gets one dim per input axis,
  ``x_0``, ``x_1``…). Each shape is one capture of the problem with some constants
  overridden; ``typical`` is the file as written (then shapes the user added with
  ``--set``), ``awkward`` a smaller capture the import derived with odd sizes (when the
  problem allows one; else the typical shape), ``minimal`` empty.
- **ABI.** ``in``: the inputs in ``get_inputs()`` order, then the params (weights, buffers,
  folded constants); ``out``: ``out0``, ``out1``… in the order ``forward`` returns them;
  ``dim``: the shape's dims, which only select the specialisation generated for that shape
  (sizes are constants inside it).
- **Inputs** follow ``get_inputs()`` (see :mod:`kernels.graph.inputs`); the params are the
  stored weights of that shape's capture. **Reference**: the trusted interpreter on that
  shape's graph. **Tolerance**: derived from the graph and the import check.
- **Baselines**: the user's model in torch eager and under ``torch.compile``, rebuilt in the
  timing child from the stored file and weights (:mod:`kernels.graph.baselines`).
"""
from __future__ import annotations

import functools
from pathlib import Path

import numpy as np

from kernels.codegen.dynamic import affine
from kernels.graph import inputs as inp
from kernels.graph import interpreter, store
from kernels.spec import (Arg, Baseline, Constraint, DesignSpace, Param, Shape, ShapeSets, Template,
                          Tolerance, Workload, rng_for)


def space_from_json(data: dict) -> DesignSpace:
    params = []
    for p in data["params"]:
        kw = {"default": p.get("default"), "help": p.get("help", "")}
        if p["kind"] == "int":
            kw.update(low=p["low"], high=p["high"], step=p.get("step", 1))
        elif p["kind"] in ("choice", "variant"):
            kw["choices"] = tuple(p["choices"])
        params.append(Param(p["name"], p["kind"], **kw))
    return DesignSpace(tuple(params), tuple(Constraint(c["expr"], c.get("message", "")) for c in data["constraints"]))


class Imported:
    """Lazy access to one stored import's shapes (graphs and weights are read on first use)."""

    def __init__(self, path: Path):
        self.path = Path(path)
        self.meta = store.read_meta(self.path)
        self.dims = list(self.meta["dims"])
        self.shapes = [Shape(tuple((d, int(s["dims"][d])) for d in self.dims)) for s in self.meta["shapes"]]

    def index_of(self, shape: Shape) -> int:
        for k, s in enumerate(self.shapes):
            if s.as_dict() == shape.as_dict():
                return k
        raise ValueError(f"{self.meta['name']} was not imported at shape {shape} "
                         f"(its shapes: {', '.join(str(s) for s in self.shapes)}); re-import with --set")

    @functools.lru_cache(maxsize=8)
    def shape(self, k: int):
        return store.read_shape(self.path, k)

    def make_inputs(self, shape: Shape, distribution: str, seed: int) -> dict:
        graph, params = self.shape(self.index_of(shape))
        rng = rng_for(seed, shape, distribution)
        stress = self.meta["stress"]
        out = {}
        for t in graph.inputs:
            desc = self.meta["inputs"][t.name]
            x = inp.draw(desc, t.shape, "model" if distribution == "masked" else distribution, rng, stress)
            if distribution == "masked" and t.name in stress.get("masked", []):
                x = inp.masked(x, rng)
            out[t.name] = np.asarray(x, dtype=np.float32, order="C")
        out.update(params)
        return out

    def reference(self, feeds: dict, shape: Shape) -> dict:
        graph, _ = self.shape(self.index_of(shape))
        outs = interpreter.run(graph, feeds)
        return {f"out{k}": o for k, o in enumerate(outs)}

    def sensitivity(self, feeds: dict, shape: Shape) -> dict:
        """check.sensitivity at a captured shape, by output name ({} elsewhere: a length only
        a shared unit serves has no graph of its own here)."""
        from kernels.graph import check
        try:
            graph, _ = self.shape(self.index_of(shape))
        except ValueError:
            return {}
        return {f"out{k}": v for k, v in enumerate(check.sensitivity(graph, feeds))}

    def out_shapes(self, shape: Shape) -> dict:
        try:
            graph, _ = self.shape(self.index_of(shape))
        except ValueError:
            return self.shared(shape)[1]
        return {f"out{k}": graph.shape_of(o) for k, o in enumerate(graph.outputs)}

    def ranges(self) -> list[dict]:
        """The shared units' ranges (kernels.codegen.dynamic): {"dim", "lo", "hi", "members"}."""
        return list((self.meta.get("arena") or {}).get("shared") or [])

    def range_shapes(self, r: dict) -> dict:
        """The shapes of the inputs and outputs over a shared unit's range ``r``: {"inputs": {name:
        [[slope, intercept] per axis]}, "outputs": {...}}, each axis ``slope * d + intercept``
        exactly at every member. ValueError where one is not."""
        xs = [self.shapes[k].as_dict()[r["dim"]] for k in r["members"]]
        graphs = [self.shape(k)[0] for k in r["members"]]
        out = {"inputs": [{t.name: t.shape for t in g.inputs} for g in graphs],
               "outputs": [self.out_shapes(self.shapes[k]) for k in r["members"]]}
        fitted = {}
        for kind, per_member in out.items():
            fitted[kind] = {}
            for name in per_member[0]:
                axes = []
                for ax in range(len(per_member[0][name])):
                    ab = affine(xs, [int(m[name][ax]) for m in per_member])
                    if ab is None:
                        raise ValueError(f"{self.meta['name']}: {name}'s shape is not affine in {r['dim']}")
                    axes.append(list(ab))
                fitted[kind][name] = axes
        return fitted

    def shared(self, shape: Shape) -> tuple[int, dict]:
        """For a shape inside a shared unit's range but not captured: (a member whose params
        it takes: the members' are identical, and its outputs' shapes). ValueError outside
        every range."""
        want = shape.as_dict()
        for r in self.ranges():
            fixed = {d: v for d, v in self.shapes[r["members"][0]].as_dict().items() if d != r["dim"]}
            if any(want.get(d) != v for d, v in fixed.items()) or not r["lo"] <= want.get(r["dim"], -1) <= r["hi"]:
                continue
            at = want[r["dim"]]
            outs = self.range_shapes(r)["outputs"]
            return r["members"][0], {n: tuple(a * at + b for a, b in axes) for n, axes in outs.items()}
        spans = ", ".join(f"{r['dim']} {r['lo']}..{r['hi']}" for r in self.ranges())
        raise ValueError(f"{self.meta['name']} was not imported at shape {shape} "
                         f"(its shapes: {', '.join(str(s) for s in self.shapes)}"
                         + (f"; its shared units serve {spans}" if spans else "") + ")")

    def cost(self, shape: Shape, key: str) -> float:
        return float(self.meta["shapes"][self.index_of(shape)][key])


def build(path: Path) -> Workload:
    imp = Imported(path)
    meta = imp.meta
    roles = [s["role"] for s in meta["shapes"]]
    typical = tuple(s for s, r in zip(imp.shapes, roles) if r in ("typical", "extra"))
    awkward = tuple(s for s, r in zip(imp.shapes, roles) if r == "awkward") or typical[:1]
    args = tuple(Arg(a["name"], a["kind"]) for a in meta["args"])
    tol = meta["tolerance"]
    options = {"dir": str(Path(path).resolve())}
    baselines = (
        Baseline("torch", "kernels.graph.baselines:torch_eager", strong=True, requires="torch", options=options,
                 user_code=True,
                 description="the problem's own Model in torch eager (float32, preallocated inputs)"),
        Baseline("torch_compile", "kernels.graph.baselines:torch_compiled", strong=True, requires="torch",
                 default=False, options={**options, "compile": True}, user_code=True,
                 description="torch.compile of the problem's Model (Inductor)"),
    ) + engine_peers(meta.get("engine"))
    return Workload(
        name=meta["name"],
        description=meta.get("description") or f"Imported problem {meta['name']}",
        args=args,
        shapes=ShapeSets(typical=typical, awkward=awkward, minimal=()),
        distributions=tuple(meta["distributions"]),
        tolerance=Tolerance(atol=tol["atol"], rtol=tol["rtol"], rel_rmse=tol.get("rel_rmse")),
        make_inputs=imp.make_inputs,
        reference=imp.reference,
        sensitivity=imp.sensitivity,
        flops=lambda s: imp.cost(s, "flops"),
        bytes_moved=lambda s: imp.cost(s, "bytes"),
        out_shapes=imp.out_shapes,
        templates={"cpu": Template("cpu", {"generated": "kernel.c"}, space_from_json(meta["space"]),
                                   folder=Path(path))},
        baselines={"cpu": baselines},
        deterministic=True,
        shape_dims=tuple(imp.dims),
        flop_bound=bool(meta.get("flop_bound")),
        max_source_bytes=source_limit(Path(path) / "kernel.c"),
        groups=tuple(meta.get("groups") or ()),
    )


def engine_peers(engine: dict | None) -> tuple:
    """An engine phase's other peers (kernels.models.peers): ONNX Runtime and OpenVINO, fed
    the same weights (the stored params, as inputs), not timed by default: they read an ONNX
    export made beforehand in a trusted process (kernels.engine.service.prepare_peers)."""
    if not engine or engine.get("phase") not in ("prefill", "decode") or not engine.get("config"):
        return ()
    from dataclasses import replace

    from kernels.models import peers
    from kernels.models.decoder import DecoderConfig
    chosen = [b for b in peers.baselines(engine["phase"], config=DecoderConfig(**engine["config"]))
              if b.name in ("onnxruntime", "openvino")]
    return tuple(replace(b, default=False) for b in chosen)


def source_limit(kernel: Path) -> int | None:
    """The static stage's size limit for an import's candidates: twice its generated source
    (an agent's rewrite of one group may grow it), when that is above the harness default."""
    try:
        size = kernel.stat().st_size
    except OSError:
        return None
    return 2 * size if 2 * size > 256 * 1024 else None


def in_memory(name: str, graph, params: dict, folder: Path, *, distributions=("model", "large", "tiny"),
              tolerance: Tolerance | None = None) -> Workload:
    """A workload straight from a graph (one shape, no baselines, inputs ~ N(0, 1)): for
    tests and for tuning a single fusion group; the generated source goes to ``folder``."""
    from kernels.codegen import program
    from kernels.graph import check
    prog = program.generate(graph, title=name)
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "kernel.c").write_text(prog.source)
    shape = Shape.of(**{f"{t.name}_{a}": d for t in graph.inputs for a, d in enumerate(t.shape)} or {"n": 1})
    stress = {"large": 10.0, "tiny": 1e-3}

    def make(s, dist, seed):
        rng = rng_for(seed, s, dist)
        out = {t.name: np.asarray(inp.draw({"kind": "normal", "mean": 0.0, "std": 1.0}, t.shape, dist,
                                                     rng, stress), dtype=np.float32) for t in graph.inputs}
        out.update(params)
        return out

    def ref(feeds, s):
        return {f"out{k}": o for k, o in enumerate(interpreter.run(graph, feeds))}

    def sensitivity(feeds, s):
        return {f"out{k}": v for k, v in enumerate(check.sensitivity(graph, feeds))}
    from kernels.graph.service import cost
    flops, nbytes = cost(graph)
    return Workload(
        name=name, description=f"{name} (in memory)", args=prog.args, shapes=ShapeSets((shape,), (shape,), ()),
        distributions=tuple(distributions), tolerance=tolerance or check.derive_tolerance(graph),
        make_inputs=make, reference=ref, sensitivity=sensitivity, flops=lambda s: flops, bytes_moved=lambda s: nbytes,
        out_shapes=lambda s: {f"out{k}": graph.shape_of(o) for k, o in enumerate(graph.outputs)},
        templates={"cpu": Template("cpu", {"generated": "kernel.c"}, prog.space, folder=folder)},
        shape_dims=tuple(d for d, _ in shape.dims), groups=tuple(prog.groups))
