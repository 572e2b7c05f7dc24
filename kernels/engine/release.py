"""What an engine version is made of, from its stored record and the kernels chosen per phase.

``release(name, {phase: (source, params)})`` gathers, without running anything:

- per phase: its workload, the source's digest and the tuned params, the ABI (``args``:
  inputs, then weights, then outputs, then dims), which inputs are activations (``inputs``)
  and, for every shape the phase was imported (and judged) at, its dims, its activations'
  and outputs' shapes and which entry of the weights table each weight argument reads;
- the weights: every phase's stored params in one float32 file (``weights.bin``), each
  distinct tensor once (prefill and decode share them), laid out at 64-byte offsets, and the
  token embedding of the built-in family and checkpoints (``embed_tokens``: the lookup the
  trusted driver does before either phase, docs/engine.md "Phases");
- the entry points as C declarations (``<engine>_<phase>``).

The web app's promotion adds the version, the approvals and the evidence, signs it, and
writes it with :func:`kernels.library.write_engine_version`. ``example_case`` is the data
of the evidence zip's C example (``kernels.bundle.engine_files``): the smallest prefill and
the decode step after it, with the float64 reference's outputs.
"""
from __future__ import annotations

import hashlib
from dataclasses import dataclass

import numpy as np

from kernels.engine import store
from kernels.spec import c_signature

ALIGN = 16   # floats: 64 bytes, a cache line and an AVX-512 vector


@dataclass
class Release:
    manifest: dict
    sources: dict       # phase -> source text
    weights: bytes


def _imported(workload: str, ops_dir=None):
    from kernels.graph import store as ops_store
    from kernels.graph.workload import Imported
    path = ops_store.lookup(workload, ops_dir)
    if path is None:
        raise store.EngineNotFound(f"the engine's phase {workload} is no longer in the ops store")
    return Imported(path)


def _embedding(record: dict) -> np.ndarray | None:
    model = record.get("model") or {}
    if model.get("kind") not in ("decoder", "checkpoint"):
        return None
    from kernels.engine.service import Model
    from kernels.models.decoder import DecoderConfig
    lm = Model(model["kind"], DecoderConfig(**model["config"]), checkpoint=model.get("checkpoint")).torch_model()
    return lm.model.embed_tokens.weight.detach().numpy().astype(np.float32)


def release(name: str, chosen: dict, *, ops_dir=None) -> Release:
    """The manifest's core, the sources and the packed weights of engine ``name`` with
    ``chosen`` = {phase: (source, params)}, one entry for each of its phases."""
    from kernels import library, workloads
    record = store.load(name, ops_dir)
    missing = [p for p in record["phases"] if p not in chosen]
    if missing:
        raise ValueError(f"{name}: an engine is released whole; no kernel chosen for {', '.join(missing)}")
    table: dict[str, np.ndarray] = {}
    digests: dict[str, str] = {}

    def put(tname: str, arr: np.ndarray, where: str) -> str:
        arr = np.ascontiguousarray(arr, dtype=np.float32)
        d = hashlib.sha256(arr.tobytes() + repr(arr.shape).encode()).hexdigest()
        key = tname if tname not in digests or digests[tname] == d else f"{tname}@{where}"
        if key not in digests:
            table[key], digests[key] = arr, d
        return key

    phases = {}
    for phase, (source, params) in chosen.items():
        info = record["phases"][phase]
        wl = workloads.get(info["workload"])
        imp = _imported(info["workload"], ops_dir)
        graph0, _ = imp.shape(0)
        inputs = [t.name for t in graph0.inputs]
        weight_args = [a.name for a in wl.args if a.kind == "in" and a.name not in inputs]
        shapes = []
        for k, shape in enumerate(imp.shapes):
            graph, stored = imp.shape(k)
            shapes.append({"dims": shape.as_dict(),
                           "inputs": {t.name: list(t.shape) for t in graph.inputs},
                           "outputs": {n: list(s) for n, s in imp.out_shapes(shape).items()},
                           "weights": [put(n, stored[n], f"{phase}{k}") for n in weight_args]})
        # a unit shared by a range of lengths runs at every length in it (kernels.codegen.dynamic):
        # its member's weights, the dim from the call, each shape affine in it
        ranges = [{"dim": r["dim"], "lo": r["lo"], "hi": r["hi"], "shape": r["members"][0], **imp.range_shapes(r)}
                  for r in imp.ranges()]
        phases[phase] = {
            "workload": info["workload"], "import_digest": info["digest"], "source_file": f"{phase}.c",
            "source_sha256": library.sha256(source), "params": params,
            "args": [{"name": a.name, "kind": a.kind} for a in wl.args], "inputs": inputs,
            "weight_args": weight_args, "shapes": shapes, "ranges": ranges,
            "tolerance": {"atol": wl.tolerance.atol, "rtol": wl.tolerance.rtol, "rel_rmse": wl.tolerance.rel_rmse},
            "entry_point": c_signature(wl.args, f"{name}_{phase}"),
            "groups": group_summary(info["workload"], params, ops_dir=ops_dir),
        }
    embed = _embedding(record)
    if embed is not None:
        put("embed_tokens", embed, "model")
    tensors, chunks, offset = [], [], 0
    for key, arr in table.items():
        tensors.append({"name": key, "shape": list(arr.shape), "offset": offset})
        pad = (-arr.size) % ALIGN
        chunks += [arr.reshape(-1), np.zeros(pad, dtype=np.float32)]
        offset += arr.size + pad
    weights = np.concatenate(chunks).tobytes() if chunks else b""
    manifest = {
        "format": 1, "kind": "engine", "engine": name, "model": record.get("model"), "batch": record.get("batch"),
        "phases": phases,
        "weights": {"file": "weights.bin", "sha256": hashlib.sha256(weights).hexdigest(), "dtype": "float32",
                    "bytes": len(weights), "tensors": tensors,
                    "embedding": "embed_tokens" if embed is not None else None},
        "validation": record.get("validation"),
        "greedy": {k: (record.get("greedy") or {}).get(k) for k in ("passed", "agreed", "decisions", "near_ties",
                                                                      "max_logit_error")}
        if record.get("greedy") else None,
    }
    return Release(manifest, {p: chosen[p][0] for p in phases}, weights)


