"""A second development split whose unanswerable questions look like RGB's: NQ-open with near-miss passages.

SQuAD 2.0's unanswerable questions are edited questions over the right paragraph; RGB's are news
questions over snippets on the topic that lack the answer. A dev split of SQuAD alone calibrates for
the first kind only, and RGB has no questions to spare for a dev split (all 100 are the test). NQ-open
with BM25 near-miss passages (the probe's second training source) has the second kind: half the
questions keep their gold passage among near misses, half get near misses only.

Every question whose NQ id is in a probe's training rows is left out, so no dev question was seen
by a probe. ``--snippets`` writes the same questions as web-search snippets (``training.sets.as_snippets``),
the form CRAG and RGB give. Usage:
python scripts/make_nq_dev.py [--n 100] [--seed 11] [--snippets] [--out data/nq_dev100.jsonl]
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path

from agentic_rag.datasets.crag import IDK, DataError
from agentic_rag.training.sets import as_snippets, base_id, nq_records, probe_training_ids

ROOT = Path(__file__).resolve().parents[1]
NQ = ROOT.parent / "shared" / "data" / "nq" / "nq_open_oracle.jsonl"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=100)
    ap.add_argument("--seed", type=int, default=11)
    ap.add_argument("--out", type=Path, default=ROOT / "data" / "nq_dev100.jsonl")
    ap.add_argument("--snippets", action="store_true", help="each passage cut to a web-search snippet")
    ap.add_argument("--exclude", type=Path, nargs="*", default=sorted((ROOT / "artifacts" / "probe").glob("*.npz")),
                    help="probe training files whose questions are left out")
    args = ap.parse_args()
    try:
        seen = probe_training_ids(args.exclude)
    except DataError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    with tempfile.TemporaryDirectory() as tmp:
        records = nq_records(NQ, args.n * 4, args.seed, Path(tmp))
    fresh = [r for r in records if base_id(r.interaction_id) not in seen]
    answerable = [r for r in fresh if r.answer != IDK][: args.n // 2]
    negative = [r.model_copy(update={"question_type": "unanswerable"}) for r in fresh if r.answer == IDK][: args.n // 2]
    rows = [r for pair in zip(answerable, negative) for r in pair]
    rows = [as_snippets(r) for r in rows] if args.snippets else rows
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text("".join(json.dumps(r.model_dump(mode="json")) + "\n" for r in rows))
    print(f"{len(rows)} questions ({len(answerable)} answerable, {len(negative)} near-miss only) -> {args.out}; "
          f"{len(records) - len(fresh)} drawn questions were in probe training and left out")
    return 0


if __name__ == "__main__":
    sys.exit(main())
