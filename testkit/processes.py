"""The CLI as child processes: start an eval or an ingest as a user would, kill it when a condition
holds, and compare a resumed run with an uninterrupted one (lost or doubled questions, summary fields).

The children run this checkout's code (``PYTHONPATH``) with no setting leaking in from the caller's
environment.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from collections import Counter
from pathlib import Path
from typing import Callable

from agentic_rag.children import start_child
from agentic_rag.configuration import ENV_PREFIX, PRESET_ENV
from agentic_rag.telemetry import jsonl_lines
from testkit.servers import free_port

ROOT = Path(__file__).resolve().parents[1]  # the checkout whose code the children run
TIMING = {"latency_p50_ms", "latency_p95_ms"}  # the summary fields that differ between two runs of the same questions


def eval_cmd(dataset: str, out: Path, extra: list[str]) -> list[str]:
    return [sys.executable, "-m", "agentic_rag.cli", "eval", "--dataset", str(dataset), "--system", "agent",
            "--out", str(out), *extra]


# what the test suite sets for every process it starts: its preset and its shared index cache
SUITE_SETTINGS = (PRESET_ENV, ENV_PREFIX + "INDEX_CACHE_DIR")


def child_env(keep: tuple[str, ...] = ()) -> dict[str, str]:
    """This checkout's code, and no setting leaking in from the caller's environment but those in ``keep``
    (the test suite keeps its preset)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("AGENTIC_RAG_", "OPENAI_")) or k in keep}
    return {**env, "PYTHONPATH": str(ROOT)}


def signals_as_in_a_terminal() -> None:
    """A child's ``preexec_fn``: SIGINT and SIGHUP back to their defaults. A job started in the background
    (``nohup``, ``&`` in a script) ignores SIGINT (``nohup`` SIGHUP too), everything below it inherits that,
    and a Python process that starts with SIGINT ignored never turns it into KeyboardInterrupt: a Ctrl-C
    or a hangup sent to it would be dropped, and a check of what they do would fail (or pass) for the
    wrong reason."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    signal.signal(signal.SIGHUP, signal.SIG_DFL)


def start(cmd: list[str], keep: tuple[str, ...] = ()) -> subprocess.Popen:
    """``cmd`` in a session of its own (a kill reaches all of it), as from a terminal (Ctrl-C works)."""
    return start_child(cmd, env=child_env(keep), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                       preexec_fn=signals_as_in_a_terminal)


# `agentic-rag serve --port ARGV[1]` whose llama.cpp server is the command ARGV[2] (JSON): a stand-in where
# llama-cpp-python is not installed, or a server that fails as llama.cpp's does
SERVE_STAND_IN = """
import json, sys
from agentic_rag.llm import serve
serve.prepared_command = lambda *args, **kwargs: json.loads(sys.argv[2])
from agentic_rag.cli import app
app(["serve", "--port", sys.argv[1]])
"""


def serve_with(child: list[str], port: int) -> subprocess.Popen:
    """`agentic-rag serve --port PORT`, as from a terminal, whose model server is ``child``."""
    return start([sys.executable, "-c", SERVE_STAND_IN, str(port), json.dumps(child)])


# a model server that writes a log, answers nothing, and dies of SIGSEGV as llama.cpp's did on its first token
CRASHING_SERVER = """
import os, resource, signal
resource.setrlimit(resource.RLIMIT_CORE, (0, 0))  # no core file left behind
for i in range(40):
    print(f"log line {i}", flush=True)
