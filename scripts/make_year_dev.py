"""A development split of questions that name a year: where a period rule earns or costs the most.

SQuAD 2.0 and NQ-open questions with a year in them ("Who won the oscar for best picture in 1976"),
taken from neither the SQuAD test sample nor any probe's training rows: SQuAD's as prepared (own
paragraph plus four of the same article; its unanswerable ones are often the same question with
the year changed), NQ's as the near-miss records of ``training.sets.nq_records`` shown as web-search
snippets (half keep the gold passage, half get near misses only). The general dev split has six
such questions; this one has enough to see what a period rule costs answerable questions.

Usage: python scripts/make_year_dev.py [--out data/year_dev.jsonl]
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path

from agentic_rag.anchors.matching import RE_YEAR
from agentic_rag.datasets.crag import IDK, DataError, iter_records
from agentic_rag.training.sets import as_snippets, nq_records, probe_training_ids

ROOT = Path(__file__).resolve().parents[1]
NQ = ROOT.parent / "shared" / "data" / "nq" / "nq_open_oracle.jsonl"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--squad", type=Path, default=ROOT / "data" / "squad_all.jsonl", help="every SQuAD question, prepared")
    ap.add_argument("--test", type=Path, default=ROOT / "data" / "squad200.jsonl", help="the test sample, left out")
    ap.add_argument("--exclude", type=Path, nargs="*", default=sorted((ROOT / "artifacts" / "probe").glob("*.npz")),
                    help="probe training files whose questions are left out")
    ap.add_argument("--out", type=Path, default=ROOT / "data" / "year_dev.jsonl")
    args = ap.parse_args()
    try:
        seen = probe_training_ids(args.exclude)
    except DataError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    seen |= {r.interaction_id for r in iter_records(args.test)}
    squad = [r for r in iter_records(args.squad) if RE_YEAR.search(r.query) and r.interaction_id not in seen]
    with tempfile.TemporaryDirectory() as tmp:
        nq = [as_snippets(r) for r in nq_records(NQ, 10_000, 11, Path(tmp), exclude=frozenset(seen))
              if RE_YEAR.search(r.query)]
    rows = squad + nq
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text("".join(json.dumps(r.model_dump(mode="json")) + "\n" for r in rows))
    unans = sum(r.question_type == "unanswerable" or r.answer == IDK for r in rows)
    print(f"{len(rows)} questions ({len(squad)} SQuAD, {len(nq)} NQ; {unans} unanswerable) -> {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
