"""Built-in workloads: one folder each, one line here (imported on first use)."""
from importlib import import_module

from kernels.spec import SpecError, Workload

WORKLOADS = {
    "softmax": "kernels.workloads.softmax",
    "rmsnorm": "kernels.workloads.rmsnorm",
    "layernorm": "kernels.workloads.layernorm",
    "matmul": "kernels.workloads.matmul",
    "kda": "kernels.workloads.kda",
}

_loaded: dict[str, Workload] = {}


def names() -> list[str]:
    return list(WORKLOADS)


def get(name: str) -> Workload:
    if name not in WORKLOADS:
        raise SpecError(f"unknown workload {name!r}; built in: {', '.join(WORKLOADS)}")
    if name not in _loaded:
        _loaded[name] = import_module(WORKLOADS[name]).WORKLOAD
    return _loaded[name]


def all_workloads() -> list[Workload]:
    return [get(n) for n in WORKLOADS]
