"""The model side stays framework-free: kernels/models imports neither Django, the swarm,
the web app nor the benchmarks (the benchmark imports it, never the other way)."""
import ast
from pathlib import Path

MODELS = Path(__file__).resolve().parents[2] / "kernels" / "models"
FORBIDDEN = ("django", "swarm", "int21web", "bench")


def test_kernels_models_imports_no_framework_and_no_benchmark():
    for file in sorted(MODELS.glob("*.py")):
        for node in ast.walk(ast.parse(file.read_text())):
            names = ([a.name for a in node.names] if isinstance(node, ast.Import)
                     else [node.module or ""] if isinstance(node, ast.ImportFrom) else [])
            for name in names:
                assert name.split(".")[0] not in FORBIDDEN, f"{file.name} imports {name}"
