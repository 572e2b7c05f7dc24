"""Engine records on disk, beside the imported problems they tie together.

    <ops root>/engines/<name>.json     one engine: its model, its phases' workloads, arena
                                       plans, validation and greedy-check reports

Written to a temporary file and renamed, so a reader never sees half a record. The phases'
workloads themselves are ordinary imports in the ops store (``kernels.graph.store``).
"""
from __future__ import annotations

import json
import os
import re
import tempfile
from pathlib import Path

from kernels.graph import store as ops_store

NAME = re.compile(r"^[a-z][a-z0-9_]{0,40}$")


class EngineNotFound(LookupError):
    pass


def folder(base: Path | None = None) -> Path:
    return ops_store.root(base) / "engines"


def path_of(name: str, base: Path | None = None) -> Path:
    if not NAME.match(name or ""):
        raise ValueError(f"{name!r} cannot name an engine: use lower_case letters, digits and _ "
                         "(at most 41, starting with a letter)")
    return folder(base) / f"{name}.json"


def save(record: dict, base: Path | None = None) -> Path:
    path = path_of(record["name"], base)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{record['name']}.", dir=path.parent)
    try:
        with os.fdopen(fd, "w") as f:
            json.dump(record, f, indent=1, sort_keys=True, allow_nan=False)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return path


def load(name: str, base: Path | None = None) -> dict:
    path = path_of(name, base)
    try:
        return json.loads(path.read_text())
    except FileNotFoundError:
        raise EngineNotFound(f"no engine named {name!r} (engines: {', '.join(names(base)) or 'none'})") from None


def names(base: Path | None = None) -> list[str]:
    d = folder(base)
    return sorted(p.stem for p in d.glob("*.json") if NAME.match(p.stem)) if d.is_dir() else []


def update(name: str, base: Path | None = None, **keys) -> dict:
    record = load(name, base)
    record.update(keys)
    save(record, base)
    return record
