"""Was the host calm while a candidate was timed? The trusted baselines say.

Every timing session times trusted baselines interleaved with the candidate, on the same
inputs. Their medians on this host are kept (per host fingerprint, workload, target, shape
and cache mode). A session in which a baseline ran well above its usual median was timed in
a slow phase of the host: a neighbour's memory traffic or a stolen core, lasting seconds.
Such a phase does not slow every implementation alike: on this 2-core host it slowed the
two-threaded candidate and torch by 35-55% and the single-threaded NumPy baseline not at
all, so the candidate's ratio to NumPy from that session was off by a third. The evaluator
then times again in a fresh process and keeps the calmest session (the one whose baselines
were closest to their usual medians), which is chosen by the baselines alone, never by the
candidate's own figure.

The hypervisor says it too: on a virtual machine, time the host gave our virtual CPUs to
someone else is counted as "steal" in /proc/stat. A session in which one CPU lost a share s
of its time ran a statically scheduled parallel kernel about 1/(1 - s) slower, whatever the
baselines show (a single-threaded baseline on a two-core host may not notice at all). The
candidate cannot cause or hide steal time, so it joins the baselines as a signal.

So does the rest of the host: the timing child counts the CPU time every CPU spent busy
during its timed calls (/proc/stat, opened before the candidate is loaded) less its own
(all its threads: candidate, baselines). What is left ran other programs on our cores, a
share of a CPU that a two-threaded kernel waits for at every barrier while a
single-threaded baseline may not notice. Measured on this host: a batch whose candidate
ran 47% slower than in the runs around it, at 1.69 CPUs per wall second against 1.9,
while both baselines kept their usual medians. The candidate can make itself slower but
cannot make other programs run.
"""
from __future__ import annotations

import hashlib
import json
import os
import threading
from dataclasses import dataclass, field
from pathlib import Path

from kernels.targets.base import cache_dir

WINDOW = 16      # the medians remembered per baseline (older ones age out: a host that got
                 # slower for good stops being "disturbed" after this many sessions)
SLOW = 1.2       # a baseline this much slower than its usual median: a slow phase
                 # (also: one CPU's steal above 1 - 1/SLOW, a sixth of its time)
PERSISTS = 0.9   # a session timed again at least this slow, relative to the first: the phase
                 # persists, and the evaluator stops timing again. Measured on 2026-11-30
                 # (bench/results/harness-2026-11-30-*.json): 13 evaluations took a third
                 # session, every one after a second at least this slow; the third found
                 # nothing calmer in 9, a session 0.02-0.08 calmer in 3, a calm one in 1, at
                 # the cost of a whole session (about 2 s at 4096x4096) each time.


@dataclass
class Calm:
    """How much slower than usual the slowest baseline ran in one session."""

    ratio: float = 1.0
    baseline: str | None = None
    median_ms: float | None = None
    usual_ms: float | None = None
    usual: dict = field(default_factory=dict)
    steal: float | None = None   # the largest share of one CPU's time stolen during the session
    others: float | None = None  # CPUs' worth of time other programs ran during the timed calls

    @property
    def slowness(self) -> float:
        """How much slower than usual the session ran, by the worst of the three signals: a
        CPU that lost a share s of its time ran a statically scheduled kernel 1/(1 - s) slower."""
        return max([self.ratio] + [1.0 / (1.0 - min(share, 0.9)) for share in (self.steal, self.others) if share])

    @property
    def disturbed(self) -> bool:
        return self.slowness > SLOW

    def sentence(self) -> str:
        host = f"; {100 * self.steal:.0f}% of the CPU time stolen by the hypervisor" if self.steal else ""
        if self.others and self.others >= 0.05:
            host += f"; other programs ran {100 * self.others:.0f}% of a CPU during the timed calls"
        if self.baseline is None:
            return "no usual baseline figures on this host yet" + host
        return (f"{self.baseline} {self.median_ms:.3f} ms against its usual {self.usual_ms:.3f} ms "
                f"on this host ({100 * (self.ratio - 1):+.0f}%)" + host)

    def to_json(self) -> dict:
        return {"ratio": round(self.ratio, 4), "baseline": self.baseline, "median_ms": self.median_ms,
                "usual_ms": self.usual_ms, "steal": None if self.steal is None else round(self.steal, 4),
                "others": None if self.others is None else round(self.others, 4)}


def parse_stat(text: str) -> list[tuple[int, int, int]]:
    """(steal, busy, total) clock ticks since boot of each CPU, from the text of /proc/stat;
    busy is user + nice + system + irq + softirq (guest time is inside user)."""
    out = []
    for line in text.splitlines():
        fields = line.split()
        if fields and fields[0].startswith("cpu") and fields[0] != "cpu" and len(fields) >= 9:
            t = [int(v) for v in fields[1:9]]   # user nice system idle iowait irq softirq steal
            out.append((t[7], t[0] + t[1] + t[2] + t[5] + t[6], sum(t)))
    return out


