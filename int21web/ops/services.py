"""Writes of the own-ops app: importing a problem (one service under the page, the API and
``manage.py import_op``). The capture runs in kernels.graph's sandbox, never here."""
from __future__ import annotations

from int21web.ops import models as m

MAX_SOURCE_BYTES = 256 * 1024


class ImportRefused(ValueError):
    """The problem could not be imported: ``field`` names the input at fault (``source``,
    ``name``, ``shapes``), ``message`` says why, ``failure`` is the capture's refusal (JSON)."""

    def __init__(self, field: str, message: str, failure: dict | None = None):
        super().__init__(f"{field}: {message}")
        self.field, self.message, self.failure = field, message, failure or {}


def parse_overrides(texts) -> list[dict]:
    """``["batch_size=64", "batch_size=8, dim=512"]`` → one dict of constants per extra shape."""
    out = []
    for text in texts or []:
        text = (text or "").strip()
        if not text:
            continue
        shape = {}
        for part in text.replace(";", ",").split(","):
            if not part.strip():
                continue
            name, eq, value = part.partition("=")
            name, value = name.strip(), value.strip()
            if not eq or not name.isidentifier():
                raise ImportRefused("shapes", f"{part.strip()!r}: write a module constant and its value, e.g. batch_size=64")
            try:
                shape[name] = int(value)
            except ValueError:
                try:
                    shape[name] = float(value)
                except ValueError:
                    raise ImportRefused("shapes", f"{name}={value!r}: the value must be a number") from None
        out.append(shape)
    return out


def _check_source(source) -> str:
    if not isinstance(source, str) or not source.strip():
        raise ImportRefused("source", "paste or upload a Python file in the KernelBench format")
    if len(source.encode("utf-8", "replace")) > MAX_SOURCE_BYTES:
        raise ImportRefused("source", f"the file is larger than {MAX_SOURCE_BYTES // 1024} KiB")
    if "\x00" in source:
        raise ImportRefused("source", "the file contains NUL bytes")
    return source


def op_preview(*, source: str, overrides: list | None = None) -> dict:
    """What the import would capture, what is and is not supported, and how the graph would be
    split into fusion groups; nothing is stored."""
    from kernels.graph.service import preview
    got = preview(_check_source(source), overrides=(overrides or [None])[0])
    return got.to_json()


def op_import(*, source: str, name: str | None = None, overrides: list | None = None, user=None) -> m.ImportedOp:
    """Capture, check, generate and store the problem; raise ImportRefused with the reason."""
    from kernels.graph.service import import_problem
    source = _check_source(source)
    name = (name or "").strip() or None
    if name and m.ImportedOp.objects.filter(name=name).exists():
        raise ImportRefused("name", f"a problem named {name!r} is already imported; choose another name")
    result = import_problem(source, name=name, overrides=overrides or None)
    if not result.ok:
        failure = result.failure.to_json() if result.failure else {}
        field = "name" if failure.get("kind") == "format" and "name" in failure.get("reason", "") else "source"
        raise ImportRefused(field, failure.get("reason") or "the problem could not be imported", failure)
    row, _ = m.ImportedOp.objects.update_or_create(
        name=result.name, defaults={"digest": result.digest, "summary": result.summary, "source": source,
                                    "created_by": user})
    return row
