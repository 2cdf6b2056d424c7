"""Per-signal AUC of the agent's drafts on a development split, per backend.

Reads finished agent runs (e.g. the ``run/`` folder ``agentic-rag train decision`` leaves in its
``--out``), judges every draft (right, wrong, or a draft to an unanswerable question) and reports each
signal's AUC for right vs wrong drafts and for answerable vs unanswerable questions. Writes
benchmarks/decision/signal_auc_<backend>.json and regenerates benchmarks/decision/signal_auc.md from
every such file there.

Usage: python scripts/bench_decision_signals.py --run BACKEND=RUN_DIR [--run ...] [--out DIR]
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from agentic_rag.training.decision import signal_auc_markdown, signal_auc_report

ROOT = Path(__file__).resolve().parents[1]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--run", action="append", required=True,
                    help="BACKEND=RUN_DIR (repeatable), e.g. local-0.5b=artifacts/calibration/decision/run")
    ap.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "decision")
    args = ap.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    for spec in args.run:
        backend, sep, run_dir = spec.partition("=")
        if not sep or not (Path(run_dir) / "results.jsonl").is_file():
            raise SystemExit(f"--run {spec!r}: give BACKEND=RUN_DIR of a finished agent run")
        report = signal_auc_report(run_dir, backend)
        (args.out / f"signal_auc_{backend}.json").write_text(json.dumps(report, indent=2) + "\n")
    reports = [json.loads(p.read_text()) for p in sorted(args.out.glob("signal_auc_*.json"))]
    (args.out / "signal_auc.md").write_text(signal_auc_markdown(reports))
    print(f"wrote {len(reports)} report(s) to {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