print("amx repack tensor blk.0.attn_q.weight of type q4_K", flush=True)
os.kill(os.getpid(), signal.SIGSEGV)
"""
# seconds a `serve` that exited may leave its port open: SIGTERM and SIGHUP stop its server before it
# exits, and after SIGKILL the kernel's SIGTERM reaches the server at once; what is still open later stays
PORT_CLOSE_S = 5.0


def serve_stopped_by(sig: int, folder: Path) -> tuple[int, float | None, str]:
    """`agentic-rag serve --port P &` (its server: the stand-in, serving ``folder``), then ``sig`` to that
    process alone, as `kill` sends it: serve's exit code, the seconds until its port closed (None: still
    open after ``PORT_CLOSE_S``, and then the server left behind is ended here) and serve's stderr."""
    port = free_port()
    proc = serve_with([sys.executable, "-m", "http.server", str(port), "--bind", "127.0.0.1", "--directory", str(folder)], port)
    try:
        if not wait_until(lambda: port_open(port), proc, timeout=120.0):
            raise RuntimeError(f"serve did not start: {proc.stderr.read() if proc.poll() is not None else 'no port'}")
        proc.send_signal(sig)
        code = proc.wait(timeout=60)
        closed_s = seconds_until_closed(port)
    finally:
        if proc.poll() is None or port_open(port):  # serve, or a server left behind, still in serve's group
            os.killpg(proc.pid, signal.SIGKILL)
    return code, closed_s, proc.stderr.read()


def port_open(port: int) -> bool:
    with socket.socket() as sock:
        sock.settimeout(1.0)
        return sock.connect_ex(("127.0.0.1", port)) == 0


def seconds_until_closed(port: int, timeout: float = PORT_CLOSE_S) -> float | None:
    """Seconds until nothing listens on ``port`` any more; None if something still does after ``timeout``."""
    t0 = time.monotonic()
    while port_open(port):
        if time.monotonic() - t0 > timeout:
            return None
        time.sleep(0.05)
    return round(time.monotonic() - t0, 2)


def descendants(pid: int) -> list[int]:
    """Every process below ``pid`` now (Linux /proc): its children, theirs, and so on."""
    parents: dict[int, list[int]] = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            ppid = int(stat.read_text().rsplit(") ", 1)[1].split()[1])
        except (OSError, IndexError, ValueError):  # ended while being read
            continue
        parents.setdefault(ppid, []).append(int(stat.parent.name))
    found, todo = [], [pid]
    while todo:
        below = parents.get(todo.pop(), [])
        found += below
        todo += below
    return found


