"""The steps of ``agentic-rag train``: each reads what the step before wrote and writes one file or folder.

The answerability probe: ``views`` (a resumable collection of what one prefill of the generator shows at
the probe's layer, per training row), ``probe`` (the layer chosen by article-grouped cross-validation and
the probe file), ``probe-score`` (a probe on an evaluation file, nothing chosen). The MiniLM reader:
``pairs`` (the rows, the sources each answer prompt shows), ``reader`` (fine-tuned), ``reader-score``.
The decision's fit is ``decision.calibrate_fit``. A step that meets a bad file or option raises a
``UserError`` (one line, exit 2), never a traceback; a step stopped part way goes on where it stopped.
"""

from __future__ import annotations

import itertools
import json
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from agentic_rag.datasets.crag import CragRecord, iter_records
from agentic_rag.errors import UserError

TRAINED_BY = "agentic-rag train"


@dataclass(frozen=True)
class Draws:
    """The sizes of the readers' training draws (``sets.probe_training_records``): both readers train on
    the same rows by default, none of them an evaluated or dev-pool question."""

    squad: int = 3000  # SQuAD 2.0 questions, half unanswerable
    nq: int = 2200  # NQ-open questions, half with near misses only
    snippets: int = 400  # of those NQ records, how many also as web-search snippets
    removed: int = 500  # answer-removed twins of answerable NQ records (at most)
    hotpot: bool = True  # HotpotQA's dev half, each question with a twin per supporting page removed
    seed: int = 21

    def records(self, shared: Path, work: Path) -> list[CragRecord]:
        from agentic_rag.training.sets import probe_training_records

        if not shared.is_dir():
            raise UserError(f"no shared data folder at {shared}: the training draws are read from it (give --shared)")
        return probe_training_records(shared, work, self.squad, self.nq, self.snippets, self.removed, self.hotpot, self.seed)


def split_records(data: str, shared: Path, work: Path, n: int | None = None) -> list[CragRecord]:
    """An evaluation split's records: a benchmark name (prepared from the shared data as every benchmark
    prepares it) or a CRAG file; its first ``n`` with ``n``."""
    from agentic_rag.datasets.prepare.benchmarks import BENCHMARK_DATASETS, benchmark_dataset

    named = data in BENCHMARK_DATASETS and not Path(data).exists()
    if not named and not Path(data).is_file():
        raise UserError(f"{data} is neither a benchmark split ({', '.join(sorted(BENCHMARK_DATASETS))}) nor a file")
    records = list(iter_records(benchmark_dataset(data, work, shared) if named else data))
    if not records:
        raise UserError(f"no questions in {data}: is it a dataset in CRAG's format?")
    return records[:n] if n else records


def multi_hop_first(records: list[CragRecord], seed: int) -> list[CragRecord]:
    """Multi-hop rows first, then the other sources shuffled: a collection stopped early still holds every source."""
    rest = [r for r in records if getattr(r, "source", None) != "hotpotqa"]
    np.random.default_rng(seed).shuffle(rest)
    return [r for r in records if getattr(r, "source", None) == "hotpotqa"] + rest


def collect_probe_views(settings: Any, out: Path, records: list[CragRecord], source: str | None, pairs: Path,
                        layers: tuple[int, ...], views: tuple[str, ...], chunk: int = 50, packed: bool = True,
                        pairs_only: bool = False, say=print) -> dict[str, int]:
    """Per record its reader pair (built as it is reached, or read from ``pairs``, which it extends: the
    MiniLM reader trains on the same pairs), then the ``views`` of one prefill of the configured model at
    ``layers``, saved ``chunk`` rows at a time into ``out``. Rows already there are skipped, so the job
    goes on where it stopped, in this session or the next. With ``pairs_only`` no model is loaded."""
    from agentic_rag.llm.factory import get_chat_model
    from agentic_rag.telemetry import append_line, read_rows
    from agentic_rag.training.prompts import reader_pair, write_pairs
    from agentic_rag.training.views import collect_views, done_ids

    if pairs_only:
        n, skipped = write_pairs(records, settings, pairs, source)
        say(f"{n} pairs in {pairs} ({skipped} refused before generation)")
        return {"pairs": n, "refused_before_generation": skipped}
    known = {r["id"]: r for r in read_rows(pairs)}
    done = done_ids(out) if out.is_dir() else set()

    def rows() -> Iterator[dict[str, Any]]:
        for record in records:
            if record.interaction_id in done:
                continue
            row = known.get(record.interaction_id) or reader_pair(record, settings, source)
            if row is not None and record.interaction_id not in known:
                append_line(pairs, json.dumps(row, ensure_ascii=False))
            if row is not None:
                yield row

    say(f"{len(done)} of {len(records)} records read before")
    pending = rows()
    first = next(pending, None)
    if first is None:  # a finished collection loads no model
        say("nothing left to read")
        return {"read": 0, "before": len(done)}
    model = get_chat_model(settings)
    say(f"reading {', '.join(views)} at layer(s) {', '.join(map(str, layers))} of {Path(model.model_path).name} in {model.dtype}")
    try:
        read = collect_views(model, itertools.chain([first], pending), out, chunk, progress=True, layers=layers, views=views,
                             total=len(records), packed=packed)
    except ValueError as exc:  # a folder begun with other layers, views, dtype or packing
        raise UserError(str(exc)) from None
    return {"read": read, "before": len(done)}