def example_case(manifest: dict, *, ops_dir=None) -> list[dict]:
    """The evidence zip's C example: calls in order, each {phase, shape (an index into the
    phase's shapes), inputs: {name: float32 array | ("output", k, out name)}, expected:
    {out name: float64 reference}}. Prefill at its smallest imported shape, then (when the
    engine has a decode phase imported after that many positions) one decode step fed the
    prefill's own K/V output. Inputs are the workload's own draws; references its interpreter."""
    from kernels import workloads
    from kernels.spec import Shape

    def smallest(phase):
        shapes = manifest["phases"][phase]["shapes"]
        return min(range(len(shapes)), key=lambda k: sum(int(np.prod(s)) for s in shapes[k]["inputs"].values()))

    def run(phase, k, replace=None):
        info = manifest["phases"][phase]
        wl = workloads.get(info["workload"])
        shape = Shape(tuple((d, int(v)) for d, v in info["shapes"][k]["dims"].items()))
        feeds = wl.make_inputs(shape, "model", 0)
        feeds.update(replace or {})
        expected = wl.reference(feeds, shape)
        return {n: feeds[n] for n in info["inputs"]}, expected

    first = "prefill" if "prefill" in manifest["phases"] else next(iter(manifest["phases"]))
    k = smallest(first)
    ins, want = run(first, k)
    calls = [{"phase": first, "shape": k, "inputs": ins, "expected": want}]
    decode = manifest["phases"].get("decode")
    if first == "prefill" and decode and "kv" in decode["inputs"] and "out1" in want:
        kv_shape = list(np.shape(want["out1"]))
        match = [j for j, s in enumerate(decode["shapes"]) if s["inputs"].get("kv") == kv_shape]
        if match:
            ins2, want2 = run("decode", match[0], {"kv": np.asarray(want["out1"], dtype=np.float32)})
            ins2["kv"] = ("output", 0, "out1")
            calls.append({"phase": "decode", "shape": match[0], "inputs": ins2, "expected": want2})
    return calls


def group_summary(workload: str, params: dict, *, ops_dir=None) -> list[dict]:
    """One row per fusion group of a phase's program: its family, the ops it fuses, what it
    matches, its cost at the typical shape, and the knobs as ``params`` tunes them."""
    imp = _imported(workload, ops_dir)
    rows = []
    for g in imp.meta.get("groups", []):
        if g.get("form") in ("unfused", "split"):
            continue
        sig = g.get("signature") or {}
        rows.append({"id": g["id"], "family": g["family"], "ops": sig.get("ops") or [sig.get("family", g["family"])],
                     "matches": sig.get("matches"), "members": len(g.get("members", [])),
                     "flops": g.get("flops"), "bytes": g.get("bytes"),
                     "knobs": {k: params.get(k) for k in g.get("knobs", [])}})
    return rows
