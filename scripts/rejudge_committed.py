"""Re-judge committed runs that no benchmark script owns, in place, with the current judge (no model call).

A committed folder holds each run as ``<label>_results.jsonl.gz`` beside its config and summary
(``benchmarks/chain/hotpot_dev60``). Each run is restored into a run folder under ARTIFACTS_DIR, re-judged
(``agentic_rag.eval.rejudge``), and its rows, summary and report are written back; ``--pair A B FILE``
also writes the comparison of two of them. The agent-vs-baseline splits are re-judged by
``scripts/bench_agent_vs_baseline.py --rejudge-only``, which also writes their overview.

Usage: python scripts/rejudge_committed.py DIR --runs LABEL [LABEL ...] [--pair A B FILE.md]
"""

from __future__ import annotations

import argparse
import gzip
import sys
from pathlib import Path

from agentic_rag.configuration import Settings
from agentic_rag.eval.compare import compare, copy_run_files, to_markdown, write_plots
from agentic_rag.eval.rejudge import rejudge_run, restore_run


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("folder", type=Path, help="a committed folder of runs")
    parser.add_argument("--runs", nargs="+", required=True, help="the labels of its runs (agent, agent_chain_check, ...)")
    parser.add_argument("--pair", nargs=3, metavar=("A", "B", "FILE"), help="write the comparison of runs A and B as FILE")
    args = parser.parse_args()
    work = Path(Settings.load().paths.ARTIFACTS_DIR) / "rejudged" / args.folder.name
    dirs = {}
    for label in args.runs:
        try:
            run_dir = restore_run(args.folder, label, work / label)
        except FileNotFoundError as exc:
            raise SystemExit(f"error: {exc}") from None
        summary, _ = rejudge_run(run_dir)
        copy_run_files(run_dir, args.folder, label)
        (args.folder / f"{label}_results.jsonl.gz").write_bytes(
            gzip.compress((run_dir / "results.jsonl").read_bytes(), compresslevel=9, mtime=0))
        print(f"{args.folder}/{label}: score {summary['score']}, accuracy {summary['accuracy']}", file=sys.stderr)
        dirs[label] = run_dir
    if args.pair:
        a, b, name = args.pair
        result = compare([dirs[a], dirs[b]])
        (args.folder / name).write_text(to_markdown(result, "Comparison", write_plots(result, args.folder)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
