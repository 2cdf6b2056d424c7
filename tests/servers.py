"""Start a real server process for a test, wait until it answers, and stop it (its whole group)."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import time
import urllib.request
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

import pytest


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
