"""Kill a real eval run halfway (SIGKILL), resume it, and compare with an uninterrupted run.

Both runs use the same dataset, system and settings. The killed run is a separate process started with
``agentic-rag eval``; it is killed once ``--kill-after`` result lines are on disk, then resumed with
``--resume``. The two summary.json files must agree on every field but wall-clock latency.
Writes benchmarks/resume_check.json.

The pieces (start an eval, kill it when a condition holds, compare a resumed run with a reference)
live in testkit.processes; scripts/bench_reliability.py uses them for its kill and interrupt cases.

Usage: python scripts/bench_resume.py [--dataset data/rgb40.jsonl] [--kill-after 15]
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
from pathlib import Path

from testkit.processes import ROOT, child_env, compare_runs, eval_cmd, kill, lines, start, wait_until


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
