"""Reliability cases end to end: faults injected into real processes, and the outcome.

Each case starts a process as a user would (an `agentic-rag` command, `langgraph dev`, or the CRAG kit
adapter class in a process of its own), injects one fault (a model server that refuses, fails,
rate-limits, hangs or answers garbage; SIGKILL or Ctrl-C at a chosen point; a bad setting; an
unwritable folder; a defective data file or record; a hostile page; a broken kit batch) and records:
did the process crash, did it print a traceback, were results lost or doubled, did the API key leak,
and what the user got. Where a model answers, it is the scripted reply of testkit/fault_server.py over
real HTTP (openai backend); the Ctrl-C exit time and the memory of a 100-question run use the
packaged 0.5B. Bad files, hostile pages and ingest folders come from testkit, the builders
the test suite uses.

Cases live in groups (`@case(group, name, injected)`) in testkit/reliability/, a module per
group or a few related ones; this script only parses the flags and runs them. `--group` reruns some
groups, replacing only their rows in benchmarks/reliability.json (the rest are kept). Writes
benchmarks/reliability.json and benchmarks/reliability.md.

Usage: python scripts/bench_reliability.py [--group model_faults kill_resume settings runs bad_inputs hostile_pages kit
       ingest_kill run_folders extensions settings_load secrets_terminal security silent_loss hangs actionable_errors
       memory] [--case TEXT] [--memory-n 100]
       [--work DIR]   (default: every group but memory)
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from testkit.processes import ROOT
from testkit.reliability.report import all_cases, run


def main() -> int:
    groups = list(dict.fromkeys(c.group for c in all_cases()))
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--group", nargs="*", default=[g for g in groups if g != "memory"], choices=groups)
    ap.add_argument("--case", default=None, help="only cases whose name contains this text")
    ap.add_argument("--memory-n", type=int, default=100, help="questions of the memory run")
    ap.add_argument("--work", type=Path, default=None, help="work folder (default: a temporary one, removed)")
    ap.add_argument("--shared-data", type=Path, default=next(
        (p for p in (ROOT.parent / "shared" / "data", ROOT.parents[1] / "shared" / "data") if p.is_dir()),
        ROOT.parent / "shared" / "data"), help="the shared data folder (SQuAD 2.0 for the memory run)")
    args = ap.parse_args()
    return run(args.group, args.case, args.work, args.shared_data, args.memory_n)


if __name__ == "__main__":
    sys.exit(main())
