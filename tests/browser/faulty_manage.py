"""manage.py with one injected fault, for the browser tests: the driver of a run whose goal has
seed 666 raises, as a driver bug would (the distiller's None formatted as a number was one).
Everything else is the product as `make run` starts it."""
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
FAULT_SEED = 666


def install() -> None:
    from swarm.generation import Engine
    plan = Engine._plan

    def faulty(self, run, *args, **kwargs):
        if run.goal.seed == FAULT_SEED:
            raise TypeError("unsupported format string passed to NoneType.__format__")
        return plan(self, run, *args, **kwargs)

    Engine._plan = faulty


if __name__ == "__main__":
    install()
    import manage
    manage.main()