def alive(pid: int) -> bool:
    """Running: a zombie waiting to be reaped has ended."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(") ", 1)[1][0] != "Z"
    except (OSError, IndexError):
        return False


def seconds_until_ended(pids: list[int], timeout: float) -> float | None:
    """Seconds until none of ``pids`` runs any more; None if some still do after ``timeout``."""
    t0 = time.monotonic()
    while any(alive(p) for p in pids):
        if time.monotonic() - t0 > timeout:
            return None
        time.sleep(0.1)
    return round(time.monotonic() - t0, 2)


def lines(path: Path) -> int:
    return len(path.read_text().splitlines()) if path.is_file() else 0


def wait_until(condition: Callable[[], bool], proc: subprocess.Popen, timeout: float = 1800.0,
               step: float = 0.2) -> bool:
    """Poll ``condition`` while ``proc`` runs; False when it ended or the time ran out first."""
    deadline = time.monotonic() + timeout
    while not condition():
        if proc.poll() is not None or time.monotonic() > deadline:
            return False
        time.sleep(step)
    return True


def kill(proc: subprocess.Popen, sig: int = signal.SIGKILL) -> tuple[float, str]:
    """Send ``sig`` to the run; seconds until it exited, and what it printed on stderr."""
    t0 = time.monotonic()
    if sig == signal.SIGKILL:  # the whole group: nothing of the run survives
        os.killpg(proc.pid, sig)
    else:  # what a terminal's Ctrl-C does to the foreground process
        proc.send_signal(sig)
    _, stderr = proc.communicate()
    return time.monotonic() - t0, stderr or ""


def result_ids(out: Path) -> list[str]:
    path = out / "results.jsonl"
    ids = []
    for line in (jsonl_lines(path.read_text()) if path.is_file() else []):
        if not line:
            continue
        try:
            ids.append(json.loads(line)["id"])
        except (json.JSONDecodeError, KeyError, TypeError):
            ids.append("<cut line>")
    return ids


def compare_runs(reference: Path, resumed: Path) -> dict:
    """Questions lost or doubled, summary fields that differ (latency excluded), telemetry rounds doubled."""
    want, got = result_ids(reference), result_ids(resumed)
    a = json.loads((reference / "summary.json").read_text())
    b = json.loads((resumed / "summary.json").read_text()) if (resumed / "summary.json").is_file() else {}
    diff = {k: (a.get(k), b.get(k)) for k in set(a) | set(b) if k not in TIMING and a.get(k) != b.get(k)}
    rounds = Counter()
    if (resumed / "telemetry.jsonl").is_file():
        from agentic_rag.telemetry import read_rows

        rounds = Counter((r["question_id"], r["round"], r["reason"]) for r in read_rows(resumed / "telemetry.jsonl"))
    return {
        "result_lines": len(got),
        "distinct_questions": len(set(got)),
        "rows_lost": len(set(want) - set(got)),
        "rows_doubled": len(got) - len(set(got)),
        "telemetry_rounds_doubled": sum(n - 1 for n in rounds.values()),
        "summary_fields_compared": len([k for k in a if k not in TIMING]),
        "differences_excluding_latency": diff,
    }


def start_ingest(folder: Path, out: Path, artifacts: Path) -> tuple[subprocess.Popen, list[bytes]]:
    """``agentic-rag ingest`` of ``folder``; the list fills with its stderr as it prints (progress markers)."""
    proc = start_child(
        [sys.executable, "-m", "agentic_rag.cli", "ingest", str(folder), "--out", str(out), "-o", f"ARTIFACTS_DIR={artifacts}"],
        cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT)}, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
    )
    seen: list[bytes] = []
    threading.Thread(target=lambda: seen.extend(iter(lambda: proc.stderr.read(64), b"")), daemon=True).start()
    return proc, seen


# every question drafts, is told to revise, and revises: two calls and two telemetry rounds each, so a
# kill can land between a question's rounds
WEAK = "It was Shrek, made by DreamWorks in 2004 {cite:76th academy}."


def overrides(url: str, tmp: Path) -> dict[str, object]:
    """The fault server's settings; the answerability reader is off, as what a kill, a signal or a
    resume does to a run does not depend on it, and its local prefill would be most of each question."""
    return {"PROBE_ENABLED": False, "LLM_BACKEND": "openai", "OPENAI_BASE_URL": url, "LLM_MODEL": "m", "LLM_TIMEOUT_S": 120,
            "LLM_BACKOFF_S": 0.05, "OVERLAP_TAU": 0.99, "REFLECT_MIN_OVERLAP": 0.0, "ARTIFACTS_DIR": str(tmp / "artifacts")}


def as_options(values: dict[str, object]) -> list[str]:
    return [x for k, v in values.items() for x in ("-o", f"{k}={v}")]


def wait_for(condition, proc: subprocess.Popen, timeout: float = 300.0, step: float = 0.05) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert proc.poll() is None, f"eval ended early: {proc.communicate()[1][-2000:]}"
        assert time.monotonic() < deadline, "condition not reached in time"
        time.sleep(step)


def start_eval(data: Path, out: Path, values: dict[str, object], *extra: str) -> subprocess.Popen:
    return start(eval_cmd(data, out, [*as_options(values), *extra]), keep=SUITE_SETTINGS)


KEY = "sk-fake-7f3a9c1d2e4b"  # distinctive: grepped for in every output


def cli(*args: str, env: dict[str, str] | None = None, **kw) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "agentic_rag.cli", *args], capture_output=True, text=True,
                          env={**child_env(keep=SUITE_SETTINGS), **(env or {})}, timeout=600, **kw)
