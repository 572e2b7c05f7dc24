"""Hardware targets: one file each, one line here (imported on first use)."""
from importlib import import_module

from kernels.spec import SpecError

TARGETS = {
    "cpu": "kernels.targets.cpu:CpuTarget",
    "cuda": "kernels.targets.cuda:CudaTarget",
    "ptx": "kernels.targets.ptx:PtxTarget",
}

_loaded = {}


def names() -> list[str]:
    return list(TARGETS)


def get(name: str):
    if name not in TARGETS:
        raise SpecError(f"unknown target {name!r}; available: {', '.join(TARGETS)}")
    if name not in _loaded:
        module, _, cls = TARGETS[name].partition(":")
        _loaded[name] = getattr(import_module(module), cls)()
    return _loaded[name]
