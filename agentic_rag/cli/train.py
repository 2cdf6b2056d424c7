"""`agentic-rag train`: fit what the graph reads (the answerability probe, the MiniLM reader, the decision)."""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path
from typing import Annotated, Optional

import typer

from agentic_rag.cli.common import OverrideOpt, PresetOpt, app, console, fail, load_settings, risk_option
from agentic_rag.errors import named_path, output_file, replace_file

train_app = typer.Typer(no_args_is_help=True, help="Fit the answerability readers and the decision on training rows "
                                                   "(never a test split's questions).")
app.add_typer(train_app, name="train")

SharedOpt = Annotated[Path, typer.Option("--shared", help="The shared data folder the training draws and benchmark "
                                                            "splits are read from.")]
SplitOpt = Annotated[Optional[str], typer.Option("--data", help="An evaluation split instead of the training draws: a "
                                                 "benchmark name (squad200, hotpot_test, ...) or a CRAG file.")]
# the training draws' sizes (training/jobs.Draws): both readers train on the same rows by default
SquadOpt = Annotated[int, typer.Option("--squad", min=0, help="SQuAD 2.0 questions, half unanswerable.")]
NqOpt = Annotated[int, typer.Option("--nq", min=0, help="NQ-open questions, half with near misses only.")]
SnippetsOpt = Annotated[int, typer.Option("--snippets", min=0, help="Of those NQ records, how many also as search snippets.")]
RemovedOpt = Annotated[int, typer.Option("--removed", min=0, help="Answer-removed twins of answerable NQ records (at most).")]
HotpotOpt = Annotated[bool, typer.Option("--hotpot/--no-hotpot", help="HotpotQA's dev half, each question with a twin "
                                         "per supporting page removed.")]
SeedOpt = Annotated[int, typer.Option("--seed", help="The draws' seed.")]
SHARED = Path("../shared/data")


def _flat_memory() -> None:
    """One forward pass per prompt, each of a new length: oneDNN caches primitives per shape, and a process
    reading 1,000 prompts grew to 17 GB. A small cache keeps it flat; it must be set before torch computes."""
    os.environ.setdefault("ONEDNN_PRIMITIVE_CACHE_CAPACITY", "16")


def _ints(text: str, option: str) -> tuple[int, ...]:
    try:
        values = tuple(int(v) for v in text.split(",") if v.strip())
    except ValueError:
        fail(f"{option} takes comma-separated whole numbers, e.g. 18 or 16,18,20; got {text!r}")
    if not values or min(values) < 0:
        fail(f"{option} takes comma-separated layer numbers (0 = the embeddings), e.g. 18; got {text!r}")
    return values


def _names(text: str, option: str, allowed: tuple[str, ...]) -> tuple[str, ...]:
    names = tuple(dict.fromkeys(v.strip() for v in text.split(",") if v.strip()))
    if not names or any(n not in allowed for n in names):
        fail(f"{option} takes comma-separated names of {', '.join(allowed)}; got {text!r}")
    return names


def _records(data: str | None, n: int | None, shared: Path, draws) -> tuple[list, str | None]:
    """The records a step reads, and the source name its rows carry (an evaluation split's name, or None
    for the training draws, whose rows name their own source)."""
    from agentic_rag.training.jobs import multi_hop_first, split_records

    with tempfile.TemporaryDirectory() as work:
        if data is None:
            return multi_hop_first(draws.records(shared, Path(work)), draws.seed), None
        return split_records(data, shared, Path(work), n), Path(data).name.split(".")[0]


def _write_json(path: Path, report: dict) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")


