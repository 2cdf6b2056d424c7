"""One writer per run folder: a lock file naming the process that holds it.

Two ``eval`` processes on one ``--out`` would each answer every question and append its rows (each
question twice), and a fresh run started beside a running one would empty the file under it. The
writer holds ``run.lock``: an exclusive ``flock`` that the kernel drops when the process ends however
it ends (SIGKILL, a crash), so a lock file left behind is told apart from one in use without
guessing from process ids; its text (process id, host, start time) is what the refusal names.
"""

from __future__ import annotations

import fcntl
import json
import os
import socket
import time
from pathlib import Path
from typing import Any

LOCK_NAME = "run.lock"


class RunFolderBusy(OSError):
    """Another process is writing this run folder."""


def _holder(path: Path) -> dict[str, Any]:
    try:
        info = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return info if isinstance(info, dict) else {}


def describe(info: dict[str, Any]) -> str:
    if not info:
        return "a process that left no details"
    started = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(info.get("started", 0)))
    return f"process {info.get('pid', '?')} on {info.get('host', '?')} (started {started})"


class RunLock:
    """Held from the moment a run touches its folder to its end (a context manager).

    ``stale`` is what a lock file left by a process that is gone said, after the lock is taken over
    (reported by the caller)."""

    def __init__(self, folder: Path) -> None:
        self.path = Path(folder) / LOCK_NAME
        self.stale: dict[str, Any] | None = None
        self._fd: int | None = None

    def acquire(self) -> "RunLock":
        while True:
            fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                os.close(fd)
                raise RunFolderBusy(
                    f"the run folder {self.path.parent} is in use by {describe(_holder(self.path))} "
                    f"(lock file {self.path}); wait for that run to end, or give another --out") from None
            try:  # the file may have been removed by its last holder between our open and our lock
                same = os.fstat(fd).st_ino == os.stat(self.path).st_ino
            except FileNotFoundError:
                same = False
            if same:
                break
            os.close(fd)
        left = os.read(fd, 4096)
        if left.strip():
            try:
                info = json.loads(left)
            except ValueError:
                info = {}
            self.stale = info if isinstance(info, dict) else {}
        mine = json.dumps({"pid": os.getpid(), "host": socket.gethostname(), "started": time.time()})
        os.ftruncate(fd, 0)
        os.pwrite(fd, mine.encode("utf-8"), 0)
        self._fd = fd
        return self

    def release(self) -> None:
        if self._fd is None:
            return
        try:
            self.path.unlink(missing_ok=True)  # removed while still held: no one can lock a stale file
        finally:
            os.close(self._fd)
            self._fd = None

    def __enter__(self) -> "RunLock":
        return self.acquire()

    def __exit__(self, *exc: Any) -> None:
        self.release()
