"""Start a real server process for a test, wait until it answers, and stop it (its whole group)."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from contextlib import contextmanager
from importlib.metadata import entry_points
from pathlib import Path
from typing import Iterator

import pytest


def console_script(name: str) -> list[str] | None:
    """The command that runs console script ``name`` of the running interpreter's environment, or None
    when that environment does not install it. Looked up in the installed packages' entry points, not
    on PATH: PATH may hold another environment's copy (a pyenv shim, a system package), running other code."""
    if not entry_points(group="console_scripts", name=name):
        return None
    run = ("import sys; from importlib.metadata import entry_points; "
           f"sys.argv[0] = {name!r}; sys.exit(next(iter(entry_points(group='console_scripts', name={name!r}))).load()())")
    return [sys.executable, "-c", run]


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@contextmanager
def running(cmd: list[str], ready_url: str, log_path: Path, timeout_s: float, **popen) -> Iterator[subprocess.Popen]:
    """The process, once ``ready_url`` answers 200; the test fails with the log's tail if it never does."""
    log = open(log_path, "w+b")
    proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, start_new_session=True, **popen)
    try:
        deadline = time.monotonic() + timeout_s
        while True:
            if proc.poll() is not None:
                log.seek(0)
                pytest.fail(f"{cmd[0]} exited with {proc.returncode}:\n{log.read()[-3000:].decode(errors='replace')}")
            try:
                with urllib.request.urlopen(ready_url, timeout=5) as resp:
                    if resp.status == 200:
                        break
            except OSError:
                pass
            if time.monotonic() > deadline:
                pytest.fail(f"{cmd[0]} did not answer {ready_url} within {timeout_s:.0f} s")
            time.sleep(0.5)
        yield proc
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGTERM)
            try:
                proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()
        log.close()
