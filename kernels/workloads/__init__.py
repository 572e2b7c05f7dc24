"""Built-in workloads: one folder each, one line here (imported on first use).

Imported problems (kernels/graph, stored under INT21_OPS_DIR) resolve beside them: ``get``
and ``names`` ask the ops store after the built-ins (a built-in's name always wins).
"""
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
    return list(WORKLOADS) + [n for n in _imported_names() if n not in WORKLOADS]


def get(name: str) -> Workload:
    if name in WORKLOADS:
        if name not in _loaded:
            _loaded[name] = import_module(WORKLOADS[name]).WORKLOAD
        return _loaded[name]
    return _imported(name)


def all_workloads() -> list[Workload]:
    return [get(n) for n in WORKLOADS]


def forget(name: str) -> None:
    """Drop a cached imported workload (it was imported again)."""
    _imported_cache.pop(name, None)


# --------------------------------------------------------------------------- imported problems

_imported_cache: dict[str, tuple[str, Workload]] = {}


def _imported_names() -> list[str]:
    from kernels.graph import store
    return store.names()


def _imported(name: str) -> Workload:
    from kernels.graph import store, workload
    path = store.lookup(name)
    if path is None:
        raise SpecError(f"unknown workload {name!r}; built in: {', '.join(WORKLOADS)}"
                        + (f"; imported: {', '.join(_imported_names())}" if _imported_names() else ""))
    hit = _imported_cache.get(name)
    if hit is None or hit[0] != str(path):
        hit = (str(path), workload.build(path))
        _imported_cache[name] = hit
    return hit[1]
