"""Train the answerability probe on the generator's own hidden states.

Two steps, both resumable from their output files, and a read-only third:

  collect  run the agent (scripted model, so only retrieval and packing run) on training questions,
           capture the exact generator prompt, and store the last prompt token's hidden state at every
           layer of the real packaged model, with the label (1 = the context answers).
  fit      pick the layer by article-grouped cross-validation and fit a logistic regression on it;
           write the probe file and a report (per-layer AUC, out-of-fold refusal/false-refusal table).
  score    apply a fitted probe to an evaluation file's agent prompts (AUC, rates at fixed thresholds).

Training questions are disjoint from every evaluated question:
  - SQuAD 2.0: questions of ../shared/data/squad2 that are in neither the test sample nor the dev split
    (data/squad200.jsonl, data/squad_dev100.jsonl from scripts/make_squad_splits.py);
  - NQ-open (all answerable, one gold passage): an "answerable" record is the gold passage plus its
    4 nearest other passages (BM25), a "negative" record is 5 near passages none of which contains an
    answer string: RGB-style negative rejection without touching RGB, which is only evaluated.
  - ``--removed`` adds, for every answerable record, its twin with each answer-stating sentence cut
    (same topic, no answer). Measured on 1,041 original rows plus 319 twins, not shipped: with them
    the SQuAD rows' CV AUC fell (0.683 -> 0.665), NQ's rose (0.786 -> 0.811), and the probe's AUC on
    RGB40 stayed 0.55.
  - ``--snippets`` shows the NQ records as web-search snippets (about 40 words each, ``as_snippets``),
    the form CRAG and RGB give. Measured with the 1.5B on 1,574 rows plus 396 snippet rows, not
    shipped: CV AUC 0.830 -> 0.846 (snippet rows 0.902, SQuAD 0.816 -> 0.807); on the NQ snippet dev
    split (``make_nq_dev.py --snippets``) AUC 0.888 -> 0.892, and the shipped probe already refuses
    88% of its negatives there; on dev350 at the preset's thresholds false refusal 0.149 -> 0.154,
    over the cap. RGB's negatives are not hard because of their form.

Usage:
  python scripts/train_probe.py collect --squad 600 --nq 400 --out artifacts/probe/train.npz
  python scripts/train_probe.py fit --data artifacts/probe/train.npz --out agentic_rag/data/probes/...json
  python scripts/train_probe.py score --data data/squad200.jsonl --out benchmarks/probe/score_squad200.json

The optional 1.5B generator's probe (benchmarks/probe/qwen2.5-coder-1.5b/) is the same three steps
with ``--preset default`` (or ``--model DIR`` for any local folder) and
``fit --data artifacts/probe/train15.npz --out agentic_rag/data/probes/answerability-qwen2.5-coder-1.5b.json
--report benchmarks/probe/qwen2.5-coder-1.5b/training.json``. The shipped one holds 1,574 prompts: the
1,170 of the earlier draws plus ``collect --preset default --squad 300 --nq 150 --seed 4`` resumed into
the same file, fitted with ``--layers 18 --c 0.003`` (the layer the generation calls already return, so
the cached generations replay unchanged).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

# One forward pass per prompt, each of a new length: oneDNN caches primitives per shape and the
# process grew ~10 MB per prompt (17 GB over 1,000 prompts). A small cache keeps it flat (measured
# 2.05 -> 2.15 GB over 40 prompts vs 2.22 -> 2.60 GB); it must be set before torch starts.
os.environ.setdefault("ONEDNN_PRIMITIVE_CACHE_CAPACITY", "16")

import numpy as np

from agentic_rag.configuration import Settings
from agentic_rag.datasets.crag import IDK, CragRecord, iter_records
from agentic_rag.datasets.probe_sets import (
    answer_removed,
    as_snippets,
    base_id,
    group_of,
    nq_records,
    source_of,
    squad_records,
)
from agentic_rag.eval.plots import pyplot
from agentic_rag.eval.probe_report import (
    auc_by_source,
    learning_curve,
    refusal_rates,
    required_auc,
    source_pairs,
)
from agentic_rag.llm.packaged import FAST_MODEL
from agentic_rag.reader.probe import PACKAGED_PROBE
from agentic_rag.reader.probe_training import auc, fit_probe
from agentic_rag.eval.answer_prompts import generator_prompt as recorded_prompt

ROOT = Path(__file__).resolve().parents[1]
SHARED = ROOT.parent / "shared" / "data"
SQUAD = SHARED / "squad2" / "squad2_dev_half.jsonl"  # the training draws; the evaluated splits are excluded
NQ = SHARED / "nq" / "nq_open_oracle.jsonl"


def generator_prompt(record: CragRecord, settings: Settings):
    import graphs  # noqa: F401  (registers the agent graph with agentic_rag.runner)

    return recorded_prompt(record, settings)


def states_model(args: argparse.Namespace) -> tuple[Settings, object, str]:
    """Settings for the agent run, the model whose states are read, and that model's key.

    --model reads the states of another local model on the same prompts (e.g. the 1.5B sibling);
    the prompts are always the agent's, built with the configured tokenizer and budgets."""
    from agentic_rag.llm.factory import get_chat_model
    from agentic_rag.llm.local import ChatLocalTransformers
    from agentic_rag.llm.packaged import converted_source_key

    settings = Settings.load(preset=args.preset, overrides=args.override + ["PROBE_ENABLED=false"])
    model = ChatLocalTransformers(model_path=str(args.model)) if args.model else get_chat_model(settings)
    return settings, model, converted_source_key(Path(model.model_path)) or Path(model.model_path).name


