"""One evaluation's sandbox identity: an unprivileged user of its own and private folders.

Like a contest judge's box, every evaluation gets a user id nobody else has (when the
evaluator runs as root; otherwise its own, and the sandbox relies on its other walls). Every
process of the evaluation — the candidate's runner, the baselines' processes — runs as that
user, so they cannot signal, trace or read any other evaluation's processes, and when the
evaluation ends every process of that user is killed, whatever session or process group it
put itself in. The folders are the evaluator's (root-owned, not writable by the box), except
``home``: the one place a baseline process may write (torch.compile's cache).
"""
from __future__ import annotations

import os
import secrets
import shutil
import signal
import tempfile
import time
from pathlib import Path

UID_BASE = 1_200_000          # far above any real account; 2^20 ids to draw from
UID_SPAN = 1 << 20


def _shm() -> str | None:
    return "/dev/shm" if os.access("/dev/shm", os.W_OK) else None


class Box:
    used_uids: set[int] = set()      # every box user this process has made (tests check none lives on)

    def __init__(self):
        self.root_user = os.geteuid() == 0
        self.uid = UID_BASE + secrets.randbelow(UID_SPAN) if self.root_user else os.geteuid()
        self.gid = self.uid if self.root_user else os.getegid()
        Box.used_uids.add(self.uid)
        self.dir = Path(tempfile.mkdtemp(prefix="int21-box-", dir=_shm()))   # 0700, ours
        os.chmod(self.dir, 0o711)
        self.run_dir = self.dir / "run"         # the runner's working folder: empty, read-only
        self.run_dir.mkdir(mode=0o555)
        self.home = self.dir / "home"           # a baseline process's own writable folder
        self.home.mkdir(mode=0o700)
        if self.root_user:
            os.chown(self.home, self.uid, self.gid)
        self.pgids: set[int] = set()

    def track(self, pid: int) -> None:
        """A process group this evaluation started (each sandbox process leads its own)."""
        self.pgids.add(pid)

    def kill_all(self) -> int:
        """SIGKILL every process group started here and every process of the box's user.
        Returns how many processes of the user were found still alive."""
        for pgid in list(self.pgids):
            try:
                os.killpg(pgid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass
        if not self.root_user:
            return 0
        found = 0
        for _ in range(50):        # a process may fork while we kill: sweep until none is left
            alive = pids_of_users({self.uid})
            if not alive:
                break
            found = max(found, len(alive))
            for pid in alive:
                try:
                    os.kill(pid, signal.SIGKILL)
                except (ProcessLookupError, PermissionError):
                    pass
            time.sleep(0.01)
        return found

    def close(self) -> None:
        self.kill_all()
        shutil.rmtree(self.dir, ignore_errors=True)


def pids_of_users(uids) -> list[int]:
    """The live (not zombie) processes whose real uid is one of ``uids``: one walk of /proc
    however many uids are asked about."""
    uids = set(uids)
    out = []
    if not uids:
        return out
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            with open(f"/proc/{entry.name}/status") as f:
                zombie = False
                for line in f:
                    if line.startswith("State:"):
                        zombie = line.split()[1] in ("Z", "X")
                    elif line.startswith("Uid:"):
                        if int(line.split()[1]) in uids and not zombie:
                            out.append(int(entry.name))
                        break
        except (OSError, ValueError):
            continue
    return out
