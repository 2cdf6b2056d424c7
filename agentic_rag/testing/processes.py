"""The CLI as child processes: start an eval or an ingest as a user would, kill it when a condition
holds, and compare a resumed run with an uninterrupted one (lost or doubled questions, summary fields).

The children run this checkout's code (``PYTHONPATH``) with no setting leaking in from the caller's
environment.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections import Counter
from pathlib import Path
from typing import Callable

from agentic_rag.telemetry import jsonl_lines

ROOT = Path(__file__).resolve().parents[2]  # the checkout whose code the children run
TIMING = {"latency_p50_ms", "latency_p95_ms"}  # the summary fields that differ between two runs of the same questions


def eval_cmd(dataset: str, out: Path, extra: list[str]) -> list[str]:
    return [sys.executable, "-m", "agentic_rag.cli", "eval", "--dataset", str(dataset), "--system", "agent",
            "--out", str(out), *extra]


def child_env(keep: tuple[str, ...] = ()) -> dict[str, str]:
    """This checkout's code, and no setting leaking in from the caller's environment but those in ``keep``
    (the test suite keeps its preset)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("AGENTIC_RAG_", "OPENAI_")) or k in keep}
    return {**env, "PYTHONPATH": str(ROOT)}


def sigint_as_in_a_terminal() -> None:
    """A child's ``preexec_fn``: SIGINT back to its default. A job started in the background (``nohup``,
    ``&`` in a script) ignores SIGINT, everything below it inherits that, and a Python process that
    starts with SIGINT ignored never turns it into KeyboardInterrupt: a Ctrl-C sent to it would be
    dropped, and a check of what Ctrl-C does would fail (or pass) for the wrong reason."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def start(cmd: list[str], keep: tuple[str, ...] = ()) -> subprocess.Popen:
    """``cmd`` in a session of its own (a kill reaches all of it), as from a terminal (Ctrl-C works)."""
    return subprocess.Popen(cmd, env=child_env(keep), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            start_new_session=True, preexec_fn=sigint_as_in_a_terminal)


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
    proc = subprocess.Popen(
        [sys.executable, "-m", "agentic_rag.cli", "ingest", str(folder), "--out", str(out), "-o", f"ARTIFACTS_DIR={artifacts}"],
        cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT)}, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
    )
    seen: list[bytes] = []
    threading.Thread(target=lambda: seen.extend(iter(lambda: proc.stderr.read(64), b"")), daemon=True).start()
    return proc, seen
