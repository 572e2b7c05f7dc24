"""Prompt texts live in ``swarm/prompts/*.md`` (one source of truth); this fills them in."""
from __future__ import annotations

import string
from functools import lru_cache
from pathlib import Path

FOLDER = Path(__file__).resolve().parent.parent / "prompts"


@lru_cache(maxsize=None)
def text(name: str) -> str:
    path = FOLDER / f"{name}.md"
    if not path.is_file():
        raise KeyError(f"no prompt {name!r} in {FOLDER}")
    return path.read_text()


def render(name: str, **values) -> str:
    """The prompt with every ``$name`` filled; a placeholder left unfilled is an error."""
    return string.Template(text(name)).substitute({k: str(v) for k, v in values.items()}).strip() + "\n"