def _shown(path: Path) -> str:
    """A path as the report shows it: relative to the repo when inside it (reports are committed)."""
    path = Path(path).resolve()
    return str(path.relative_to(ROOT)) if path.is_relative_to(ROOT) else str(path)


def collect(args: argparse.Namespace) -> int:
    from tqdm import tqdm

    tmp = args.out.parent
    tmp.mkdir(parents=True, exist_ok=True)
    try:
        records = squad_records(SQUAD, args.squad, args.exclude, args.seed, tmp) if args.squad else []
    except FileNotFoundError as exc:
        raise SystemExit(str(exc)) from None
    held_out = frozenset(base_id(r.interaction_id) for f in args.exclude for r in iter_records(f))
    records += nq_records(NQ, args.nq, args.seed, tmp, exclude=held_out) if args.nq else []
    if args.removed:
        twins = [t for r in records if r.answer != IDK and (t := answer_removed(r)) is not None]
        print(f"{len(twins)} answer-removed negatives from {sum(r.answer != IDK for r in records)} answerable records")
        records += twins
    if args.snippets:
        records = [as_snippets(r) if r.interaction_id.startswith("nq") else r for r in records]
    settings, model, model_key = states_model(args)
    done: dict[str, dict] = {}
    if args.out.exists():  # resume
        old = np.load(args.out, allow_pickle=False)
        if "model_key" in old and str(old["model_key"]) != model_key:
            raise SystemExit(f"{args.out} holds states of another model; choose another --out")
        # an NpzFile decompresses the whole array on every old["X"]: read each array once
        X, y, groups = old["X"], old["y"], old["groups"]
        for i, rid in enumerate(old["ids"]):
            done[str(rid)] = {"X": X[i], "y": int(y[i]), "group": str(groups[i])}
    bar = tqdm(records, desc="probe states", unit="q")
    for n, record in enumerate(bar):
        if record.interaction_id in done:
            continue
        prompt = generator_prompt(record, settings)
        if prompt is None:  # refused before generation: the probe never sees these
            continue
        states = model.prompt_states(prompt).numpy().astype(np.float16)
        done[record.interaction_id] = {"X": states, "y": int(record.answer != IDK), "group": group_of(record)}
        if n % 50 == 49:
            _save(args.out, done, model_key)
    _save(args.out, done, model_key)
    print(f"{len(done)} prompts with states -> {args.out}")
    return 0


