"""The command line's one progress bar: redrawn in place on a terminal, a line per generation
in a log (manage.py swarm, manage.py runs start and the benchmarks all draw it)."""
import io

from swarm.events import make_event
from swarm.progress import Bar, RunProgress


class Terminal(io.StringIO):
    def isatty(self):
        return True


def feed(sink):
    sink.emit(1, make_event("generation_started", generation=0, allocation={"explorer": 2}))
    sink.emit(1, make_event("new_best", candidate_id=3, score=1.5, speedup={"numpy": 2.0, "torch": 1.5}, params={},
                            evaluations=1, median_ms=1.0))
    sink.emit(1, make_event("generation_finished", generation=0, allocation={"explorer": 2}, summary={}))
    sink.emit(1, make_event("run_finished", reason="evaluation budget of 4 spent", evaluations=4, confirmations=0,
                            best=None))


def test_into_a_log_the_run_writes_a_line_per_generation_and_its_end():
    log = io.StringIO()
    feed(RunProgress(log, budget=4))
    lines = log.getvalue().splitlines()
    assert "\r" not in log.getvalue() and len(lines) == 3
    assert lines[0].startswith("[") and "gen   0 ·    0/4 evaluations · best 1.50x vs torch" in lines[0]
    assert lines[2] == "finished: evaluation budget of 4 spent"


def test_on_a_terminal_the_bar_is_redrawn_in_place():
    term = Terminal()
    bar = Bar(term, width=4)
    bar.draw(1, 2, "half")
    bar.draw(2, 2, "all", newline=True)
    assert term.getvalue() == "\r[██··] half\033[K\r[████] all\033[K\n"