def question_ids(datasets: list[str], shared: Path) -> set[str]:
    """The question ids (``base_id``) of datasets named as files or benchmark names (hotpot_dev, ...)."""
    from agentic_rag.training.sets import base_id

    with tempfile.TemporaryDirectory() as work:
        return {base_id(r.interaction_id) for d in datasets for r in split_records(d, shared, Path(work))}


def fit_probe_file(data: Path, views: tuple[str, ...], out: Path | None, report_path: Path, layers: list[int] | None = None,
                   c: float | None = None, exclude: set[str] = frozenset()) -> dict[str, Any]:
    """A probe from a ``views`` collection: a probe per view at the layer the first one picks (several views
    are saved as one probe set, read by mean logit). Rows whose question is in ``exclude`` (a decision fit's
    dev questions, so the probe its calibration run reads has not seen them) are left out. Writes the probe
    (default: the shipped probe of the model the views were read from), the report and its ROC plot."""
    from agentic_rag.eval.metrics import auc
    from agentic_rag.reader.cross_encoder import join_readings
    from agentic_rag.reader.probe import ProbeSet, packaged_probe_for_key
    from agentic_rag.training.fitting import VIEW_C, fit_probe
    from agentic_rag.training.probe_report import auc_by_source, learning_curve, refusal_table, required_auc, roc_plot
    from agentic_rag.training.sets import base_id, source_of
    from agentic_rag.training.views import load_views

    if not data.is_dir() or not any(data.glob("chunk_*.npz")):
        raise UserError(f"{data} is not a views folder (`agentic-rag train views` writes one)")
    loaded = load_views(data)
    if missing := [v for v in views if v not in loaded]:
        raise UserError(f"{data} holds no {', '.join(missing)} view (it holds: {', '.join(v for v in VIEW_C if v in loaded)})")
    states = {view: loaded[view] for view in views}
    collected = [int(x) for x in loaded["layers"]] if "layers" in loaded else list(range(states[views[0]].shape[1]))
    keep = ~np.isin([base_id(str(i)) for i in loaded["ids"]], sorted(exclude))
    if not keep.any():
        raise UserError(f"every row of {data} is a question of the excluded datasets")
    states = {view: x[keep] for view, x in states.items()}
    y, ids = loaded["y"][keep], [str(i) for i in loaded["ids"][keep]]
    groups = [str(g) for g in loaded["groups"][keep]]
    if not 0 < int(y.sum()) < len(y):
        raise UserError(f"{data}: a probe needs answerable and unanswerable rows (answerable: {int(y.sum())} of {len(y)})")
    model_key = str(loaded.get("model_key", ""))
    if out is None:  # the shipped probe of the model the views were read from, never another model's file
        out = packaged_probe_for_key(model_key)
        if out is None:
            raise UserError("these views were read from a model that ships no probe: give --out")
    sources = np.array([source_of(i, g) for i, g in zip(ids, groups)])
    counts = {str(s): int((sources == s).sum()) for s in sorted(set(sources))}
    members, oofs, report = [], [], {}
    for view in views:
        meta = {"trained_by": TRAINED_BY, "rows_by_source": counts, "states_dtype": str(loaded["dtype"])}
        try:
            probe, fitted = fit_probe(states[view], y, groups, model_key, layers=[members[0].layer] if members else layers,
                                      c=c if c is not None else VIEW_C[view], collected=collected, view=view, meta=meta)
        except ValueError as exc:  # layers that were not collected
            raise UserError(str(exc)) from None
        members.append(probe)
        oofs.append(np.array(fitted.pop("oof_scores")))
        report = report or fitted
        report.setdefault("cv_auc_by_view", {})[view] = probe.meta["cv_auc"]
    oof = oofs[0] if len(oofs) == 1 else np.array([join_readings(*r) for r in zip(*oofs)])
    oof_auc = round(auc(y, oof), 4)
    # a set says what its joined reading scored out of fold, as a single probe says its own
    probe = members[0] if len(members) == 1 else ProbeSet(members, {
        "trained_by": TRAINED_BY, "views": list(views), "cv_auc": oof_auc, "n": int(len(y)), "rows_by_source": counts})
    probe.save(out)
    first = states[views[0]][:, collected.index(probe.layer), :].astype(np.float64)
    report.update(n=int(len(y)), answerable=int(y.sum()), views=list(views), oof_auc=oof_auc, by_source=counts,
                  auc_by_source=auc_by_source(oof, y, sources), out_of_fold=refusal_table(oof, y, sources), probe=str(out),
                  excluded_rows=int((~keep).sum()), learning_curve=learning_curve(first, y, groups, members[0].meta["c"]),
                  auc_needed_for_targets=required_auc(refusal=0.70, false_refusal=0.15))
    report_path.parent.mkdir(parents=True, exist_ok=True)
    report_path.write_text(json.dumps(report, indent=2) + "\n")
    roc_plot(oof, y, sources, report_path.with_name("roc.png"), oof_auc)
    return report


