"""Train the answerability probe on the generator's own hidden states.

Steps, each resumable from what it wrote, each a thin caller of the package:

  views    the training set as one job: the reader pairs of the training draws (training/sets.
           probe_training_records: SQuAD 2.0, NQ near misses with their snippet views and answer-removed
           twins, HotpotQA's dev half with a twin per supporting page removed; never an evaluated question
           or a dev pool's), then per pair one prefill of the configured model, stopped after the layers
           kept, saving the probe's views (training/views.collect_views). Multi-hop rows first; a kill
           loses at most one chunk. ``--data NAME`` does the same for a test split (squad200, hotpot_test ...).
  fit      pick the layer by article-grouped cross-validation and fit a logistic regression on it, from a
           views folder (or an older ``collect`` states file); write the probe file and a report.
  curve    the learning curve to the full size on the test splits' views, with a paired interval per step,
           against the shipped probe: benchmarks/probe/learning_curve.{json,md,png}.
  routes   one reader against a reader per hop plan (studies/probe_routes): benchmarks/probe/routes.{json,md}.
  score    apply a fitted probe to an evaluation file's agent prompts (AUC, rates at fixed thresholds).
  collect  the older job: every layer's last-token state of the agent's prompts for SQuAD and NQ draws.

Usage:
  python scripts/train_probe.py views --out artifacts/probe/views_train
  python scripts/train_probe.py views --data hotpot_test --out artifacts/probe/views_hotpot_test
  python scripts/train_probe.py fit --data artifacts/probe/views_train --layers 18 \\
      --out agentic_rag/data/probes/answerability-qwen2.5-coder-1.5b.json --report benchmarks/probe/qwen2.5-coder-1.5b/training.json
  python scripts/train_probe.py curve --eval squad200=artifacts/probe/views_squad200 hotpot_test=... rgb40=...

What earlier training sets were and measured: benchmarks/probe/history.md.
"""

from __future__ import annotations

import argparse
import itertools
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
from agentic_rag.errors import UserError
from agentic_rag.eval.metrics import auc
from agentic_rag.llm.packaged import DEFAULT_MODEL, FAST_MODEL
from agentic_rag.reader.probe import PROBES_DIR, packaged_probe_for_key
from agentic_rag.training.fitting import VIEW_C, fit_probe
from agentic_rag.training.probe_report import auc_by_source, learning_curve, refusal_rates, refusal_table, required_auc, roc_plot
from agentic_rag.training.prompts import generator_prompt as recorded_prompt
from agentic_rag.training.sets import (
    add_draw_arguments,
    answer_removed,
    as_snippets,
    base_id,
    group_of,
    nq_records,
    source_of,
    squad_records,
)

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


def views(args: argparse.Namespace) -> int:
    """The training set as one resumable job: per record of the training draws (or of ``--data``), its reader
    pair (built as it is reached, or read from ``--pairs``), then the views the probe reads from one prefill
    of the configured model, multi-hop rows first. Rows already in ``--out`` are skipped, so the job goes on
    where it stopped, in this session or the next (its chunks are small enough to commit)."""
    import tempfile

    import graphs  # noqa: F401  (registers the agent graph with agentic_rag.runner)
    from agentic_rag.datasets.prepare.benchmarks import BENCHMARK_DATASETS, benchmark_dataset
    from agentic_rag.llm.factory import get_chat_model
    from agentic_rag.telemetry import append_line, read_rows
    from agentic_rag.training.prompts import reader_pair, write_pairs
    from agentic_rag.training.sets import training_draws
    from agentic_rag.training.views import collect_views, done_ids

    settings = Settings.load(preset=args.preset, overrides=args.override + ["PROBE_ENABLED=false"])
    with tempfile.TemporaryDirectory() as tmp:
        if args.data is None:
            records = training_draws(args, SHARED, Path(tmp))
            # multi-hop first, then the other sources mixed: a collection stopped early still holds every source
            rest = [r for r in records if getattr(r, "source", None) != "hotpotqa"]
            np.random.default_rng(args.seed).shuffle(rest)
            records = [r for r in records if getattr(r, "source", None) == "hotpotqa"] + rest
        else:  # a benchmark split by name (prepared from the shared data as every benchmark prepares it), or a file
            named = str(args.data) in BENCHMARK_DATASETS and not args.data.exists()
            records = list(iter_records(benchmark_dataset(str(args.data), Path(tmp), SHARED) if named else args.data))
            records = records[: args.n] if args.n else records
    source = Path(args.data).stem if args.data else None
    pairs = args.pairs or args.out.with_name(args.out.name + ".pairs.jsonl")
    if args.pairs_only:
        n, skipped = write_pairs(records, settings, pairs, source)
        print(f"{n} pairs in {pairs} ({skipped} refused before generation)", flush=True)
        return 0
    known = {r["id"]: r for r in read_rows(pairs)}
    done = done_ids(args.out) if args.out.is_dir() else set()

    def rows():
        for record in records:
            if record.interaction_id in done:
                continue
            row = known.get(record.interaction_id) or reader_pair(record, settings, source)
            if row is not None and record.interaction_id not in known:
                append_line(pairs, json.dumps(row, ensure_ascii=False))  # the cross-encoder trains on the same pairs
            if row is not None:
                yield row

    print(f"{len(done)} of {len(records)} records read before", flush=True)
    pending = rows()
    first = next(pending, None)
    if first is None:  # a finished collection loads no model
        print("nothing left to read", flush=True)
        return 0
    model = get_chat_model(settings)
    print(f"reading {', '.join(args.views)} at layer(s) {args.layers} of {Path(model.model_path).name} in {model.dtype}",
          flush=True)
    collect_views(model, itertools.chain([first], pending), args.out, args.chunk, progress=True, layers=tuple(args.layers),
                  views=tuple(args.views), total=len(records), packed=not args.unpacked)
    return 0


