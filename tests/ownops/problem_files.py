"""The own-ops test problems on disk (a module of its own: ``from conftest import`` picks up
whichever conftest was imported first when several test folders run in one pytest call)."""
from pathlib import Path

HERE = Path(__file__).parent
PROBLEMS = HERE / "problems"
HOSTILE = HERE / "hostile"


def problem_names() -> list[str]:
    return sorted(p.stem for p in PROBLEMS.glob("*.py"))


def source(name: str, folder: Path = PROBLEMS) -> str:
    return (folder / f"{name}.py").read_text()
