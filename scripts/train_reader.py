"""Train the cross-encoder answerability reader (agentic_rag/reader/cross_encoder.py) from the packaged MiniLM.

Steps, each a thin caller of the package:

  pairs  run the agent (a recording model, so only retrieval and packing run) on questions and keep, per
         question, the sources its answer prompt shows and the label (1 = they answer it). Resumable:
         rows already in --out are kept and skipped. The training draws are the probe's
         (training/sets.probe_training_records: SQuAD 2.0, NQ near misses, HotpotQA's dev half with
         a twin per supporting page removed), never an evaluated question or a dev pool's;
         ``--data FILE`` instead turns any evaluation file into pairs, for ``score``.
  fit    grouped cross-validated AUC per configuration and source, a learning curve, then the reader
         fitted on every row: its file and a report. Runs on a GPU with ``--device cuda``.
  score  a fitted reader (and, with --probe-scores, the probe and the two together) on an evaluation
         file's pairs: AUC and refusal / false-refusal at fixed thresholds. Nothing is chosen here.

Usage:
  python scripts/train_reader.py pairs --out artifacts/reader/pairs.jsonl
  python scripts/train_reader.py pairs --data data/squad200.jsonl --out artifacts/reader/squad200.jsonl
  python scripts/train_reader.py fit --pairs artifacts/reader/pairs.jsonl --device cuda
  python scripts/train_reader.py score --pairs artifacts/reader/squad200.jsonl --out benchmarks/reader_cross/score_squad200.json
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

from agentic_rag.errors import UserError
from agentic_rag.telemetry import read_rows

ROOT = Path(__file__).resolve().parents[1]
SHARED = ROOT.parent / "shared" / "data"
PAIRS = ROOT / "artifacts" / "reader" / "pairs.jsonl"
REPORT = ROOT / "benchmarks" / "reader_cross" / "training.json"


def pairs(args: argparse.Namespace) -> int:
    import graphs  # noqa: F401  (registers the agent graph with agentic_rag.runner)
    from agentic_rag.configuration import Settings
    from agentic_rag.datasets.crag import iter_records
    from agentic_rag.training.prompts import write_pairs
    from agentic_rag.training.sets import training_draws

    with tempfile.TemporaryDirectory() as tmp:
        try:
            records = list(iter_records(args.data)) if args.data else training_draws(args, SHARED, Path(tmp))
        except FileNotFoundError as exc:
            raise SystemExit(str(exc)) from None
    if not records:
        raise SystemExit(f"error: no questions in {args.data or 'the training draws'}: is it a dataset in CRAG's format?")
    n, skipped = write_pairs(records, Settings.load(preset=args.preset), args.out, args.data.stem if args.data else None)
    print(f"{n} pairs in {args.out} ({skipped} refused before generation)")
    return 0


def fit(args: argparse.Namespace) -> int:
    import numpy as np

    from agentic_rag.reader.cross_encoder import base_sha256, save_reader
    from agentic_rag.training.cross_encoder import auc_by_source, cross_validated, fine_tune

    rows = read_rows(args.pairs)
    if not rows:
        raise SystemExit(f"no pairs in {args.pairs}: run the pairs step first")
    base = str(args.base_dir or _packaged_base())
    args.report.parent.mkdir(parents=True, exist_ok=True)
    fixed = dict(epochs=args.epochs, lr=args.lr, batch_size=args.batch_size, device=args.device)
    report: dict = {"pairs": len(rows), "answerable": sum(r["label"] for r in rows),
                    "by_source": {s: sum(r["source"] == s for r in rows) for s in sorted({r["source"] for r in rows})},
                    "settings": fixed, "configurations": {}, "learning_curve": {}}
    for top in args.compare_top:
        start = time.perf_counter()
        oof = cross_validated(rows, base, top_layers=top, **fixed)
        report["configurations"][f"top {top} layers"] = {"auc": auc_by_source(rows, oof), "s": round(time.perf_counter() - start, 1)}
        print(f"top {top} layers: {report['configurations'][f'top {top} layers']}", flush=True)
        args.report.write_text(json.dumps(report, indent=2) + "\n")  # what is done survives a stop
        if top == args.top_layers:
            np.save(args.report.with_name("oof.npy"), oof)
    for fraction in args.curve:
        oof = cross_validated(rows, base, train_fraction=fraction, top_layers=args.top_layers, **fixed)
        report["learning_curve"][str(fraction)] = auc_by_source(rows, oof)["all"]
        print(f"fraction {fraction}: {report['learning_curve'][str(fraction)]}", flush=True)
        args.report.write_text(json.dumps(report, indent=2) + "\n")
    model, _, names = fine_tune(rows, base, top_layers=args.top_layers, progress=True, **fixed)
    meta = {"base_sha256": args.base_key or base_sha256(base), "top_layers": args.top_layers, "trained_by": "scripts/train_reader.py",
            "rows_by_source": report["by_source"], **fixed,
            "cv_auc": report["configurations"].get(f"top {args.top_layers} layers", {}).get("auc", {}).get("all")}
    save_reader(args.out, model, names, meta)
    report["reader"] = meta
    args.report.write_text(json.dumps(report, indent=2) + "\n")
    print(json.dumps(report, indent=1))
    return 0


def score(args: argparse.Namespace) -> int:
    import numpy as np

    from agentic_rag.eval.metrics import auc
    from agentic_rag.reader.cross_encoder import join_readings, load_cross_reader
    from agentic_rag.training.probe_report import refusal_rates

    rows = read_rows(args.pairs)
    if not rows:
        raise SystemExit(f"error: no pairs in {args.pairs}: run the pairs step with --data first")
    try:
        probe = json.loads(args.probe_scores.read_text()) if args.probe_scores else None
    except json.JSONDecodeError as exc:
        raise SystemExit(f"error: {args.probe_scores} is not a JSON object of probe scores: {exc}") from None
    if probe is not None:  # the questions both readers read (each skips those refused before generation)
        rows = [r for r in rows if r["id"] in probe]
    reader = load_cross_reader(args.reader)
    start = time.perf_counter()
    cross = np.array([reader.score(r["question"], r["sources"]) for r in rows])
    ms = (time.perf_counter() - start) * 1000 / max(len(rows), 1)
    y = np.array([r["label"] for r in rows])
    readers = {"cross-encoder": cross}
    if probe is not None:
        p = np.array([probe[r["id"]] for r in rows])
        readers["probe"] = p
        readers["both (mean logit)"] = np.array([join_readings(a, b) for a, b in zip(p, cross)])
    report = {"pairs": _shown(args.pairs), "n": len(rows), "answerable": int(y.sum()), "cross_ms_per_question": round(ms, 1),
              "readers": {name: {"auc": round(auc(y, s), 4),
                                 "at_threshold": [{"threshold": t, **refusal_rates(s, y, t)} for t in (0.3, 0.5, 0.7)]}
                          for name, s in readers.items()}}
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(report, indent=2) + "\n")
    print(json.dumps(report, indent=1))
    return 0


def _packaged_base() -> Path:
    from agentic_rag.retrieval.embeddings import packaged_embedding_path

    return packaged_embedding_path()


def _shown(path: Path) -> str:
    path = Path(path).resolve()
    return str(path.relative_to(ROOT)) if path.is_relative_to(ROOT) else str(path)


def main() -> int:
    from agentic_rag.reader.cross_encoder import PACKAGED_CROSS_READER
    from agentic_rag.training.sets import add_draw_arguments

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    p = sub.add_parser("pairs")
    add_draw_arguments(p)
    p.add_argument("--data", type=Path, default=None, help="an evaluation file in CRAG format instead of the training draws")
    p.add_argument("--preset", default=None)
    p.add_argument("--out", type=Path, default=PAIRS)
    f = sub.add_parser("fit")
    f.add_argument("--pairs", type=Path, default=PAIRS)
    f.add_argument("--base-dir", type=Path, default=None, help="the MiniLM folder (default: the packaged one)")
    f.add_argument("--base-key", default=None, help="the SHA-256 the reader file records (default: of --base-dir's weights)")
    f.add_argument("--top-layers", type=int, default=2, help="encoder layers fine-tuned (the rest stay the packaged MiniLM's)")
    f.add_argument("--compare-top", type=int, nargs="*", default=[2], help="configurations to cross-validate")
    f.add_argument("--curve", type=float, nargs="*", default=[0.25, 0.5], help="training-row fractions of the learning curve")
    f.add_argument("--epochs", type=int, default=3)
    f.add_argument("--lr", type=float, default=5e-5)
    f.add_argument("--batch-size", type=int, default=16)
    f.add_argument("--device", default="cpu")
    f.add_argument("--out", type=Path, default=PACKAGED_CROSS_READER)
    f.add_argument("--report", type=Path, default=REPORT)
    s = sub.add_parser("score")
    s.add_argument("--pairs", type=Path, required=True)
    s.add_argument("--reader", type=Path, default=None, help="default: the shipped reader")
    s.add_argument("--probe-scores", type=Path, default=None, help="JSON {id: P(answerable)} of the probe on the same rows")
    s.add_argument("--out", type=Path, required=True)
    args = ap.parse_args()
    try:
        return {"pairs": pairs, "fit": fit, "score": score}[args.cmd](args)
    except (UserError, OSError, json.JSONDecodeError) as exc:  # a bad file or reader: one line, no traceback
        raise SystemExit(f"error: {exc}") from None


if __name__ == "__main__":
    sys.exit(main())
