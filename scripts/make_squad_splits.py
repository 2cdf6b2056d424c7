"""The SQuAD 2.0 test sample and the disjoint development split used for calibration.

test: ``prepare_squad2(n=200, seed=0)`` (100 answerable, 100 unanswerable).
dev:  ``prepare_squad2(n=400, seed=1)`` minus every test question, then the first 50 answerable and
      50 unanswerable, interleaved. Thresholds are swept on dev only; figures are reported on test.
dev2: the rest of that pool minus every question a probe was trained on (``artifacts/probe/*.npz``),
      75 answerable and 75 unanswerable, interleaved; ``squad_dev250.jsonl`` is dev then dev2, and
      ``dev350.jsonl`` adds the NQ near-miss split of ``scripts/make_nq_dev.py`` when it exists.

Usage: python scripts/make_squad_splits.py [--out data]
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from agentic_rag.datasets.crag import IDK, DataError
from agentic_rag.datasets.prepare import prepare_squad2
from agentic_rag.training.sets import probe_training_ids

SQUAD = Path(__file__).resolve().parents[2] / "shared" / "data" / "squad2" / "squad2_dev_half.jsonl"
PROBE_DATA = Path(__file__).resolve().parents[1] / "artifacts" / "probe"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, default=Path("data"))
    args = ap.parse_args()
    try:
        probe_ids = probe_training_ids(sorted(PROBE_DATA.glob("*.npz")))
    except DataError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    test, _ = prepare_squad2(SQUAD, args.out / "squad200.jsonl", n=200, seed=0)
    pool, _ = prepare_squad2(SQUAD, args.out / "squad_pool_seed1.jsonl", n=400, seed=1)
    test_ids = {json.loads(line)["interaction_id"] for line in test.read_text().splitlines()}
    rows = [json.loads(line) for line in pool.read_text().splitlines()]
    rows = [r for r in rows if r["interaction_id"] not in test_ids]
    answerable = [r for r in rows if r["answer"] != IDK][:50]
    unanswerable = [r for r in rows if r["answer"] == IDK][:50]
    dev = [r for pair in zip(answerable, unanswerable) for r in pair]
    (args.out / "squad_dev100.jsonl").write_text("".join(json.dumps(r) + "\n" for r in dev))
    taken = {r["interaction_id"] for r in dev} | probe_ids
    rest = [r for r in rows if r["interaction_id"] not in taken]
    answerable = [r for r in rest if r["answer"] != IDK][:75]
    unanswerable = [r for r in rest if r["answer"] == IDK][:75]
    dev2 = [r for pair in zip(answerable, unanswerable) for r in pair]
    (args.out / "squad_dev2.jsonl").write_text("".join(json.dumps(r) + "\n" for r in dev2))
    joined = "".join(json.dumps(r) + "\n" for r in dev + dev2)
    (args.out / "squad_dev250.jsonl").write_text(joined)
    nq = args.out / "nq_dev100.jsonl"
    if nq.is_file():
        (args.out / "dev350.jsonl").write_text(joined + nq.read_text())
    print(f"test {len(test_ids)} questions, dev {len(dev)} questions, dev2 {len(dev2)} questions, overlap 0")
    return 0


if __name__ == "__main__":
    sys.exit(main())
