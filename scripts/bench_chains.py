"""The evidence chain read on HotpotQA with gold answers: benchmarks/chain/gold_chains_SPLIT.{json,md}.

Usage: python scripts/bench_chains.py [--split dev|test] [--shared ../shared/data] [--out benchmarks/chain]
       python scripts/bench_chains.py --run RUN [--name NAME] [--pages DATASET]
Tune on dev; test is for reporting.
"""

from __future__ import annotations

import argparse
import gzip
import tempfile
from pathlib import Path

from agentic_rag.datasets.crag import DataError, iter_records
from agentic_rag.datasets.prepare.benchmarks import BENCHMARK_DATASETS, HOTPOT_FILES, benchmark_dataset
from agentic_rag.eval.results import read_results, read_results_text
from studies.chain_report import (
    chain_outcomes,
    chain_outcomes_markdown,
    gold_chains_markdown,
    rechained,
    single_hop_exposure,
    write_gold_chains,
)

ROOT = Path(__file__).resolve().parents[1]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--split", choices=("dev", "test"), default="dev")
    parser.add_argument("--shared", type=Path, default=ROOT.parent / "shared" / "data")
    parser.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "chain")
    parser.add_argument("--run", type=Path, help="a run folder, or a committed <system>_results.jsonl.gz: its drafts "
                                                  "by outcome and chain, instead")
    parser.add_argument("--name", help="with --run: the name its report is written under")
    parser.add_argument("--pages", help="with --run: read each draft's chain again with this code, over all the pages "
                                        "of its record in this dataset (a file, or a benchmark name: hotpot_dev)")
    args = parser.parse_args()
    if args.run:
        if not args.run.exists():
            parser.exit(2, f"error: {args.run} does not exist (a run folder or a <system>_results.jsonl.gz)\n")
        if args.run.name.endswith(".jsonl.gz"):
            try:
                rows = read_results_text(gzip.decompress(args.run.read_bytes()).decode("utf-8", errors="replace"))
            except (OSError, EOFError) as exc:
                parser.exit(2, f"error: {args.run} cannot be read as gzip ({exc})\n")
        else:
            rows = read_results(args.run / "results.jsonl")
        if not rows:
            parser.exit(2, f"error: {args.run} has no results.jsonl rows\n")
        name = args.name or args.run.name.split(".")[0]
        shown = args.run.resolve().relative_to(ROOT) if args.run.resolve().is_relative_to(ROOT) else args.run
        command = f"--run {shown} --name {name}"
        if args.pages:
            with tempfile.TemporaryDirectory() as work:
                try:
                    data = benchmark_dataset(args.pages, Path(work), args.shared) if args.pages in BENCHMARK_DATASETS \
                        else args.pages
                    records = list(iter_records(data))
                except (DataError, OSError) as exc:
                    parser.exit(2, f"error: --pages {args.pages}: {exc}\n")
            if not {r.interaction_id for r in records} & {str(row.get("id")) for row in rows}:
                parser.exit(2, f"error: --pages {args.pages} holds none of the run's {len(rows)} questions "
                               f"({len(records)} readable records)\n")
            rows = rechained(rows, records)
            command += f" --pages {args.pages}"
        text = chain_outcomes_markdown(name, chain_outcomes(rows), command, reread=bool(args.pages))
        args.out.mkdir(parents=True, exist_ok=True)
        (args.out / f"drafts_{name}.md").write_text(text)
        print(text)
        return
    files = [args.shared / "hotpotqa" / name for name in HOTPOT_FILES]
    missing = [str(f) for f in files if not f.is_file()]
    if missing:
        parser.exit(2, f"error: not found: {', '.join(missing)} (--shared names the shared data folder)\n")
    exposure = []
    if args.split == "test":  # the single-passage test split: what the chain check could cost there
        with tempfile.TemporaryDirectory() as work:
            squad = benchmark_dataset("squad200", Path(work), args.shared)
            exposure.append(single_hop_exposure(list(iter_records(squad)), "squad200"))
    print(gold_chains_markdown(write_gold_chains(files, args.split, args.out, exposure)))


if __name__ == "__main__":
    main()