@train_app.command("views")
def views_cmd(
    out: Annotated[str, typer.Option("--out", help="The views folder, extended where it stopped.")],
    data: SplitOpt = None,
    n: Annotated[Optional[int], typer.Option("--n", min=1, help="With --data: its first N records only.")] = None,
    layers: Annotated[str, typer.Option("--layers", help="The layers kept, e.g. 18 (the pass stops after the deepest).")] = "18",
    views: Annotated[str, typer.Option("--views", help="The views kept: last, question, evidence.")] = "last,question",
    chunk: Annotated[int, typer.Option("--chunk", min=1, help="Rows per saved chunk (what a stop can lose).")] = 50,
    pairs: Annotated[Optional[str], typer.Option("--pairs", help="The pairs file read and extended (default: "
                                                 "OUT.pairs.jsonl).")] = None,
    pairs_only: Annotated[bool, typer.Option("--pairs-only", help="Write each record's pair and stop (no model loaded).")] = False,
    unpacked: Annotated[bool, typer.Option("--unpacked", help="Keep float16 values, not one byte per value.")] = False,
    squad: SquadOpt = 3000, nq: NqOpt = 2200, snippets: SnippetsOpt = 400, removed: RemovedOpt = 500, hotpot: HotpotOpt = True,
    seed: SeedOpt = 21, shared: SharedOpt = SHARED, preset: PresetOpt = None, override: OverrideOpt = None,
) -> None:
    """Collect what one prefill of the generator shows the probe, per training row (or per record of --data):
    the rows' reader pairs first, then the views at the probe's layers. Resumable: run it again to go on."""
    from agentic_rag.training.jobs import Draws, collect_probe_views
    from agentic_rag.training.views import STORED

    _flat_memory()
    folder = named_path(out, "--out")
    kept_layers, kept_views = _ints(layers, "--layers"), _names(views, "--views", STORED)
    settings = load_settings(preset, [*(override or []), "PROBE_ENABLED=false"], needs_llm=not pairs_only)
    records, source = _records(data, n, shared, Draws(squad, nq, snippets, removed, hotpot, seed))
    pairs_file = named_path(pairs, "--pairs") or folder.with_name(folder.name + ".pairs.jsonl")
    summary = collect_probe_views(settings, folder, records, source, pairs_file, kept_layers, kept_views, chunk,
                                  packed=not unpacked, pairs_only=pairs_only, say=console.print)
    console.print(f"views in {folder}: {summary}")


@train_app.command("probe")
def probe_cmd(
    views_from: Annotated[str, typer.Option("--views-from", help="A views folder (`train views`).")],
    views: Annotated[str, typer.Option("--views", help="A probe per view, joined by mean logit: last, question.")] = "last",
    layers: Annotated[Optional[str], typer.Option("--layers", help="Layers to choose among (default: every one "
                                                  "collected).")] = None,
    c: Annotated[Optional[float], typer.Option("--c", min=1e-9, help="Inverse L2 strength (default: the view's own).")] = None,
    exclude: Annotated[Optional[list[str]], typer.Option("--exclude", help="A dataset (file or benchmark name) no row "
                                                         "may come from: the dev split a decision is fitted on "
                                                         "(repeatable).")] = None,
    out: Annotated[Optional[str], typer.Option("--out", help="The probe file (default: the shipped probe of the model "
                                               "the views were read from).")] = None,
    report: Annotated[Optional[str], typer.Option("--report", help="The report (default: "
                                                  "ARTIFACTS_DIR/training/probe.json; roc.png beside it).")] = None,
    shared: SharedOpt = SHARED,
) -> None:
    """Fit the answerability probe: the layer by article-grouped cross-validation, then a logistic regression on
    every row."""
    from agentic_rag.training.jobs import fit_probe_file, question_ids

    settings = load_settings(None, None)
    chosen = _names(views, "--views", ("last", "question"))
    report_path = named_path(report, "--report") or Path(settings.paths.ARTIFACTS_DIR) / "training" / "probe.json"
    excluded = question_ids(list(exclude or []), shared) if exclude else set()
    result = fit_probe_file(Path(views_from), chosen, named_path(out, "--out"), report_path,
                            list(_ints(layers, "--layers")) if layers else None, c, excluded)
    console.print(f"probe {result['probe']}: layer {result['chosen_layer']}, out-of-fold AUC {result['oof_auc']} on "
                  f"{result['n']} rows ({result['excluded_rows']} excluded); report {report_path}", highlight=False)


