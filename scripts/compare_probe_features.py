"""Compare what the answerability probe reads: one layer's last token vs several layers, the evidence
and question tokens pooled, together; by grouped cross-validated AUC and on the test splits.

Two steps:

  collect  read a generator's prefill views (reader/features.py) for reader pairs files (the
           question and the sources exactly as the answer prompt shows them; scripts/train_reader.py
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

os.environ.setdefault("ONEDNN_PRIMITIVE_CACHE_CAPACITY", "16")  # see train_probe.py: flat memory over many shapes

import numpy as np

from agentic_rag.errors import UserError
from agentic_rag.telemetry import read_rows

ROOT = Path(__file__).resolve().parents[1]
def _rows(paths: list[Path], per_source: dict[str, int], seed: int) -> list[dict]:
    rows: list[dict] = []
    for path in paths:
        if not path.is_file():
            raise SystemExit(f"{path}: no such pairs file (scripts/train_reader.py pairs writes one)")
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
    from tqdm import tqdm

    from agentic_rag.configuration import Settings
    from agentic_rag.llm.factory import get_chat_model
    from agentic_rag.reader.features import collect_views, done_ids

    per_source = {}
    for spec in args.per_source_of:
        name, _, n = spec.partition("=")
        if not n.isdigit():
            raise SystemExit(f"--per-source-of {spec!r}: write SOURCE=N, e.g. squad2=350")
        per_source[name] = int(n)
    if args.per_source:
        per_source.setdefault("*", args.per_source)
    rows = _rows(args.pairs, per_source, args.seed)
    done = done_ids(args.out)
    todo = [r for r in rows if r["id"] not in done]
    print(f"{len(rows)} pairs, {len(done)} already read, {len(todo)} to read -> {args.out}")
    settings = Settings.load(preset=args.preset, overrides=["PROBE_ENABLED=false"])
    collect_views(get_chat_model(settings), todo, args.out, args.chunk,
                  progress=lambda rows: tqdm(rows, desc="prefill views", unit="q"))
    return 0


def _family(source: str) -> str:
    """The source a row is scored within: a multi-hop question and its twin with a page removed are
    one source, as an NQ record and its answer-removed twin are (probe_report.source_pairs)."""
    return source.split("_")[0] if source.startswith("hotpotqa_") else source


def compare(args: argparse.Namespace) -> int:
    from agentic_rag.eval.probe_report import (
        auc_by_source,
        auc_difference,
        learning_curve,
    )
    from agentic_rag.reader.cross_encoder import join_readings
    from agentic_rag.reader.features import ensembles, feature_sets, load_views
    from agentic_rag.reader.probe_training import _fit, auc, cross_validated_scores

    train = load_views(args.train)
    evals = {}
    for spec in args.eval:
        name, _, folder = spec.partition("=")
        if not folder:
            raise SystemExit(f"--eval {spec!r}: write NAME=FOLDER")
        evals[name] = load_views(Path(folder))
    n_layers = train["last"].shape[1] - 1
    y, groups = train["y"], [str(g) for g in train["groups"]]
    report = {"train": {"rows": len(y), "answerable": int(y.sum()),
                        "by_source": {str(s): int((train["sources"] == s).sum()) for s in sorted(set(train["sources"]))},
                        "prefill_ms_median": float(np.median(train["ms"]))},
              "c_grid": args.c, "feature_sets": {}}
    sources = np.array([_family(s) for s in train["sources"]])
    scores: dict[str, dict[str, np.ndarray]] = {}  # per set: out-of-fold and per-split P(answerable)
    for name, make in feature_sets(args.layer, n_layers).items():
        if "draft" in name:  # the draft view needs a decoded draft per training prompt; collect does not decode
            report.setdefault("not_compared", []).append(name)
            continue
        X = make(train).astype(np.float64)
        by_c = {c: cross_validated_scores(X, y, groups, c) for c in args.c}
        c = max(by_c, key=lambda k: auc(y, by_c[k]))  # the regularisation chosen on the training rows alone
        row = {"features": int(X.shape[1]), "cv_auc_by_c": {str(k): round(auc(y, v), 4) for k, v in by_c.items()},
               "c": c, "cv_auc": round(auc(y, by_c[c]), 4), "cv_auc_by_source": auc_by_source(by_c[c], y, sources)}
        if args.curve:
            row["learning_curve"] = learning_curve(X, y, groups, c, fractions=(0.25, 0.5, 1.0), draws=2)
        model = _fit(X, y, c)
        scores[name] = {"cv": by_c[c]}
        for split, views in evals.items():
            scores[name][split] = p = model.predict_proba(make(views).astype(np.float64))[:, 1]
            row[f"auc_{split}"] = round(auc(views["y"], p), 4)
        report["feature_sets"][name] = row
        print(name, json.dumps(row))
    for name, members in ensembles(args.layer).items():
        joined = {k: np.array([join_readings(*(float(scores[m][k][i]) for m in members)) for i in range(len(scores[members[0]][k]))])
                  for k in scores[members[0]]}
        scores[name] = joined
        row = {"features": sum(report["feature_sets"][m]["features"] for m in members), "c": "per member",
               "cv_auc": round(auc(y, joined["cv"]), 4), "cv_auc_by_source": auc_by_source(joined["cv"], y, sources),
               **{f"auc_{split}": round(auc(evals[split]["y"], joined[split]), 4) for split in evals}}
        report["feature_sets"][name] = row
        print(name, json.dumps(row))
    base = next(iter(scores))  # the shipped probe's view: every other set is measured against it
    for name, row in report["feature_sets"].items():
        if name != base:
            row["vs_base"] = {split: auc_difference(evals[split]["y"], scores[base][split], scores[name][split])
                              for split in evals}
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(report, indent=2) + "\n")
    args.out.with_suffix(".md").write_text(table(report, list(evals)))
    print(f"-> {args.out}")
    return 0


def table(report: dict, splits: list[str]) -> str:
    head = ["feature set", "features", "C", "CV AUC (train rows)", "CV AUC by source", "learning curve (25 / 50 / 100%)"] + [
        f"AUC {s} (vs {next(iter(report['feature_sets']))})" for s in splits]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for name, row in report["feature_sets"].items():
        by_source = ", ".join(f"{k} {v:.3f}" for k, v in row["cv_auc_by_source"].items())
        curve = " / ".join(f"{v:.3f}" for v in row["learning_curve"].values()) if row.get("learning_curve") else "-"
        cells = [name, str(row["features"]), str(row["c"]), f"{row['cv_auc']:.3f}", by_source, curve]
        for s in splits:
            d = row.get("vs_base", {}).get(s)
            cells.append(f"{row[f'auc_{s}']:.3f}" + (f" ({d['diff']:+.3f}, {d['ci95_low']:+.3f} to {d['ci95_high']:+.3f})" if d else ""))
        lines.append("| " + " | ".join(cells) + " |")
    t = report["train"]
    return (f"Answerability probe by feature set: fitted on {t['rows']} training prompts "
            f"({t['answerable']} answerable; {', '.join(f'{k} {v}' for k, v in t['by_source'].items())}), "
            "the logistic regression's C chosen per set by article-grouped CV on those rows; one prefill reads every set "
            f"(median {t['prefill_ms_median']:.0f} ms per prompt here). On each test split, the AUC difference to the "
            "first set with its paired 95% bootstrap interval."
            + (f" Not compared: {', '.join(report['not_compared'])} (the state after the draft needs the draft decoded for "
               "every training prompt, several seconds more per prompt on this CPU)." if report.get("not_compared") else "")
            + "\n\n" + "\n".join(lines) + "\n")


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
    except (UserError, FileNotFoundError) as exc:
        raise SystemExit(str(exc)) from None


if __name__ == "__main__":
    sys.exit(main())
