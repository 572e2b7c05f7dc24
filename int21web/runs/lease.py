"""One driver per run: a lease on the Run row, taken, renewed and released with conditional
updates (times are the database's own clock, so hosts with skewed clocks agree).

A second ``drive_run`` for the same run (a redelivered message, a quick pause + resume, a
start-up re-dispatch) finds the lease held and returns; a driver whose process died loses
its lease when it expires, or at once to a process on the same host that sees its pid gone.
"""
from __future__ import annotations

import os
import secrets
import socket
import threading
from contextlib import contextmanager
from datetime import timedelta

from django.conf import settings
from django.db.models import Q
from django.db.models.functions import Now

from int21web import beats
from int21web.runs import models as m

HOST = socket.gethostname()


def pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:   # a killed process its parent has not reaped yet is a zombie: dead for our purpose
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except (OSError, IndexError):
        return True


class Lease:
    def __init__(self, run_id: int, ttl_seconds: float | None = None):
        self.run_id = run_id
        self.ttl = timedelta(seconds=ttl_seconds or settings.INT21_DRIVE_LEASE_SECONDS)
        self.holder = f"{HOST}:{os.getpid()}:{secrets.token_hex(4)}"
        self.lost = threading.Event()
        self.took_over = False     # the lease was taken from a driver that died holding it

    def acquire(self) -> bool:
        """Take the lease of a running run if it is free, expired, or held by a dead process here."""
        before = m.Run.objects.filter(pk=self.run_id).values_list("lease_holder", flat=True).first() or ""
        free = Q(lease_until__isnull=True) | Q(lease_until__lt=Now()) | Q(lease_holder=self.holder)
        if self._take(free):
            self.took_over = bool(before) and before != self.holder
            return True
        held = m.Run.objects.filter(pk=self.run_id, state="running").values_list("lease_holder", flat=True).first()
        host, _, rest = (held or "").partition(":")
        pid = rest.partition(":")[0]
        if host == HOST and pid.isdigit() and not pid_alive(int(pid)):
            self.took_over = self._take(Q(lease_holder=held))
            return self.took_over
        return False

    def _take(self, condition: Q) -> bool:
        taken = m.Run.objects.filter(condition, pk=self.run_id, state="running").update(
            lease_holder=self.holder, lease_until=Now() + self.ttl)
        if taken:
            self.lost.clear()
        return bool(taken)

    def renew(self) -> bool:
        ok = bool(m.Run.objects.filter(pk=self.run_id, lease_holder=self.holder).update(lease_until=Now() + self.ttl))
        if not ok:
            self.lost.set()
        return ok

    def release(self) -> None:
        m.Run.objects.filter(pk=self.run_id, lease_holder=self.holder).update(lease_holder="", lease_until=None)

    @contextmanager
    def kept(self):
        """Renew from a thread while the body runs (a generation may wait minutes on workers);
        a renewal refused (the lease was lost) ends the renewing."""
        with beats.beating(f"lease-run-{self.run_id}", max(0.2, self.ttl.total_seconds() / 4), self.renew):
            yield self
