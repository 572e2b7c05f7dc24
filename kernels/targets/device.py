"""The GPU half of the target seam, shared by the CUDA and PTX targets: how a device
candidate is made runnable, started, called and judged after each call.

The candidate's process is a trusted server process (``kernels.harness.server``, role
"device", host code in ``kernels.targets.cuda_runner``) that loads the cubin and launches it;
the evaluator drives it with the same calls and arenas as a CPU runner, and times it by the
CUDA events it reports (the device timer of :func:`kernels.harness.timing.interleave`).
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np


@dataclass(frozen=True)
class DeviceRunnable:
    path: Path


class DeviceRunner:
    """Mixed into a GPU target (which provides ``name``)."""

    min_timed_calls = 100          # CUDA events resolve ~0.5 µs: a GPU floor on timed calls
    timer = "device"               # the device process reports each call's CUDA-event time

    def prepare(self, artifact, workload, options: dict) -> DeviceRunnable:
        return DeviceRunnable(Path(artifact.path))

    def start(self, runnable, *, inputs, outputs, box, settings, workload, params):
        import os
        import shutil
        from kernels.harness.process import ServerProcess
        # The box user reads the cubin from the box's own folder (the cache may be private).
        copy = box.dir / f"kernel{runnable.path.suffix}"
        if not copy.exists():
            shutil.copyfile(runnable.path, copy)
            os.chmod(copy, 0o444)
        spec = {"role": "device", "artifact": str(copy), "entry": "kernel", "in_size": inputs.size,
                "out_size": outputs.size, "uid": box.uid, "gid": box.gid, "home": str(box.home),
                "cpu_seconds": int(settings.run_timeout * 4) + 10, "timer": self.timer}
        return ServerProcess(spec, inputs=inputs, outputs=outputs, box=box, wall_seconds=settings.run_timeout,
                             launcher=settings.launcher, name="candidate")

    def call_tokens(self, wl, shape, scalars, *, inputs: dict, outputs: dict, params: dict) -> str:
        """``L<grid>,<block>,<shared>`` then each argument (buffers as offset:words)."""
        grid, block, shared = self.launch(wl, shape, params)
        tokens = ["L" + ",".join(str(int(v)) for v in (*grid, *block, shared))]
        outs = wl.out_shapes(shape)
        for a in wl.args:
            if a.kind == "in":
                words = int(np.prod([shape[d] for d in a.dims])) if a.dims else 1
                tokens.append(f"i{inputs[a.name]:x}:{words:x}")
            elif a.kind == "out":
                tokens.append(f"o{outputs[a.name]:x}:{int(np.prod(outs[a.name])):x}")
            elif a.kind == "dim":
                tokens.append(f"d{int(shape[a.name])}")
            else:
                tokens.append(f"f{np.float32(scalars[a.name]).view(np.uint32):x}")
        return " ".join(tokens)

    def call_problems(self, reply, proc, *, inputs, outputs, threads_declared) -> list[tuple[str, str]]:
        """What the device host code saw after the call, as (status, what happened)."""
        words = reply.fields[2].split(",") if len(reply.fields) >= 3 and reply.fields[2] != "-" else []
        out = []
        for w in words:
            kind, _, rest = w.partition(":")
            arena = inputs if kind in ("input", "ingrd") else outputs
            try:
                hit = arena.locate(int(rest, 16)) if kind != "launch" else None
            except ValueError:
                hit = None
            name = hit[0].split(":", 1)[-1] if hit else "?"
            if kind == "input":
                out.append(("wrong", f"input {name} was modified"))
            elif kind == "ingrd":
                out.append(("wrong", f"memory around input {name} was written"))
            elif kind == "oob":
                out.append(("wrong", f"memory around output {name} was written (out of bounds)"))
            elif kind == "launch":
                threads, _, limit = rest.partition(":")
                out.append(("wrong", f"the launch asks for {threads} threads per block; this kernel allows at most "
                                     f"{limit}"))
            else:
                out.append(("suspicious", f"the device process reported {w!r}"))
        return out

    def launch(self, workload, shape, params) -> tuple:
        """(grid, block, dynamic shared bytes) of this target's template for ``shape``."""
        return workload.template(self.name).launch(shape, params)

    def ceilings(self, refresh: bool = False) -> dict:
        return {}