def probe_scores(settings: Any, model: Any, model_key: str, records: list[CragRecord], probe_path: Path | None,
                 progress: bool = True) -> dict[str, Any]:
    """A fitted probe on an evaluation split's agent prompts, read by the probe's own model: AUC and the
    refusal and false-refusal rates at fixed thresholds, and each question's P(answerable). Nothing is fitted
    or chosen here, so it may run on a test split."""
    from tqdm import tqdm

    from agentic_rag.datasets.crag import IDK
    from agentic_rag.eval.metrics import auc
    from agentic_rag.llm.local import hidden_size_of
    from agentic_rag.reader.probe import asked_question, load_probe, packaged_probe_for
    from agentic_rag.training.probe_report import refusal_rates
    from agentic_rag.training.prompts import generator_prompt

    probe_path = probe_path or packaged_probe_for(model.model_path)
    if probe_path is None:
        raise UserError(f"{Path(model.model_path).name} ships no probe: give --probe")
    probe = load_probe(probe_path)
    probe.check_model(model_key, hidden_size_of(model))
    y, p, before, by_id = [], [], 0, {}
    for record in tqdm(records, desc="probe scores", unit="q", disable=not progress):
        prompt = generator_prompt(record, settings)
        if prompt is None:  # refused before generation: the probe never sees these
            before += 1
            continue
        views, _ = model.prompt_state(prompt, probe.layer, asked_question(probe.views, record.query))
        y.append(int(record.answer != IDK))
        p.append(probe.read(views))
        by_id[record.interaction_id] = round(p[-1], 5)
    y_arr, p_arr = np.array(y), np.array(p)
    value = auc(y_arr, p_arr) if len(y) else float("nan")
    return {"states_of": Path(model.model_path).name, "probe": str(probe_path), "layer": probe.layer, "scored": len(y),
            "refused_before_generation": before, "auc": None if np.isnan(value) else round(float(value), 4),
            "at_threshold": [{"threshold": t, **refusal_rates(p_arr, y_arr, t)} for t in (0.3, 0.4, 0.5)],
            "per_question": by_id}


