"""Compare what the answerability probe reads: one layer's last token vs several layers, the evidence
and question tokens pooled, together; by grouped cross-validated AUC and on the test splits.

Two steps:

  collect  read a generator's prefill views (training/views.py) for reader pairs files (the
           question and the sources exactly as the answer prompt shows them; `agentic-rag train pairs`
           pairs writes them). Resumable: rows are saved in chunks, a rerun skips the ids it has.
  compare  fit each feature set on the training views (article- or question-grouped folds), and score
           it on each evaluation file's views; writes a JSON report and a markdown table.

Usage:
  python scripts/compare_probe_features.py collect --pairs artifacts/reader/pairs_squad.jsonl \
      artifacts/reader/pairs_other.jsonl --per-source 350 --out artifacts/probe/views_train
  python scripts/compare_probe_features.py collect --pairs artifacts/reader/eval_squad200.jsonl --out artifacts/probe/views_squad200
  python scripts/compare_probe_features.py compare --train artifacts/probe/views_train \
      --eval squad200=artifacts/probe/views_squad200 --out benchmarks/probe/features.json
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

os.environ.setdefault("ONEDNN_PRIMITIVE_CACHE_CAPACITY", "16")  # flat memory over many prompt shapes (oneDNN's per-shape cache)

import numpy as np

from agentic_rag.errors import UserError
from agentic_rag.telemetry import read_rows

ROOT = Path(__file__).resolve().parents[1]


def _rows(paths: list[Path], per_source: dict[str, int], seed: int) -> list[dict]:
    rows: list[dict] = []
    for path in paths:
        if not path.is_file():
            raise SystemExit(f"{path}: no such pairs file (`agentic-rag train pairs` pairs writes one)")
        rows += list(read_rows(path))
    if not rows:
        raise SystemExit("the pairs files hold no rows")
    if not per_source:
        return rows
    rng = np.random.default_rng(seed)
    picked = []
    for src in sorted({r["source"] for r in rows}):
        mine = [r for r in rows if r["source"] == src]
        n = per_source.get(src, per_source.get("*", len(mine)))
        picked += [mine[i] for i in sorted(rng.choice(len(mine), min(n, len(mine)), replace=False))]
    return picked


def collect(args: argparse.Namespace) -> int:
    from agentic_rag.configuration import Settings
    from agentic_rag.llm.factory import get_chat_model
    from agentic_rag.training.views import collect_views, done_ids

    per_source = {}
    for spec in args.per_source_of:
        name, _, n = spec.partition("=")
        if not n.isdigit():
            raise SystemExit(f"--per-source-of {spec!r}: write SOURCE=N, e.g. squad2=350")
        per_source[name] = int(n)
    if args.per_source:
        per_source.setdefault("*", args.per_source)
    rows = _rows(args.pairs, per_source, args.seed)
    done = done_ids(args.out) if args.out.is_dir() else set()
    print(f"{len(rows)} pairs, {sum(r['id'] in done for r in rows)} already read -> {args.out}")
    settings = Settings.load(preset=args.preset, overrides=["PROBE_ENABLED=false"])
    collect_views(get_chat_model(settings), rows, args.out, args.chunk, progress=True)
    return 0


def compare(args: argparse.Namespace) -> int:
    from agentic_rag.training.views import load_views, named_views
    from studies.feature_report import compare_views, features_table

    evals = named_views(args.eval)
    report = compare_views(load_views(args.train), evals, args.layer, args.c, args.curve,
                           progress=lambda name, row: print(name, json.dumps(row)))
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(report, indent=2) + "\n")
    args.out.with_suffix(".md").write_text(features_table(report, list(evals)))
    print(f"-> {args.out}")
    return 0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    c = sub.add_parser("collect")
    c.add_argument("--pairs", type=Path, nargs="+", required=True)
    c.add_argument("--per-source", type=int, default=0, help="draw at most this many pairs of each source (0: all)")
    c.add_argument("--per-source-of", nargs="*", default=[], help="SOURCE=N overrides of --per-source")
    c.add_argument("--seed", type=int, default=0)
    c.add_argument("--chunk", type=int, default=25, help="rows per saved chunk (what a stopped run can lose)")
    c.add_argument("--preset", default="default")
    c.add_argument("--out", type=Path, required=True)
    m = sub.add_parser("compare")
    m.add_argument("--train", type=Path, required=True)
    m.add_argument("--eval", nargs="*", default=[], help="NAME=FOLDER of collected evaluation views")
    m.add_argument("--layer", type=int, default=18, help="the shipped probe's layer, around which sets are built")
    m.add_argument("--c", type=float, nargs="+", default=[0.0003, 0.001, 0.003, 0.01],
                   help="inverse L2 strengths tried; each set keeps the one with the best CV AUC")
    m.add_argument("--curve", action="store_true", help="also a learning curve per feature set")
    m.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "probe" / "features.json")
    args = ap.parse_args()
    try:
        return {"collect": collect, "compare": compare}[args.cmd](args)
    except (UserError, FileNotFoundError, ValueError) as exc:
        raise SystemExit(str(exc)) from None


if __name__ == "__main__":
    sys.exit(main())
