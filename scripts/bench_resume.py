"""Kill a real eval run halfway (SIGKILL), resume it, and compare with an uninterrupted run.

Both runs use the same dataset, system and settings. The killed run is a separate process started with
``agentic-rag eval``; it is killed once ``--kill-after`` result lines are on disk, then resumed with
``--resume``. The two summary.json files must agree on every field but wall-clock latency.
Writes benchmarks/resume_check.json.

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
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TIMING = {"latency_p50_ms", "latency_p95_ms"}


def eval_cmd(dataset: str, out: Path, extra: list[str]) -> list[str]:
    return ["agentic-rag", "eval", "--dataset", dataset, "--system", "agent", "--out", str(out), *extra]


def lines(path: Path) -> int:
    return len(path.read_text().splitlines()) if path.is_file() else 0


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
    subprocess.run(eval_cmd(args.dataset, full, extra), check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)

    proc = subprocess.Popen(eval_cmd(args.dataset, cut, extra), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            start_new_session=True)
    deadline = time.monotonic() + 1800
    while lines(cut / "results.jsonl") < args.kill_after and proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.2)
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()
    at_kill = lines(cut / "results.jsonl")
    subprocess.run(eval_cmd(args.dataset, cut, ["--resume", *extra]), check=True,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)

    a = json.loads((full / "summary.json").read_text())
    b = json.loads((cut / "summary.json").read_text())
    diff = {k: (a.get(k), b.get(k)) for k in set(a) | set(b) if k not in TIMING and a.get(k) != b.get(k)}
    ids = [json.loads(x)["id"] for x in (cut / "results.jsonl").read_text().splitlines() if x.strip().startswith("{")]
    report = {
        "dataset": args.dataset,
        "questions": a["n"],
        "result_lines_when_killed": at_kill,
        "result_lines_after_resume": len(ids),
        "distinct_questions_after_resume": len(set(ids)),
        "summary_fields_compared": len([k for k in a if k not in TIMING]),
        "differences_excluding_latency": diff,
        "same_summary": not diff,
    }
    (ROOT / "benchmarks" / "resume_check.json").write_text(json.dumps(report, indent=2) + "\n")
    print(json.dumps(report, indent=2))
    return 0 if not diff else 1


if __name__ == "__main__":
    sys.exit(main())