@train_app.command("probe-score")
def probe_score_cmd(
    data: Annotated[str, typer.Option("--data", help="An evaluation split: a benchmark name or a CRAG file.")],
    out: Annotated[str, typer.Option("--out", help="The report (JSON).")],
    probe: Annotated[Optional[str], typer.Option("--probe", help="A probe file (default: the configured model's own).")] = None,
    model: Annotated[Optional[str], typer.Option("--model", help="A local model folder whose states the probe reads "
                                                 "(default: the configured model).")] = None,
    per_question: Annotated[Optional[str], typer.Option("--per-question", help="Also write {question id: "
                                                        "P(answerable)} here (what `reader-score` joins).")] = None,
    n: Annotated[Optional[int], typer.Option("--n", min=1, help="Its first N records only.")] = None,
    shared: SharedOpt = SHARED, preset: PresetOpt = None, override: OverrideOpt = None,
) -> None:
    """A fitted probe on an evaluation split's answer prompts: AUC and refusal rates at fixed thresholds.
    Nothing is fitted or chosen, so it may read a test split."""
    from agentic_rag.llm.factory import get_chat_model
    from agentic_rag.llm.local import ChatLocalTransformers
    from agentic_rag.llm.packaged import converted_source_key
    from agentic_rag.training.jobs import probe_scores, split_records

    _flat_memory()
    report_path, scores_path = named_path(out, "--out"), named_path(per_question, "--per-question")
    settings = load_settings(preset, [*(override or []), "PROBE_ENABLED=false"], needs_llm=True)
    if settings.llm.LLM_BACKEND != "local" and model is None:
        fail("probe-score reads the generator's hidden states: it needs LLM_BACKEND=local (or --model)")
    chat = ChatLocalTransformers(model_path=model) if model else get_chat_model(settings)
    key = converted_source_key(Path(chat.model_path)) or Path(chat.model_path).name
    with tempfile.TemporaryDirectory() as work:
        records = split_records(data, shared, Path(work), n)
    result = probe_scores(settings, chat, key, records, Path(probe) if probe else None)
    by_id = result.pop("per_question")
    _write_json(report_path, {"data": data, **result})
    if scores_path:
        _write_json(scores_path, by_id)
    console.print(json.dumps({"data": data, **result}, indent=1), highlight=False)


@train_app.command("pairs")
def pairs_cmd(
    out: Annotated[str, typer.Option("--out", help="The pairs file (JSON lines), extended where it stopped.")],
    data: SplitOpt = None,
    squad: SquadOpt = 3000, nq: NqOpt = 2200, snippets: SnippetsOpt = 400, removed: RemovedOpt = 500, hotpot: HotpotOpt = True,
    seed: SeedOpt = 21, shared: SharedOpt = SHARED, preset: PresetOpt = None, override: OverrideOpt = None,
) -> None:
    """The MiniLM reader's rows: per question, the sources its answer prompt shows and whether they answer it
    (retrieval and packing only; no model is loaded). Resumable."""
    from agentic_rag.training.jobs import Draws
    from agentic_rag.training.prompts import write_pairs

    path = named_path(out, "--out")
    settings = load_settings(preset, override)
    records, source = _records(data, None, shared, Draws(squad, nq, snippets, removed, hotpot, seed))
    n, skipped = write_pairs(records, settings, path, source)
    console.print(f"{n} pairs in {path} ({skipped} refused before generation)")


@train_app.command("reader")
def reader_cmd(
    pairs: Annotated[str, typer.Option("--pairs", help="The pairs file (`train pairs`).")],
    out: Annotated[Optional[str], typer.Option("--out", help="The reader file (default: the shipped one).")] = None,
    report: Annotated[Optional[str], typer.Option("--report", help="The report (default: "
                                                  "ARTIFACTS_DIR/training/reader.json).")] = None,
    base_dir: Annotated[Optional[str], typer.Option("--base-dir", help="The MiniLM folder (default: the packaged one).")] = None,
    base_key: Annotated[Optional[str], typer.Option("--base-key", help="The SHA-256 the reader records (default: of "
                                                    "--base-dir's weights).")] = None,
    top_layers: Annotated[int, typer.Option("--top-layers", min=1, help="Encoder layers tuned (the rest stay the "
                                            "packaged MiniLM's).")] = 2,
    compare_top: Annotated[str, typer.Option("--compare-top", help="Configurations to cross-validate, e.g. 1,2,3.")] = "2",
    curve: Annotated[str, typer.Option("--curve", help="Row fractions of the learning curve, e.g. 0.25,0.5 (none: '').")] = "0.25,0.5",
    epochs: Annotated[int, typer.Option("--epochs", min=1)] = 3,
    lr: Annotated[float, typer.Option("--lr", min=1e-9)] = 5e-5,
    batch_size: Annotated[int, typer.Option("--batch-size", min=1)] = 16,
    device: Annotated[str, typer.Option("--device", help="cpu, or cuda where there is one.")] = "cpu",
) -> None:
    """Fine-tune the MiniLM answerability reader: grouped cross-validated AUC per configuration and source, a
    learning curve, then the reader on every row."""
    from agentic_rag.reader.cross_encoder import PACKAGED_CROSS_READER
    from agentic_rag.retrieval.embeddings import packaged_embedding_path
    from agentic_rag.training.jobs import fit_cross_reader

    settings = load_settings(None, None)
    report_path = named_path(report, "--report") or Path(settings.paths.ARTIFACTS_DIR) / "training" / "reader.json"
    try:
        fractions = tuple(float(v) for v in curve.split(",") if v.strip())
    except ValueError:
        fail(f"--curve takes comma-separated fractions, e.g. 0.25,0.5; got {curve!r}")
    if any(not 0 < f < 1 for f in fractions):
        fail(f"--curve fractions lie between 0 and 1; got {curve!r}")
    result = fit_cross_reader(Path(pairs), named_path(out, "--out") or PACKAGED_CROSS_READER, report_path,
                              Path(base_dir) if base_dir else packaged_embedding_path(), base_key, top_layers,
                              _ints(compare_top, "--compare-top"), fractions, epochs, lr, batch_size, device, say=console.print)
    console.print(f"reader written; cross-validated AUC {result['reader']['cv_auc']}; report {report_path}", highlight=False)