def _write_report(args: argparse.Namespace, report: dict, heading: str, table: str) -> None:
    """OUT.json, and OUT.md: the heading, the command that regenerates it, the table."""
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(report, indent=2) + "\n")
    evals_arg = " ".join(f"{name}={_shown(Path(p))}" for name, p in (e.split("=", 1) for e in args.eval))
    args.out.with_suffix(".md").write_text(f"{heading} Generated by `python scripts/train_probe.py {args.cmd} --train "
                                           f"{_shown(args.train)} --eval {evals_arg}`.\n\n{table}")


def curve(args: argparse.Namespace) -> int:
    """The learning curve to the full training size on each test split's views, against the shipped probe
    read on the same views: benchmarks/probe/learning_curve.{json,md,png}."""
    from agentic_rag.reader.probe import load_probe
    from agentic_rag.training.views import load_views, named_views, probe_readings
    from studies.probe_curve import curve_table, plot_curve, split_curve

    train, evals = load_views(args.train), named_views(args.eval)
    shipped = load_probe(args.probe)
    baseline = {name: probe_readings(shipped, views) for name, views in evals.items()}
    report = split_curve(train, evals, args.layer, draws=args.draws, baseline=baseline)
    report |= {"states_dtype": str(train["dtype"]), "shipped_probe": _shown(args.probe),
               "eval_rows": {name: int(len(v["y"])) for name, v in evals.items()}}
    _write_report(args, report, f"# The answerability probe's learning curve\n\nEach reader fitted on growing random "
                  f"subsets of the {report['train_rows']} training views ({report['multi_hop_rows']} multi-hop; P averaged "
                  f"over {report['draws']} subsets below the full size) and scored on each test split's views; each step's "
                  "gain is a paired 95% bootstrap interval against the size before.", curve_table(report))
    plot_curve(report, args.out.with_suffix(".png"))
    print(curve_table(report))
    return 0


def routes(args: argparse.Namespace) -> int:
    """One reader against a reader per hop plan, out of fold on the training views and on the test splits' views:
    benchmarks/probe/routes.{json,md}. The plans come from the questions (rebuilt with the training draws'
    sizes, and from the named benchmarks), read as the agent's anchor step reads them."""
    import tempfile

    from agentic_rag.datasets.prepare.benchmarks import benchmark_dataset
    from agentic_rag.training.sets import training_draws
    from agentic_rag.training.views import load_views, named_views
    from studies.probe_routes import plan_routes, route_report, routes_heading, routes_table

    train, evals = load_views(args.train), named_views(args.eval)
    with tempfile.TemporaryDirectory() as tmp:
        questions = {r.interaction_id: r.query for r in training_draws(args, SHARED, Path(tmp))}
        for name in evals:
            questions |= {r.interaction_id: r.query for r in iter_records(benchmark_dataset(name, Path(tmp), SHARED))}
    report = route_report(train, *plan_routes(train, evals, questions), args.layer)
    _write_report(args, report, routes_heading(report), routes_table(report))
    print(routes_table(report))
    return 0