def fit_cross_reader(pairs: Path, out: Path, report_path: Path, base: Path, base_key: str | None = None, top_layers: int = 2,
                     compare_top: tuple[int, ...] = (2,), curve: tuple[float, ...] = (0.25, 0.5), epochs: int = 3,
                     lr: float = 5e-5, batch_size: int = 16, device: str = "cpu", say=print) -> dict[str, Any]:
    """The MiniLM reader from ``pairs``: grouped cross-validated AUC per configuration (``compare_top``: how
    many top encoder layers are tuned) and source, a learning curve over ``curve``'s row fractions, then the
    reader fine-tuned on every row. The report is rewritten after each measurement, so what is done
    survives a stop."""
    from agentic_rag.reader.cross_encoder import base_sha256, save_reader
    from agentic_rag.telemetry import read_rows
    from agentic_rag.training.cross_encoder import auc_by_source, cross_validated, fine_tune

    rows = read_rows(pairs)
    if not rows:
        raise UserError(f"no pairs in {pairs}: run `agentic-rag train pairs` first")
    report_path.parent.mkdir(parents=True, exist_ok=True)
    fixed = dict(epochs=epochs, lr=lr, batch_size=batch_size, device=device)
    report: dict[str, Any] = {"pairs": len(rows), "answerable": sum(r["label"] for r in rows),
                              "by_source": {s: sum(r["source"] == s for r in rows) for s in sorted({r["source"] for r in rows})},
                              "settings": fixed, "configurations": {}, "learning_curve": {}}

    def save() -> None:
        report_path.write_text(json.dumps(report, indent=2) + "\n")

    for top in compare_top:
        start = time.perf_counter()
        oof = cross_validated(rows, str(base), top_layers=top, **fixed)
        report["configurations"][f"top {top} layers"] = {"auc": auc_by_source(rows, oof), "s": round(time.perf_counter() - start, 1)}
        say(f"top {top} layers: {report['configurations'][f'top {top} layers']}")
        save()
        if top == top_layers:
            np.save(report_path.with_name("oof.npy"), oof)
    for fraction in curve:
        oof = cross_validated(rows, str(base), train_fraction=fraction, top_layers=top_layers, **fixed)
        report["learning_curve"][str(fraction)] = auc_by_source(rows, oof)["all"]
        say(f"fraction {fraction}: {report['learning_curve'][str(fraction)]}")
        save()
    model, _, names = fine_tune(rows, str(base), top_layers=top_layers, progress=True, **fixed)
    meta = {"base_sha256": base_key or base_sha256(str(base)), "top_layers": top_layers, "trained_by": TRAINED_BY,
            "rows_by_source": report["by_source"], **fixed,
            "cv_auc": report["configurations"].get(f"top {top_layers} layers", {}).get("auc", {}).get("all")}
    save_reader(out, model, names, meta)
    report["reader"] = meta
    save()
    return report


def cross_reader_scores(pairs: Path, reader_path: Path | None, probe_scores_file: Path | None = None) -> dict[str, Any]:
    """A fitted MiniLM reader (and, with the probe's per-question readings of the same rows, the probe and
    the two joined) on an evaluation file's pairs: AUC and refusal and false-refusal at fixed thresholds."""
    from agentic_rag.eval.metrics import auc
    from agentic_rag.reader.cross_encoder import join_readings, load_cross_reader
    from agentic_rag.telemetry import read_rows
    from agentic_rag.training.probe_report import refusal_rates

    rows = read_rows(pairs)
    if not rows:
        raise UserError(f"no pairs in {pairs}: run `agentic-rag train pairs --data` first")
    probe = None
    if probe_scores_file is not None:
        try:
            probe = json.loads(probe_scores_file.read_text(encoding="utf-8"))
        except (OSError, json.JSONDecodeError) as exc:
            raise UserError(f"{probe_scores_file} is not a JSON object of probe readings: {exc}") from None
        if not isinstance(probe, dict):
            raise UserError(f"{probe_scores_file} is not a JSON object of probe readings")
        rows = [r for r in rows if r["id"] in probe]  # the questions both readers read
        if not rows:
            raise UserError(f"no pair of {pairs} has a reading in {probe_scores_file}: are they of the same split?")
    reader = load_cross_reader(reader_path)
    start = time.perf_counter()
    cross = np.array([reader.score(r["question"], r["sources"]) for r in rows])
    ms = (time.perf_counter() - start) * 1000 / max(len(rows), 1)
    y = np.array([r["label"] for r in rows])
    readers = {"cross-encoder": cross}
    if probe is not None:
        p = np.array([probe[r["id"]] for r in rows])
        readers |= {"probe": p, "both (mean logit)": np.array([join_readings(a, b) for a, b in zip(p, cross)])}
    return {"pairs": str(pairs), "n": len(rows), "answerable": int(y.sum()), "cross_ms_per_question": round(ms, 1),
            "readers": {name: {"auc": round(auc(y, s), 4),
                               "at_threshold": [{"threshold": t, **refusal_rates(s, y, t)} for t in (0.3, 0.5, 0.7)]}
                        for name, s in readers.items()}}