def score(args: argparse.Namespace) -> int:
    """A fitted probe on an evaluation file's agent prompts, read by the probe's own model: AUC and
    refusal / false-refusal rates at fixed thresholds. Nothing is fitted or chosen here, so it may run
    on a test split (e.g. to compare two models' states on the very prompts the benchmarks use)."""
    from tqdm import tqdm

    from agentic_rag.datasets.crag import iter_records
    from agentic_rag.llm.local import hidden_size_of
    from agentic_rag.reader.probe import load_probe, packaged_probe_for

    settings, model, model_key = states_model(args)
    probe_path = args.probe or packaged_probe_for(model.model_path)
    probe = load_probe(probe_path)
    probe.check_model(model_key, hidden_size_of(model))
    y, p, before, by_id = [], [], 0, {}
    for record in tqdm(list(iter_records(args.data)), desc="probe scores", unit="q"):
        prompt = generator_prompt(record, settings)
        if prompt is None:
            before += 1
            continue
        y.append(int(record.answer != IDK))
        p.append(probe.score(model.prompt_states(prompt)[probe.layer].tolist()))
        by_id[record.interaction_id] = round(p[-1], 5)
    if args.per_question:  # what scripts/train_reader.py score pairs with the cross-encoder's reading
        args.per_question.parent.mkdir(parents=True, exist_ok=True)
        args.per_question.write_text(json.dumps(by_id, indent=0) + "\n")
    y_arr, p_arr = np.array(y), np.array(p)
    value = auc(y_arr, p_arr)
    report = {
        "data": str(args.data), "states_of": Path(model.model_path).name, "probe": _shown(probe_path), "layer": probe.layer,
        "scored": len(y), "refused_before_generation": before,
        "auc": None if np.isnan(value) else round(float(value), 4),
        "at_threshold": [{"threshold": t, **refusal_rates(p_arr, y_arr, t)} for t in (0.3, 0.4, 0.5)],
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(report, indent=2) + "\n")
    print(json.dumps(report, indent=1))
    return 0


def _save(path: Path, done: dict[str, dict], model_key: str) -> None:
    ids = list(done)
    np.savez(path, X=np.stack([done[i]["X"] for i in ids]), y=np.array([done[i]["y"] for i in ids]),
             ids=np.array(ids), groups=np.array([done[i]["group"] for i in ids]), model_key=np.array(model_key))


def fit(args: argparse.Namespace) -> int:
    data = np.load(args.data, allow_pickle=False)
    X, y, groups = data["X"], data["y"], [str(g) for g in data["groups"]]
    model_key = str(data["model_key"]) if "model_key" in data else FAST_MODEL.sha256
    layers = [int(x) for x in args.layers.split(",")] if args.layers else None
    sources = np.array([source_of(str(i), g) for i, g in zip(data["ids"], groups)])
    counts = {str(s): int((sources == s).sum()) for s in sorted(set(sources))}
    probe, report = fit_probe(X, y, groups, model_key, layers=layers, c=args.c,
                              meta={"trained_by": "scripts/train_probe.py", "rows_by_source": counts})
    probe.save(args.out)
    oof = np.array(report.pop("oof_scores"))
    table = []
    for t in (0.3, 0.4, 0.5, 0.6, 0.7):
        row = {"threshold": t}
        for src in sorted(set(sources)):
            m = sources == src
            row.update({f"{src}_{k}": v for k, v in refusal_rates(oof[m], y[m], t).items() if v is not None})
        table.append(row)
    report.update(n=int(len(y)), answerable=int(y.sum()), by_source=counts, auc_by_source=auc_by_source(oof, y, sources),
                  out_of_fold=table, probe=str(args.out),
                  learning_curve=learning_curve(X[:, probe.layer, :].astype(np.float64), y, groups, args.c),
                  auc_needed_for_targets=required_auc(refusal=0.70, false_refusal=0.15))
    args.report.parent.mkdir(parents=True, exist_ok=True)
    args.report.write_text(json.dumps(report, indent=2) + "\n")
    roc_plot(oof, y, sources, args.report.with_name("roc.png"), report["layer_auc"][report["chosen_layer"]])
    print(json.dumps({k: v for k, v in report.items() if k != "layer_auc"}, indent=1))
    print("layer AUC:", report["layer_auc"])
    return 0


