"""Kill a real eval run halfway (SIGKILL), resume it, and compare with an uninterrupted run.

Both runs use the same dataset, system and settings. The killed run is a separate process started with
``agentic-rag eval``; it is killed once ``--kill-after`` result lines are on disk, then resumed with
``--resume``. The two summary.json files must agree on every field but wall-clock latency.
Writes benchmarks/resume_check.json.

The pieces (start an eval, kill it when a condition holds, compare a resumed run with a reference)
are reused by scripts/bench_reliability.py for its kill and interrupt cases.

Usage: python scripts/bench_resume.py [--dataset data/rgb40.jsonl] [--kill-after 15]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Callable

ROOT = Path(__file__).resolve().parents[1]
TIMING = {"latency_p50_ms", "latency_p95_ms"}


def eval_cmd(dataset: str, out: Path, extra: list[str]) -> list[str]:
    return [sys.executable, "-m", "agentic_rag.cli", "eval", "--dataset", str(dataset), "--system", "agent",
            "--out", str(out), *extra]


def child_env() -> dict[str, str]:
    """This checkout's code, and no setting leaking in from the caller's environment."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("AGENTIC_RAG_", "OPENAI_"))}
    return {**env, "PYTHONPATH": str(ROOT)}


def start(cmd: list[str]) -> subprocess.Popen:
    return subprocess.Popen(cmd, env=child_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            start_new_session=True)


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
    for line in (path.read_text().splitlines() if path.is_file() else []):
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


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--dataset", default=str(ROOT / "data" / "rgb40.jsonl"))
    ap.add_argument("--kill-after", type=int, default=15)
    ap.add_argument("--work", type=Path, default=ROOT / "artifacts" / "runs" / "resume_check")
    ap.add_argument("--override", nargs="*", default=["LLM_CACHE_PATH=artifacts/cache/llm.sqlite"])
    args = ap.parse_args()
    extra = [x for o in args.override for x in ("-o", o)]
    shutil.rmtree(args.work, ignore_errors=True)
    full, cut = args.work / "uninterrupted", args.work / "killed_and_resumed"
    subprocess.run(eval_cmd(args.dataset, full, extra), check=True, env=child_env(), stdout=subprocess.DEVNULL,
                   stderr=subprocess.DEVNULL)

    proc = start(eval_cmd(args.dataset, cut, extra))
    wait_until(lambda: lines(cut / "results.jsonl") >= args.kill_after, proc)
    kill(proc)
    at_kill = lines(cut / "results.jsonl")
    subprocess.run(eval_cmd(args.dataset, cut, ["--resume", *extra]), check=True, env=child_env(),
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)

    check = compare_runs(full, cut)
    report = {
        "dataset": args.dataset,
        "questions": json.loads((full / "summary.json").read_text())["n"],
        "result_lines_when_killed": at_kill,
        "result_lines_after_resume": check["result_lines"],
        "distinct_questions_after_resume": check["distinct_questions"],
        "summary_fields_compared": check["summary_fields_compared"],
        "differences_excluding_latency": check["differences_excluding_latency"],
        "same_summary": not check["differences_excluding_latency"],
    }
    (ROOT / "benchmarks" / "resume_check.json").write_text(json.dumps(report, indent=2) + "\n")
    print(json.dumps(report, indent=2))
    return 0 if report["same_summary"] else 1


if __name__ == "__main__":
    sys.exit(main())
