#!/usr/bin/env python
"""Filter and sample a CRAG file into data/crag_questions.jsonl (full records) and data/crag_corpus.jsonl.

    python scripts/prepare_crag.py --split train --static-only --n 100

Without --input it reads ../shared/data/crag/crag_example_10.jsonl.bz2 (next to the repository) or, if that
is absent, the 10 example records bundled with the package. The full CRAG dev file (plain or .bz2) is
streamed, never loaded whole.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[1]
if str(REPO_ROOT) not in sys.path:  # run from a checkout without installing the package
    sys.path.insert(0, str(REPO_ROOT))

from agentic_rag.datasets.crag import DataError, ReadReport  # noqa: E402
from agentic_rag.datasets.prepare import normalise_split, prepare_crag  # noqa: E402

SHARED_EXAMPLE = REPO_ROOT.parent / "shared" / "data" / "crag" / "crag_example_10.jsonl.bz2"
BUNDLED_EXAMPLE = REPO_ROOT / "agentic_rag" / "data" / "crag_example_10.jsonl.bz2"


def default_input() -> Path:
    return SHARED_EXAMPLE if SHARED_EXAMPLE.is_file() else BUNDLED_EXAMPLE


def _split(text: str) -> str:
    try:
        normalise_split(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None
    return text


def _count(text: str) -> int:
    value = int(text)
    if value < 0:
        raise argparse.ArgumentTypeError("must be >= 0")
    return value


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--input", default=None, help=f"CRAG .jsonl or .jsonl.bz2 file, or 'example' (default: {default_input()})")
    parser.add_argument("--out", default="data/", help="output folder (default: data/)")
    parser.add_argument("--split", type=_split, default=None,
                        help="0/train/validation/dev or 1/test/public_test (default: every split)")
    parser.add_argument("--static-only", action="store_true", help="keep only static_or_dynamic == 'static'")
    parser.add_argument("--n", type=_count, default=None, help="sample this many records (default: all)")
    parser.add_argument("--seed", type=int, default=0, help="sampling seed (default: 0)")
    parser.add_argument("--on-bad", choices=("skip", "fail"), default="skip",
                        help="skip (and list) malformed lines, or stop at the first one (default: skip)")
    args = parser.parse_args(argv)

    source = args.input or str(default_input())
    report = ReadReport(source)
    try:
        (questions, corpus), stats = prepare_crag(
            source, args.out, split=args.split, static_only=args.static_only, n=args.n, seed=args.seed,
            on_bad=args.on_bad, report=report,
        )
    except DataError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1

    for bad in report.bad:
        print(f"skipped bad record {bad}", file=sys.stderr)
    print(json.dumps(stats, indent=2))
    print(f"wrote {stats['written']} question record(s) to {questions}")
    print(f"wrote {stats['distinct_pages']} distinct page(s) (of {stats['pages']}) to {corpus}")
    if args.n is not None and stats["written"] < args.n:
        print(
            f"note: {stats['after_static']} record(s) matched the filters "
            f"(split={args.split}, static_only={args.static_only}; splits in the input: {stats['splits_seen']}), "
            f"fewer than --n {args.n}"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
