"""Start a real server process for a test or a benchmark, wait until it answers, and stop it (its whole group).

A server that exits or never answers raises ``ServerDidNotStart`` (an ``AssertionError``, so a test
reports it as a failure) with the tail of its log."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from contextlib import contextmanager
from importlib.metadata import entry_points
from pathlib import Path
from typing import Iterator

from agentic_rag.children import start_child, stop_child

REPO = Path(__file__).resolve().parents[1]  # the checkout: langgraph.json and graphs/ live there
LANGGRAPH_STARTUP_S = 300  # a cold `langgraph dev` imports the graphs and loads the models first


class ServerDidNotStart(AssertionError):
    """The server process exited, or did not answer its ready URL in time."""


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
    proc = start_child(cmd, stdout=log, stderr=subprocess.STDOUT, **popen)
    try:
        deadline = time.monotonic() + timeout_s
        while True:
            if proc.poll() is not None:
                log.seek(0)
                raise ServerDidNotStart(f"{cmd[0]} exited with {proc.returncode}:\n{log.read()[-3000:].decode(errors='replace')}")
            try:
                with urllib.request.urlopen(ready_url, timeout=5) as resp:
                    if resp.status == 200:
                        break
            except OSError:
                pass
            if time.monotonic() > deadline:
                raise ServerDidNotStart(f"{cmd[0]} did not answer {ready_url} within {timeout_s:.0f} s")
            time.sleep(0.5)
        yield proc
    finally:
        stop_child(proc)
        log.close()


def post(port: int, body: dict | bytes, timeout: float = 600, path: str = "/runs/wait") -> tuple[int, dict]:
    """POST ``body`` to a local server, as JSON or as the bytes given (what ``json.dumps`` cannot write: a
    client's deep nesting): (HTTP status, JSON reply), error statuses included; an error reply that is not
    JSON (a proxy's or a crash's page) comes back as its text under ``detail``."""
    data = body if isinstance(body, bytes) else json.dumps(body).encode()
    req = urllib.request.Request(f"http://127.0.0.1:{port}{path}", data=data, headers={"content-type": "application/json"})
    try:
        with urllib.request.urlopen(req, timeout=timeout) as resp:
            return resp.status, json.load(resp)
    except urllib.error.HTTPError as exc:
        text = exc.read() or b"{}"
        try:
            return exc.code, json.loads(text)
        except ValueError:
            return exc.code, {"detail": text.decode(errors="replace")}


@contextmanager
def graph_server(langgraph: list[str], folder: Path, env: dict[str, str] | None = None) -> Iterator[tuple[int, Path]]:
    """`langgraph dev` serving this checkout's graphs, its artifacts and log in ``folder``: (port, log)."""
    with graph_server_process(langgraph, folder, env) as (port, log, _):
        yield port, log


@contextmanager
def graph_server_process(langgraph: list[str], folder: Path, env: dict[str, str] | None = None,
                         jobs: int | None = None) -> Iterator[tuple[int, Path, subprocess.Popen]]:
    """``graph_server`` and its process, for a test that measures the server itself (its memory); ``jobs``:
    runs it answers at once (`--n-jobs-per-worker`; `langgraph dev` runs one at a time, the rest queue)."""
    port = free_port()
    env = {**(os.environ if env is None else env), "PYTHONPATH": str(REPO), "LANGSMITH_TRACING": "false",
           "AGENTIC_RAG_ARTIFACTS_DIR": str(folder)}
    cmd = [*langgraph, "dev", "--no-browser", "--no-reload", "--host", "127.0.0.1", "--port", str(port),
           "--config", str(REPO / "langgraph.json"), *(["--n-jobs-per-worker", str(jobs)] if jobs else [])]
    # from the repo: langgraph.json's http.app path is read relative to the working directory
    with running(cmd, f"http://127.0.0.1:{port}/ok", folder / "server.log", LANGGRAPH_STARTUP_S, cwd=REPO, env=env) as proc:
        yield port, folder / "server.log", proc