def dtypes(args: argparse.Namespace) -> int:
    """The shipped probe read on one split's prompts under two dtypes (two ``views --data`` folders of one split,
    e.g. LLM_DTYPE=float32 and bfloat16): each AUC, their paired difference, how far P moved, and how many
    readings fall on the other side of ANSWERABILITY_MIN. Writes benchmarks/probe/dtypes.json and .md."""
    from agentic_rag.reader.probe import load_probe
    from agentic_rag.training.probe_report import auc_difference
    from agentic_rag.training.views import load_views, probe_readings

    probe = load_probe(args.probe)
    cut = Settings.load().baug.ANSWERABILITY_MIN
    report = json.loads(args.out.read_text()) if args.out.is_file() else {}
    for spec in args.split:
        name, _, folders = spec.partition("=")
        a, _, b = folders.partition(",")
        if not b:
            raise SystemExit(f"--split {spec!r}: write NAME=FOLDER_A,FOLDER_B")
        va, vb = load_views(Path(a)), load_views(Path(b))
        common = sorted(set(map(str, va["ids"])) & set(map(str, vb["ids"])))
        read = {}
        for views in (va, vb):
            at = {str(i): k for k, i in enumerate(views["ids"])}
            p = probe_readings(probe, views)
            read[str(views["dtype"])] = np.array([p[at[i]] for i in common])
        label = dict(zip(map(str, va["ids"]), va["y"]))
        y = np.array([int(label[i]) for i in common])
        (da, pa), (db, pb) = read.items()
        report[name] = {"rows": len(common), "auc": {da: round(auc(y, pa), 4), db: round(auc(y, pb), 4)},
                        f"{db} - {da}": auc_difference(y, pa, pb), "max_abs_p_change": round(float(np.abs(pa - pb).max()), 4),
                        "median_abs_p_change": round(float(np.median(np.abs(pa - pb))), 4),
                        f"other side of ANSWERABILITY_MIN={cut}": int(((pa < cut) != (pb < cut)).sum())}
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(report, indent=2) + "\n")
    lines = [f"The shipped probe ({_shown(args.probe)}) read on the same prompts under two dtypes. Generated by "
             "`scripts/train_probe.py dtypes`.", "", "| split | rows | AUC by dtype | paired difference (95% CI) | "
             "P moved: median / max | readings across ANSWERABILITY_MIN |", "|---|---|---|---|---|---|"]
    for name, r in report.items():
        diff_key = next(k for k in r if " - " in k)
        d, across = r[diff_key], next(v for k, v in r.items() if k.startswith("other side"))
        lines.append(f"| {name} | {r['rows']} | " + ", ".join(f"{k} {v:.4f}" for k, v in r["auc"].items())
                     + f" | {diff_key}: {d['diff']:+.4f} ({d['ci95_low']:+.4f} to {d['ci95_high']:+.4f}) | "
                     f"{r['median_abs_p_change']} / {r['max_abs_p_change']} | {across} of {r['rows']} |")
    args.out.with_suffix(".md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))
    return 0


def score(args: argparse.Namespace) -> int:
    """A fitted probe on an evaluation file's agent prompts, read by the probe's own model: AUC and
    refusal / false-refusal rates at fixed thresholds. Nothing is fitted or chosen here, so it may run
    on a test split (e.g. to compare two models' states on the very prompts the benchmarks use)."""
    from tqdm import tqdm

    from agentic_rag.datasets.crag import iter_records
    from agentic_rag.llm.local import hidden_size_of
    from agentic_rag.reader.probe import asked_question, load_probe, packaged_probe_for

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
        views, _ = model.prompt_state(prompt, probe.layer, asked_question(probe.views, record.query))
        p.append(probe.read(views))
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


def question_ids(datasets: list[str]) -> set[str]:
    """The question ids (``base_id``) of datasets named as files or benchmark names (hotpot_dev, ...)."""
    import tempfile

    from agentic_rag.datasets.prepare.benchmarks import BENCHMARK_DATASETS, benchmark_dataset

    with tempfile.TemporaryDirectory() as work:
        files = [benchmark_dataset(d, Path(work), SHARED) if d in BENCHMARK_DATASETS else d for d in datasets]
        return {base_id(r.interaction_id) for f in files for r in iter_records(f)}


def fit(args: argparse.Namespace) -> int:
    """A probe from ``collect``'s states file, or from a ``views`` collection (a folder) of some layers: with
    several ``--views``, a probe per view at the layer the first one picks, saved as one probe set."""
    from agentic_rag.reader.cross_encoder import join_readings
    from agentic_rag.reader.probe import ProbeSet
    from agentic_rag.training.views import load_views

    if args.data.is_dir():
        data = load_views(args.data)
        states = {view: data[view] for view in args.views}
        collected = [int(x) for x in data.get("layers", range(data["last"].shape[1]))]
        dtype = str(data["dtype"])
    elif args.views != ["last"]:
        raise SystemExit("--views other than last needs a views folder (train_probe.py views)")
    else:
        data = np.load(args.data, allow_pickle=False)
        states, collected, dtype = {"last": data["X"]}, list(range(data["X"].shape[1])), "bfloat16"
    if args.exclude:  # a decision fit's dev questions: the probe its run reads must not have seen them
        keep = ~np.isin([base_id(str(i)) for i in data["ids"]], sorted(question_ids(args.exclude)))
        print(f"--exclude: {int((~keep).sum())} of {len(keep)} rows dropped")
        states = {view: x[keep] for view, x in states.items()}
        data = {k: data[k][keep] for k in ("y", "groups", "ids")} | {k: data[k] for k in data if k == "model_key"}
    y, groups = data["y"], [str(g) for g in data["groups"]]
    model_key = str(data["model_key"]) if "model_key" in data else FAST_MODEL.sha256
    if args.out is None:  # the shipped probe of the model the views were read from, never another model's file
        args.out = packaged_probe_for_key(model_key)
        if args.out is None:
            raise SystemExit("error: these views were read from a model that ships no probe: give --out")
    layers = [int(x) for x in args.layers.split(",")] if args.layers else None
    sources = np.array([source_of(str(i), g) for i, g in zip(data["ids"], groups)])
    counts = {str(s): int((sources == s).sum()) for s in sorted(set(sources))}
    members, oofs, report = [], [], {}
    for view in args.views:
        c = args.c if args.c is not None else VIEW_C[view]
        meta = {"trained_by": "scripts/train_probe.py", "rows_by_source": counts, "states_dtype": dtype}
        probe, fitted = fit_probe(states[view], y, groups, model_key, layers=[members[0].layer] if members else layers,
                                  c=c, collected=collected, view=view, meta=meta)
        members.append(probe)
        oofs.append(np.array(fitted.pop("oof_scores")))
        report = report or fitted
        report.setdefault("cv_auc_by_view", {})[view] = probe.meta["cv_auc"]
    oof = oofs[0] if len(oofs) == 1 else np.array([join_readings(*r) for r in zip(*oofs)])
    oof_auc = round(auc(y, oof), 4)
    # a set says what its joined reading scored out of fold, as a single probe says its own
    probe = members[0] if len(members) == 1 else ProbeSet(members, {
        "trained_by": "scripts/train_probe.py", "views": list(args.views), "cv_auc": oof_auc,
        "n": int(len(y)), "rows_by_source": counts})
    probe.save(args.out)
    report.update(n=int(len(y)), answerable=int(y.sum()), views=list(args.views), oof_auc=oof_auc,
                  by_source=counts, auc_by_source=auc_by_source(oof, y, sources), out_of_fold=refusal_table(oof, y, sources),
                  probe=str(args.out),
                  learning_curve=learning_curve(states[args.views[0]][:, collected.index(probe.layer), :]
                                                .astype(np.float64), y, groups, members[0].meta["c"]),
                  auc_needed_for_targets=required_auc(refusal=0.70, false_refusal=0.15))
    args.report.parent.mkdir(parents=True, exist_ok=True)
    args.report.write_text(json.dumps(report, indent=2) + "\n")
    roc_plot(oof, y, sources, args.report.with_name("roc.png"), report["oof_auc"])
    print(json.dumps({k: v for k, v in report.items() if k != "layer_auc"}, indent=1))
    print("layer AUC:", report["layer_auc"])
    return 0


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
    f.add_argument("--c", type=float, default=None, help="inverse L2 strength of the logistic regression (default: "
                                                         "the view's, training/fitting.VIEW_C)")
    f.add_argument("--exclude", nargs="*", default=[],
                   help="datasets (files or benchmark names) whose questions no row may come from: the dev split a "
                        "decision is fitted on, so that the probe its calibration run reads has not seen them")
    f.add_argument("--views", nargs="+", default=["last"], choices=["last", "question"],
                   help="with a views folder: a probe per view, joined by mean logit (one probe set file)")
    f.add_argument("--out", type=Path, default=None,
                   help="the probe file written (default: the shipped probe of the model the states were read from)")
    f.add_argument("--report", type=Path, default=ROOT / "benchmarks" / "probe" / "training.json")
    v = sub.add_parser("views", help="the training rows as one resumable job: reader pairs, then their prefill views")
    add_draw_arguments(v)
    v.add_argument("--data", type=Path, default=None,
                   help="an evaluation split instead of the training draws: a benchmark name (squad200, hotpot_test, ...) or a CRAG file")
    v.add_argument("--n", type=int, default=None, help="with --data: its first N records only")
    v.add_argument("--layers", type=int, nargs="+", default=[18], help="the layers kept (the forward pass stops after the deepest)")
    v.add_argument("--views", nargs="+", default=["last", "question"], choices=["last", "evidence", "question"])
    v.add_argument("--chunk", type=int, default=50, help="rows per saved chunk (what a stopped run can lose)")
    v.add_argument("--pairs-only", action="store_true", help="write every record's pair and stop (no model is loaded)")
    v.add_argument("--pairs", type=Path, default=None, help="the pairs file read and extended (default: OUT.pairs.jsonl)")
    v.add_argument("--unpacked", action="store_true", help="keep the views as float16, not one byte per value")
    v.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "probe" / "views" / "train")
    v.add_argument("--preset", default=None)
    v.add_argument("--override", nargs="*", default=[])
    cu = sub.add_parser("curve", help="the learning curve on the test splits' views, against the shipped probe")
    cu.add_argument("--train", type=Path, default=ROOT / "artifacts" / "probe" / "views_train")
    cu.add_argument("--eval", nargs="+", required=True, help="NAME=FOLDER of a test split's views (`views --data`)")
    cu.add_argument("--layer", type=int, default=18)
    cu.add_argument("--draws", type=int, default=3, help="random subsets per size below the full one")
    cu.add_argument("--probe", type=Path, default=PROBES_DIR / DEFAULT_MODEL.probe_file)
    cu.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "probe" / "learning_curve.json")
    ro = sub.add_parser("routes", help="one reader against a reader per hop plan, out of fold and on the test splits' views")
    add_draw_arguments(ro)
    ro.add_argument("--train", type=Path, default=ROOT / "benchmarks" / "probe" / "views" / "train")
    ro.add_argument("--eval", nargs="+", required=True, help="NAME=FOLDER: a benchmark split's name and its views (`views --data NAME`)")
    ro.add_argument("--layer", type=int, default=18)
    ro.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "probe" / "routes.json")
    dt = sub.add_parser("dtypes", help="the shipped probe on one split's prompts read under two dtypes")
    dt.add_argument("--split", nargs="+", required=True, help="NAME=FOLDER_A,FOLDER_B: one split's views in two dtypes")
    dt.add_argument("--probe", type=Path, default=PROBES_DIR / DEFAULT_MODEL.probe_file)
    dt.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "probe" / "dtypes.json")
    sc = sub.add_parser("score")
    sc.add_argument("--data", type=Path, required=True, help="an evaluation file in CRAG format (e.g. data/squad200.jsonl)")
    sc.add_argument("--probe", type=Path, default=None, help="default: the shipped probe of the configured model")
    sc.add_argument("--model", type=Path, default=None, help="the local HF folder the probe was fitted on (default: the configured model)")
    sc.add_argument("--out", type=Path, required=True)
    sc.add_argument("--per-question", type=Path, default=None, help="also write {question id: P(answerable)} here")
    sc.add_argument("--preset", default=None)
    sc.add_argument("--override", nargs="*", default=[])
    args = ap.parse_args()
    try:
        return {"collect": collect, "fit": fit, "score": score, "views": views, "curve": curve,
                "routes": routes, "dtypes": dtypes}[args.cmd](args)
    except (UserError, FileNotFoundError, ValueError) as exc:  # a bad file or argument: one line, no traceback
        raise SystemExit(f"error: {exc}") from None


if __name__ == "__main__":
    sys.exit(main())