def roc_plot(oof: np.ndarray, y: np.ndarray, sources: np.ndarray, path: Path, auc: float) -> Path:
    """Out-of-fold ROC per source, with the issue's operating point (refuse >= 70% of unanswerable
    questions at <= 15% false refusals) marked: a curve that passes below it cannot meet the targets."""
    from sklearn.metrics import roc_curve

    plt = pyplot()
    fig, ax = plt.subplots(figsize=(5, 5))
    for src, m in source_pairs(y, sources).items():
        # "refuse" is the positive class and a lower P(answerable) refuses first:
        # x = answerable refused (false refusal), y = unanswerable refused
        fr, rr, _ = roc_curve(y[m] == 0, -oof[m])
        ax.plot(fr, rr, label=f"{src} (n={int(m.sum())})")
    ax.plot([0, 1], [0, 1], ls=":", c="grey")
    ax.scatter([0.15], [0.70], marker="*", s=160, c="crimson", zorder=3, label="target (15% FR, 70% refusal)")
    ax.set_xlabel("false refusal (answerable refused)")
    ax.set_ylabel("refusal of unanswerable")
    ax.set_title(f"answerability probe, out-of-fold (AUC {auc:.3f})")
    ax.legend(loc="lower right", fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    c = sub.add_parser("collect")
    c.add_argument("--squad", type=int, default=600)
    c.add_argument("--nq", type=int, default=400)
    c.add_argument("--seed", type=int, default=2)
    c.add_argument("--exclude", type=Path, nargs="*",
                   default=[ROOT / "data" / f for f in ("squad200.jsonl", "squad_dev250.jsonl", "nq_dev100.jsonl")],
                   help="evaluation files whose questions training never draws (SQuAD by id, NQ by question)")
    c.add_argument("--out", type=Path, default=ROOT / "artifacts" / "probe" / "train.npz")
    c.add_argument("--removed", action="store_true",
                   help="add each answerable record's answer-removed twin as a negative (same topic, answer cut)")
    c.add_argument("--snippets", action="store_true",
                   help="show the NQ records as web-search snippets (about 40 words around the answer or the question's words)")
    c.add_argument("--model", type=Path, default=None, help="a local HF folder whose states to read (default: the configured model)")
    c.add_argument("--preset", default=None)
    c.add_argument("--override", nargs="*", default=[])
    f = sub.add_parser("fit")
    f.add_argument("--data", type=Path, default=ROOT / "artifacts" / "probe" / "train.npz")
    f.add_argument("--layers", default="", help="comma-separated layer indices to consider (default: all)")
    f.add_argument("--c", type=float, default=0.003, help="inverse L2 strength of the logistic regression")
    f.add_argument("--out", type=Path, default=PACKAGED_PROBE)
    f.add_argument("--report", type=Path, default=ROOT / "benchmarks" / "probe" / "training.json")
    sc = sub.add_parser("score")
    sc.add_argument("--data", type=Path, required=True, help="an evaluation file in CRAG format (e.g. data/squad200.jsonl)")
    sc.add_argument("--probe", type=Path, default=None, help="default: the shipped probe of the configured model")
    sc.add_argument("--model", type=Path, default=None, help="the local HF folder the probe was fitted on (default: the configured model)")
    sc.add_argument("--out", type=Path, required=True)
    sc.add_argument("--per-question", type=Path, default=None, help="also write {question id: P(answerable)} here")
    sc.add_argument("--preset", default=None)
    sc.add_argument("--override", nargs="*", default=[])
    args = ap.parse_args()
    return {"collect": collect, "fit": fit, "score": score}[args.cmd](args)


if __name__ == "__main__":
    sys.exit(main())
