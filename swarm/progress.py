"""The command line's progress bar, drawn once for everyone: ``Bar`` draws one line on a
stream (redrawn in place on a terminal, a line at a time into a log); ``RunProgress`` is the
EventSink that keeps it for a run (``manage.py swarm``, ``manage.py runs start``); the
benchmarks draw their tasks with the same ``Bar``."""
from __future__ import annotations

import time


class Bar:
    """``[████······] text``: filled by ``done / total``. On a terminal each draw replaces the
    line (``\\r`` … clear to its end); elsewhere each draw is a line of its own."""

    def __init__(self, stream, width: int):
        self.stream, self.width = stream, width
        self.tty = hasattr(stream, "isatty") and stream.isatty()

    def draw(self, done: float, total: float, text: str, *, newline: bool = False) -> None:
        filled = min(self.width, int(self.width * done / max(total, 1)))
        line = f"[{'█' * filled}{'·' * (self.width - filled)}] {text}"
        self.stream.write(("\r" + line + "\033[K") if self.tty else line)
        if newline:
            self.stream.write("\n")
        self.stream.flush()


class RunProgress:
    """An EventSink that draws a run's bar (generation, evaluations against the budget, best
    so far) and prints each confirmation and the end; into a log, a line per generation."""

    def __init__(self, stream, budget: int):
        self.stream, self.budget = stream, budget
        self.bar = Bar(stream, width=30)
        self.gen = self.evals = 0
        self.best = 0.0
        self.versus = ""
        self.confirming = False
        self.started = time.monotonic()

    def emit(self, run_id, event):
        d = event.data
        if event.kind == "generation_started":
            self.gen = d["generation"]
        elif event.kind == "candidate_evaluated":
            self.evals += 1
        elif event.kind == "new_best":
            self.best = d["score"]
            if d["speedup"]:
                self.versus = min(d["speedup"], key=d["speedup"].get)
        elif event.kind == "generation_finished" and not self.bar.tty:
            self._draw(newline=True)
            return
        elif event.kind == "candidate_confirmed":
            runs = " ".join(f"{x:.2f}" for x in d["measurements"])
            if self.bar.tty and not self.confirming:   # end the bar's line once, before the first
                self.stream.write("\n")
            self.confirming = True
            self.stream.write(f"confirmed #{d['candidate_id']}: {runs} → median {d['score']:.2f}x\n")
            return
        elif event.kind == "run_finished":
            if d.get("best"):
                self.best = d["best"]["score"]   # the confirmed figure
            self._draw(newline=True)
            self.stream.write(f"finished: {d['reason']}\n")
            return
        if self.bar.tty:
            self._draw(newline=False)

    def _draw(self, newline: bool) -> None:
        vs = f" vs {self.versus}" if self.versus else ""
        self.bar.draw(self.evals, self.budget,
                      f"gen {self.gen:>3} · {self.evals:>4}/{self.budget} evaluations · best {self.best:.2f}x{vs} · "
                      f"{time.monotonic() - self.started:5.0f}s", newline=newline)
