"""Every child process the project starts ends with its parent: the llama.cpp server of ``serve``, the
servers that tests and benchmarks start, the CLI runs of the reliability cases.

A child started with a plain ``Popen`` outlived a parent stopped with SIGTERM or SIGHUP (what a service
manager, a container stop, a closed terminal or a script's cleanup sends): re-parented to init, the
server kept its port and its share of a core. ``start_child`` gives each child two guards, because
neither covers every way a parent ends:

* the kernel sends the child SIGTERM when its parent dies, however it dies (SIGKILL included):
  ``prctl(PR_SET_PDEATHSIG)`` (Linux), set in the child before its command runs. It reaches the
  child alone, not what the child started;
* the child leads a process group of its own, and SIGTERM or SIGHUP to the parent first stops every
  live child's group (SIGTERM, SIGKILL after ``STOP_GRACE_S``) and waits for it, then does what it did
  before (by default: ends the parent). A handler cannot run on SIGKILL.

In its own group, a child no longer gets the Ctrl-C a terminal sends to its foreground group: the
parent's ``KeyboardInterrupt`` stops it (``stop_child``). The kernel's guard follows the *thread* that
started the child: a child started from a thread that ends early would be stopped with it, so children
are started from the main thread. Ray's processes are Ray's: it starts them with the same kernel guard.
"""

from __future__ import annotations

import ctypes
import os
import signal
import subprocess
import sys
import threading
import time
from typing import Any, Callable

# seconds a child's group has between SIGTERM and SIGKILL: llama.cpp's server and uvicorn stop in well
# under one, and `docker stop` kills the parent itself 10 s after its SIGTERM
STOP_GRACE_S = 5.0
POLL_S = 0.05  # seconds between two looks at a stopping child
PR_SET_PDEATHSIG = 1  # <linux/prctl.h>
STOP_SIGNALS = (signal.SIGTERM, signal.SIGHUP)

# loaded before any fork: the child only calls it
_LIBC = ctypes.CDLL(None, use_errno=True) if sys.platform.startswith("linux") else None
_LIVE: set[subprocess.Popen] = set()  # set.add, set.discard and list(set) are atomic: safe in a signal handler
_PREVIOUS: dict[int, Any] = {}  # the handler each stop signal had before ours


def start_child(cmd: list[str], *, preexec_fn: Callable[[], None] | None = None, **popen: Any) -> subprocess.Popen:
    """``Popen(cmd, **popen)`` in a process group of its own that ends with this process (module docstring)."""
    parent = os.getpid()

    def prepare() -> None:
        _end_with(parent)
        if preexec_fn is not None:
            preexec_fn()

    proc = subprocess.Popen(cmd, start_new_session=True, preexec_fn=prepare, **popen)
    for done in [p for p in list(_LIVE) if p.returncode is not None]:
        _LIVE.discard(done)
    _LIVE.add(proc)
    _handle_stop_signals()
    return proc


def stop_child(proc: subprocess.Popen, grace_s: float = STOP_GRACE_S) -> int | None:
    """SIGTERM to the child's group, SIGKILL after ``grace_s``; its exit code once it is gone."""
    _stop([proc], grace_s)
    return proc.returncode


def stop_children() -> None:
    """Stop every live child this process started, all their groups at once."""
    _stop([p for p in list(_LIVE) if p.returncode is None], STOP_GRACE_S)


def _stop(procs: list[subprocess.Popen], grace_s: float) -> None:
    for proc in procs:
        _signal_group(proc, signal.SIGTERM)
    deadline = time.monotonic() + grace_s
    stubborn = [proc for proc in procs if not _reaped(proc, deadline)]
    for proc in stubborn:
        _signal_group(proc, signal.SIGKILL)
    deadline = time.monotonic() + STOP_GRACE_S  # SIGKILL cannot be refused: this waits for the kernel only
    for proc in procs:
        _reaped(proc, deadline)
        _LIVE.discard(proc)


def _end_with(parent: int) -> None:
    """In the child, before its command: the kernel's SIGTERM when the parent dies."""
    if _LIBC is not None:
        _LIBC.prctl(PR_SET_PDEATHSIG, int(signal.SIGTERM), 0, 0, 0)
    if os.getppid() != parent:  # the parent died before the guard was set: nothing would send it
        os.kill(os.getpid(), signal.SIGTERM)


def _handle_stop_signals() -> None:
    """Install the handler once per signal, from the main thread (the only one that may). A signal this
    process ignores (SIGHUP under ``nohup``) stays ignored: it was not meant to stop anything."""
    if threading.current_thread() is not threading.main_thread():
        return
    for sig in STOP_SIGNALS:
        current = signal.getsignal(sig)
        if sig in _PREVIOUS or current in (signal.SIG_IGN, None):
            continue
        _PREVIOUS[sig] = current
        signal.signal(sig, _stop_then_go_on)


def _stop_then_go_on(signum: int, frame: Any) -> None:
    stop_children()
    previous = _PREVIOUS.get(signum, signal.SIG_DFL)
    if callable(previous):
        previous(signum, frame)
        return
    signal.signal(signum, previous)
    os.kill(os.getpid(), signum)  # as if the handler had never been there: SIG_DFL ends the process


def _signal_group(proc: subprocess.Popen, sig: int) -> None:
    if proc.returncode is not None:  # reaped: its pid, and so its group's id, may belong to another process now
        return
    try:
        os.killpg(proc.pid, sig)
    except (ProcessLookupError, PermissionError):
        pass


def _reaped(proc: subprocess.Popen, deadline: float) -> bool:
    """Wait for the child until ``deadline``, with ``waitpid`` rather than ``proc.wait``: inside a signal
    handler, the interrupted ``proc.wait`` holds the lock that ``proc.wait`` would take."""
    while proc.returncode is None:
        try:
            pid, status = os.waitpid(proc.pid, os.WNOHANG)
        except ChildProcessError:  # reaped by Popen already
            return True
        if pid:
            proc.returncode = os.waitstatus_to_exitcode(status)
            return True
        if time.monotonic() >= deadline:
            return False
        time.sleep(POLL_S)
    return True
