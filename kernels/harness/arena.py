"""Shared memory between the evaluator and its sandbox processes: guarded float32 buffers.

An arena is one memfd holding named buffers, each laid out as a guard page, the body
(page-aligned, so every kernel sees the same alignment a fresh allocation gives), and at
least a page of guard words after it. The evaluator maps it read-write; a sandbox process
gets either the same descriptor (outputs) or a read-only reopening of it (inputs), whose
mapping cannot be made writable again by anything inside the sandbox: a kernel that writes
its inputs faults, and the runner reports where.

Nothing a sandbox process writes is trusted: the evaluator reads outputs and guard words
from its own mapping after each call.
"""
from __future__ import annotations

import mmap
import os

import numpy as np

PAGE = 4096
GUARD_WORD = 0x7FA5DEAD    # a NaN with a payload no kernel computes by accident
POISON_WORD = 0x7FC0BEEF   # quiet NaN for outputs


def _up(n: int, to: int = PAGE) -> int:
    return -(-n // to) * to


class Arena:
    """``Arena("outputs", {"y": (4096, 4096)})``; ``arena.array("y")`` is a float32 view."""

    def __init__(self, label: str, shapes: dict[str, tuple[int, ...]]):
        self.label = label
        self.layout: dict[str, tuple[int, int, tuple[int, ...]]] = {}   # name → (body offset, bytes, shape)
        offset = 0
        for name, shape in shapes.items():
            shape = tuple(int(d) for d in shape)
            nbytes = 4 * max(1, int(np.prod(shape)) if shape else 1)
            body = offset + PAGE
            self.layout[name] = (body, nbytes, shape)
            offset = _up(body + nbytes + PAGE)
        self.size = max(offset, PAGE)
        self.fd = os.memfd_create(f"int21-{label}", os.MFD_CLOEXEC)
        os.ftruncate(self.fd, self.size)
        self.map = mmap.mmap(self.fd, self.size, mmap.MAP_SHARED, mmap.PROT_READ | mmap.PROT_WRITE)
        self.words = np.frombuffer(self.map, dtype=np.uint32)
        self.words.fill(GUARD_WORD)
        self._views = {name: self._view(name) for name in self.layout}

    def _view(self, name: str) -> np.ndarray:
        body, nbytes, shape = self.layout[name]
        flat = self.words[body // 4: (body + nbytes) // 4].view(np.float32)
        return flat.reshape(shape) if shape else flat[:1].reshape(())

    def array(self, name: str) -> np.ndarray:
        return self._views[name]

    def raw(self, name: str) -> np.ndarray:
        body, nbytes, _ = self.layout[name]
        return self.words[body // 4: (body + nbytes) // 4]

    def offset(self, name: str) -> int:
        return self.layout[name][0]

    def names(self) -> list[str]:
        return list(self.layout)

    def guards_intact(self, name: str) -> bool:
        body, nbytes, _ = self.layout[name]
        lead = self.words[(body - PAGE) // 4: body // 4]
        end = _up(body + nbytes + PAGE)
        tail = self.words[(body + nbytes) // 4: end // 4]
        return bool((lead == GUARD_WORD).all() and (tail == GUARD_WORD).all())

    def locate(self, offset: int) -> tuple[str, str] | None:
        """Which buffer an offset into the arena falls in: (name, "body" | "guard")."""
        for name, (body, nbytes, _) in self.layout.items():
            if body <= offset < body + nbytes:
                return name, "body"
            if body - PAGE <= offset < _up(body + nbytes + PAGE):
                return name, "guard"
        return None

    def readonly_fd(self) -> int:
        """A new descriptor of the same memory, open for reading only (the caller closes it)."""
        return os.open(f"/proc/self/fd/{self.fd}", os.O_RDONLY | os.O_CLOEXEC)

    def close(self) -> None:
        self._views = {}
        self.words = None
        try:
            self.map.close()
        except BufferError:   # a view still held somewhere: the memory goes when it does
            pass
        try:
            os.close(self.fd)
        except OSError:
            pass

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