def cpu_ticks() -> list[tuple[int, int]] | None:
    """(steal, total) clock ticks since boot of each CPU, from /proc/stat; None off Linux."""
    try:
        with open("/proc/stat") as f:
            out = [(steal, total) for steal, _, total in parse_stat(f.read())]
    except (OSError, ValueError):
        return None
    return out or None


def others_share(before: tuple, after: tuple) -> float | None:
    """CPUs' worth of time other programs ran between two samples of (/proc/stat text, this
    process's CPU seconds, wall seconds) taken by the timing child: busy time of all CPUs less
    the child's own, per wall second. None without /proc/stat."""
    if before[0] is None or after[0] is None:
        return None
    try:
        busy = [sum(b for _, b, _ in parse_stat(x[0])) for x in (before, after)]
    except ValueError:
        return None
    wall = after[2] - before[2]
    if not busy[0] or wall <= 0:
        return None
    others = (busy[1] - busy[0]) / os.sysconf("SC_CLK_TCK") - (after[1] - before[1])
    return max(0.0, others / wall)


def steal_between(before, after) -> float | None:
    """The largest share of one CPU's time stolen between two :func:`cpu_ticks` samples: a
    statically scheduled parallel kernel runs at the pace of its slowest CPU."""
    if not before or not after or len(before) != len(after):
        return None
    shares = [(a[0] - b[0]) / (a[1] - b[1]) for b, a in zip(before, after) if a[1] > b[1]]
    return max(0.0, *shares) if shares else None


class BaselineNorms:
    """The recent medians of each baseline for one (host, workload, target, shape, cache mode)."""

    def __init__(self, fingerprint: dict, workload: str, target: str, shape: str, cold_cache: bool,
                 root: Path | None = None):
        host = hashlib.sha256(json.dumps(fingerprint, sort_keys=True).encode()).hexdigest()[:16]
        self.path = (root or cache_dir()) / f"baseline-medians-{target}-{host}.json"
        self.key = f"{workload}|{shape}|{'cold' if cold_cache else 'warm'}"

    def _all(self) -> dict:
        try:
            data = json.loads(self.path.read_text())
            return data if isinstance(data, dict) else {}
        except (OSError, ValueError):
            return {}

    def usual(self) -> dict[str, float]:
        """Each baseline's usual median: the second lowest of the recent ones (the lowest alone
        would let one lucky session set the bar), or the lowest while there are fewer than 3."""
        out = {}
        for name, medians in self._all().get(self.key, {}).items():
            ranked = sorted(m for m in medians if isinstance(m, (int, float)) and m > 0)
            if ranked:
                out[name] = ranked[1] if len(ranked) >= 3 else ranked[0]
        return out

    def judge(self, timings: dict) -> Calm:
        usual = self.usual()
        calm = Calm(usual=usual)
        for name, t in timings.items():
            med = t.get("median_ms")
            if name == "candidate" or not med or name not in usual:
                continue
            ratio = med / usual[name]
            if calm.baseline is None or ratio > calm.ratio:
                calm = Calm(ratio=ratio, baseline=name, median_ms=med, usual_ms=usual[name], usual=usual)
        return calm

    def record(self, timings: dict) -> None:
        """Remember this session's baseline medians (written whole and renamed into place, so a
        concurrent reader never sees half a file; a concurrent writer may drop one session)."""
        data = self._all()
        mine = data.setdefault(self.key, {})
        for name, t in timings.items():
            if name != "candidate" and t.get("median_ms"):
                mine[name] = (mine.get(name, []) + [t["median_ms"]])[-WINDOW:]
        tmp = self.path.with_name(f"{self.path.name}.{os.getpid()}-{threading.get_ident()}.tmp")
        try:
            tmp.write_text(json.dumps(data))
            os.replace(tmp, self.path)
        except OSError:
            tmp.unlink(missing_ok=True)


def host_sample(pids=(), children: bool = False) -> tuple:
    """(/proc/stat text, CPU seconds of this process and of ``pids``, wall seconds): taken by
    the evaluator around a timing session (see :func:`others_between`). With ``children``, the
    CPU seconds are those of this process's waited-for children instead (a probe's timing
    child, counted once it has exited: kernels/codegen/hostprobe.py)."""
    import resource
    import time
    try:
        with open("/proc/stat") as f:
            text = f.read()
    except OSError:
        text = None
    ru = resource.getrusage(resource.RUSAGE_CHILDREN if children else resource.RUSAGE_SELF)
    ours = ru.ru_utime + ru.ru_stime
    for pid in pids:
        try:
            with open(f"/proc/{pid}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
            ours += (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
        except (OSError, ValueError, IndexError):
            pass
    return text, ours, time.perf_counter()


def others_between(before: tuple, after: tuple) -> float | None:
    """CPUs' worth of time other programs ran between two :func:`host_sample` readings that
    counted the same processes: every CPU's busy time less ours, per wall second."""
    return others_share(before, after)