@train_app.command("reader-score")
def reader_score_cmd(
    pairs: Annotated[str, typer.Option("--pairs", help="An evaluation split's pairs (`train pairs --data`).")],
    out: Annotated[str, typer.Option("--out", help="The report (JSON).")],
    reader: Annotated[Optional[str], typer.Option("--reader", help="A reader file (default: the shipped one).")] = None,
    probe_scores: Annotated[Optional[str], typer.Option("--probe-scores", help="The probe's {id: P(answerable)} on the "
                                                        "same rows (`probe-score --per-question`).")] = None,
) -> None:
    """A fitted MiniLM reader (and the probe beside it) on an evaluation split's pairs: AUC and refusal rates."""
    from agentic_rag.training.jobs import cross_reader_scores

    report_path = named_path(out, "--out")
    result = cross_reader_scores(Path(pairs), Path(reader) if reader else None, Path(probe_scores) if probe_scores else None)
    _write_json(report_path, result)
    console.print(json.dumps(result, indent=1), highlight=False)


@train_app.command("decision")
def decision_cmd(
    dataset: Annotated[Optional[str], typer.Option("--dataset", help="A development split (never the test split).")] = None,
    run: Annotated[Optional[Path], typer.Option("--run", help="Fit on this agent run folder, not a new run.")] = None,
    n: Annotated[Optional[int], typer.Option("--n", min=1)] = None,
    seed: Annotated[Optional[int], typer.Option("--seed", help="With --n: a reproducible sample of n.")] = None,
    out: Annotated[Optional[str], typer.Option("--out")] = None,
    decision_file: Annotated[Optional[str], typer.Option("--decision-file", help="Where the decision file goes "
                                                         "(default OUT/decision.json).")] = None,
    risk: Annotated[Optional[str], typer.Option("--risk", help="Risks to calibrate on the fit's drafts, e.g. 0.1,0.2,0.3.")] = None,
    delta: Annotated[float, typer.Option("--delta", help="With --risk: the chance the promise may fail.")] = 0.1,
    preset: PresetOpt = None,
    override: OverrideOpt = None,
) -> None:
    """Run the agent once on a development split (or read a run) and fit one calibrated P(the answer is right |
    signals): the decision GATE_POLICY=fitted reads."""
    from agentic_rag.configuration import SettingsError
    from agentic_rag.datasets.crag import DataError
    from agentic_rag.training.decision import calibrate_fit, to_markdown

    folder, target = named_path(out, "--out"), output_file(decision_file, "--decision-file")
    risks = risk_option(risk, delta)
    settings = load_settings(preset, override, needs_llm=True)
    folder = folder or Path(settings.paths.ARTIFACTS_DIR) / "calibration" / "decision"
    try:
        report = calibrate_fit(settings, folder, dataset, run, n, seed, target, risks=risks)
    except (ValueError, SettingsError, DataError, FileNotFoundError) as exc:  # DevSplitError is a ValueError
        fail(str(exc))
    replace_file(folder / "fit.json", json.dumps(report, indent=2))
    console.print(to_markdown(report), highlight=False)
