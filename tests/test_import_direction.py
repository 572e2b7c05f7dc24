"""The layers import downwards only: ``kernels`` (the kernel world) imports nothing above it,
``swarm`` (the agent runtime) nothing from the web app or the benchmarks, and the product
nothing from its benchmarks. Every import counts, module-level or inside a function, and so
does a module named to ``import_module``/``__import__`` as a constant string."""
import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

# package → the top-level packages it must never import
FORBIDDEN = {
    "kernels": {"swarm", "int21web", "bench", "django"},
    "swarm": {"int21web", "bench", "django"},
    "int21web": {"bench"},
}


def imported_modules(path: Path) -> list[tuple[int, str]]:
    """(line, absolute module name) of every import in a file; relative imports stay inside
    their own package and are left out."""
    tree = ast.parse(path.read_text(), filename=str(path))
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            found.append((node.lineno, node.module))
        elif (isinstance(node, ast.Call) and node.args and isinstance(node.args[0], ast.Constant)
              and isinstance(node.args[0].value, str)
              and ((isinstance(node.func, ast.Name) and node.func.id in ("import_module", "__import__"))
                   or (isinstance(node.func, ast.Attribute) and node.func.attr == "import_module"))):
            found.append((node.lineno, node.args[0].value))
    return found


def violations(package: str) -> list[str]:
    bad = []
    for path in sorted((ROOT / package).rglob("*.py")):
        for line, module in imported_modules(path):
            if module.split(".")[0] in FORBIDDEN[package]:
                bad.append(f"{path.relative_to(ROOT)}:{line} imports {module}")
    return bad


@pytest.mark.parametrize("package", list(FORBIDDEN))
def test_a_layer_imports_nothing_above_it(package):
    assert violations(package) == []


def test_the_walk_sees_imports_inside_functions_and_by_name(tmp_path):
    sample = tmp_path / "sample.py"
    sample.write_text("import os\n"
                      "def f():\n"
                      "    from django.db import models\n"
                      "    import importlib; importlib.import_module('bench.suite')\n"
                      "    from . import sibling\n")
    assert [m for _, m in imported_modules(sample)] == ["os", "django.db", "importlib", "bench.suite"]
