"""The ``agentic-rag`` command line."""

from __future__ import annotations

import json
import sys
import time
import warnings
from pathlib import Path
from typing import Annotated, Optional

import typer
from rich.markup import escape
from rich.table import Table

from agentic_rag.configuration import RemovedSettingWarning, Settings, SettingsError, env_warnings
from agentic_rag.datasets.crag import BadRecordWarner, DataError, find_record
from agentic_rag.errors import UserError
from agentic_rag.events import clip
from agentic_rag.redact import redact_text
from agentic_rag.state import citation_status
from agentic_rag.terminal import SafeConsole
from graphs import get_graph  # the app layer: importing it also registers the graphs with the runner

# every view of dataset text goes through these: a control character in a query or page is shown, not obeyed
console = SafeConsole(width=None if sys.stdout.isatty() else 200)
err = SafeConsole(stderr=True)


class _UserErrorsAsOneLine(typer.core.TyperGroup):
    """Any command's ``UserError`` ends the process as one labelled line with the error's exit code,
    so commands catch only the errors they add something to (a resume hint), not each kind in turn."""

    def invoke(self, ctx):
        try:
            return super().invoke(ctx)
        except UserError as exc:
            err.print(f"[red]{exc.label}:[/] {escape(redact_text(str(exc)))}", soft_wrap=True, highlight=False)
            raise typer.Exit(exc.exit_code) from None


app = typer.Typer(cls=_UserErrorsAsOneLine, add_completion=False, no_args_is_help=True,
                  help="Honest, budget-aware agentic RAG.")
prepare_app = typer.Typer(no_args_is_help=True, help="Convert datasets to CRAG's JSON-lines format.")
app.add_typer(prepare_app, name="prepare")

OverrideOpt = Annotated[Optional[list[str]], typer.Option("--override", "-o", help="KEY=VALUE or section.KEY=VALUE setting (repeatable).")]
PresetOpt = Annotated[Optional[str], typer.Option("--preset", help="Named preset or JSON file of settings.")]
DatasetOpt = Annotated[Optional[str], typer.Option("--dataset", help="CRAG .jsonl[.bz2] file, or 'example'.")]
IdOpt = Annotated[Optional[str], typer.Option("--id", help="interaction_id (or 0-based index) in --dataset.")]
IndexOpt = Annotated[Optional[Path], typer.Option("--index", help="Corpus index folder built by `ingest`.")]
ExecutorOpt = Annotated[str, typer.Option("--executor", help="local (threads here) or ray (Ray workers; extra 'ray').")]
AddressOpt = Annotated[Optional[str], typer.Option("--address", help="With --executor ray: HOST:PORT of a running "
                                                   "Ray cluster (default: start a local instance).")]


def _settings(preset: str | None, overrides: list[str] | None, needs_llm: bool = False) -> Settings:
    with warnings.catch_warnings(record=True) as removed:  # a removed setting or preset: one line each
        warnings.simplefilter("always", RemovedSettingWarning)
        settings = Settings.load(preset=preset, overrides=overrides or [])  # a SettingsError: one line, by the group
    for other in [w for w in removed if w.category is not RemovedSettingWarning]:
        warnings.warn_explicit(other.message, other.category, other.filename, other.lineno)
    warnings.filterwarnings("ignore", category=RemovedSettingWarning)  # said once, here; not again on a reread
    for warning in [*dict.fromkeys(str(w.message) for w in removed if w.category is RemovedSettingWarning),
                    *env_warnings(settings)]:
        err.print(f"[yellow]warning:[/] {warning}", soft_wrap=True, highlight=False)
    if needs_llm and (problem := settings.backend_error()):
        _fail(problem)
    if settings.agent.EXTENSIONS or settings.agent.EXTENSION_SETTINGS:  # a mistake shows now, not in the middle of a run
        get_graph("agent", settings)
    return settings


def _fail(msg: str, code: int = 2) -> None:
    # one line whatever the terminal width (greppable), the message's own brackets not read as markup,
    # and no key that a URL in it carries
    err.print(f"[red]error:[/] {escape(redact_text(msg))}", soft_wrap=True, highlight=False)
    raise typer.Exit(code)


def _source(dataset: str | None, record_id: str | None, index: Path | None, settings: Settings):
    """(record, index_dir) for a question: a dataset record's own pages, or a corpus index."""
    if index is not None:
        if not (index / "manifest.json").is_file():
            _fail(f"{index} is not an index folder; build one with `agentic-rag ingest`")
        return None, index
    if dataset is None:
        dataset = "example"
    if record_id is None:
        _fail("give --id with --dataset (or --index for a corpus index)")
    warner = BadRecordWarner(settings.eval.BAD_RECORDS_SHOWN)
    try:
        return find_record(dataset, record_id, on_bad=settings.eval.BAD_RECORDS, on_bad_record=warner), None
    except DataError as exc:
        _fail(str(exc))
    finally:
        warner.finish()


@app.command()
def search(
    query: str,
    dataset: DatasetOpt = None,
    record_id: IdOpt = None,
    index: IndexOpt = None,
    k: Annotated[Optional[int], typer.Option("--k", help="Passages to return.")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON.")] = False,
    preset: PresetOpt = None,
    override: OverrideOpt = None,
) -> None:
    """Hybrid search (FAISS + BM25, RRF, MMR) with the raw vector, BM25 and fused scores."""
    from agentic_rag.retrievers.source import resolve_index, retrieve
    from agentic_rag.runner import graph_input

    settings = _settings(preset, override)
    record, index_dir = _source(dataset, record_id, index, settings)
    try:
        idx = resolve_index(graph_input(query, record, index_dir), settings)
    except ValueError as exc:  # a damaged index folder
        _fail(str(exc))
    passages = retrieve(idx, query, settings, k=k)
    if as_json:
        print(json.dumps([p.to_dict() for p in passages], indent=2, ensure_ascii=False))
        return
    table = Table(title=f"{len(passages)} passages for: {query}", show_lines=True)
    for col in ("#", "vector", "bm25", "fused", "page", "text"):
        table.add_column(col, overflow="fold")
    for p in passages:
        d = p.to_dict()
        table.add_row(
            str(d["rank"]), f"{d['vector_score']:.3f}", f"{d['bm25_score']:.2f}", f"{d['fused_score']:.4f}",
            clip(d["page_name"], 40), clip(d["text"].replace("\n", " "), 300),
        )
    console.print(table)


@app.command()
def ask(
    question: Annotated[Optional[str], typer.Argument(help="The question (default: the record's own query).")] = None,
    dataset: DatasetOpt = None,
    record_id: IdOpt = None,
    index: IndexOpt = None,
    system: Annotated[str, typer.Option("--system", help="agent or baseline.")] = "agent",
    as_json: Annotated[bool, typer.Option("--json", help="Print the full answer record as JSON.")] = False,
    debug: Annotated[bool, typer.Option("--debug", help="Print each node's output as the graph runs.")] = False,
    select: Annotated[Optional[str], typer.Option("--select", help="Answer from this option of an 'ambiguous' reply.")] = None,
    preset: PresetOpt = None,
    override: OverrideOpt = None,
) -> None:
    """Answer one question from a dataset record's pages or a corpus index."""
    from agentic_rag.runner import answer
    from agentic_rag.anchors.inputs import question_too_long
    from agentic_rag.trace.live import node_printer

    settings = _settings(preset, override, needs_llm=True)
    record, index_dir = _source(dataset, record_id, index, settings)
    if record is None and not question:
        _fail("give a QUESTION with --index")
    if too_long := question_too_long(question or record.query, settings):
        _fail(f"the question {too_long}")
    try:
        result = answer(
            system, settings, question=question, record=record, index_dir=index_dir,
            on_update=None if as_json else node_printer(console, err, settings, debug), selected_option=select,
        )
    except ValueError as exc:
        _fail(str(exc))
    if as_json:
        print(json.dumps(result.model_dump(), indent=2, ensure_ascii=False))
        return
    if debug:
        err.print_json(data={"latency_by_node_ms": result.latency_by_node_ms, "tokens": result.tokens})
        err.print(f"telemetry: {result.trace}")
    console.print(f"[bold]{result.question}[/]")
    console.print(f"status: {result.status}  reason: {result.reason}")
    console.print(f"answer: {result.answer}")
    for c in result.citations:
        console.print(f"  [{c.n}] {c.page_name} <{c.page_url}> ({citation_status(c.model_dump())}) {clip(c.quote, 160)}",
                      markup=False)
    for o in result.options:
        console.print(f"  option {o['id']}: {o['signature']} (best score {o['best_score']}): {clip(o['anchor_passage']['text'], 120)}")
    console.print(f"tokens: {result.tokens.get('total', 0)}  llm calls: {result.llm_calls}  latency: {result.latency_ms:.0f} ms")


@app.command()
def ingest(
    source: Annotated[str, typer.Argument(help="CRAG dataset, prepared crag_corpus.jsonl, folder, or 'example'.")],
    out: Annotated[Optional[Path], typer.Option("--out", help="Index folder (default artifacts/index/NAME).")] = None,
    executor: ExecutorOpt = "local",
    workers: Annotated[int, typer.Option("--workers", help="With --executor ray: Ray workers.")] = 1,
    address: AddressOpt = None,
    preset: PresetOpt = None,
    override: OverrideOpt = None,
) -> None:
    """Build a persistent FAISS + BM25 corpus index."""
    from agentic_rag.ingest.ingest import build_corpus_index

    settings = _settings(preset, override)
    pool = _executor(executor, workers, settings, address)
    out = out or Path(settings.paths.ARTIFACTS_DIR) / "index" / Path(source).name.split(".")[0]
    stats = build_corpus_index(source, out, settings, executor=pool if pool.name == "ray" else None)
    console.print_json(data=stats)


@app.command("eval")
def eval_cmd(
    dataset: Annotated[str, typer.Option("--dataset", help="CRAG .jsonl[.bz2] or 'example'.")] = "example",
    system: Annotated[str, typer.Option("--system", help="agent or baseline.")] = "agent",
    n: Annotated[Optional[int], typer.Option("--n", help="First N questions.")] = None,
    out: Annotated[Optional[Path], typer.Option("--out", help="Run folder.")] = None,
    resume: Annotated[bool, typer.Option("--resume", help="Skip questions already in results.jsonl.")] = False,
    overwrite: Annotated[bool, typer.Option("--overwrite", help="Replace the results a run folder already holds.")] = False,
    workers: Annotated[int, typer.Option("--workers", help="Questions answered in parallel (threads, or Ray workers).")] = 1,
    executor: ExecutorOpt = "local",
    address: AddressOpt = None,
    seed: Annotated[Optional[int], typer.Option("--seed", help="With --n: a reproducible random sample.")] = None,
    checkpoints: Annotated[bool, typer.Option("--checkpoints", help="Keep every graph step in RUN/checkpoints.sqlite (`trace --steps`).")] = False,
    preset: PresetOpt = None,
    override: OverrideOpt = None,
) -> None:
    """Run a system over a dataset; print a per-question table and the summary."""
    from agentic_rag.eval.executors import ExecutorError
    from agentic_rag.eval.resume import exit_interrupted, interrupt_on_sigterm, resume_command
    from agentic_rag.eval.runner import run_eval

    if resume and overwrite:
        _fail("give --resume or --overwrite, not both")
    interrupt_on_sigterm()
    settings = _settings(preset, override, needs_llm=True)
    if executor == "ray" and (checkpoints or settings.paths.CHECKPOINT_PATH is not None):
        _fail("checkpoints are written where the graph runs: use --executor local to keep them")
    pool = _executor(executor, workers, settings, address)
    out = out or Path(settings.paths.ARTIFACTS_DIR) / "runs" / f"{system}-{time.strftime('%Y%m%d-%H%M%S')}"
    if checkpoints and settings.paths.CHECKPOINT_PATH is None:
        settings = settings.replace(CHECKPOINT_PATH=str(out / "checkpoints.sqlite"))
    try:
        res = run_eval(dataset, system, settings, out, n=n, resume=resume, workers=workers, seed=seed, executor=pool,
                       overwrite=overwrite)
    except KeyboardInterrupt as exc:
        exit_interrupted(exc, out, _prog(), sys.argv[1:])
    except ExecutorError as exc:
        _fail(f"{exc}; resume with: {resume_command(_prog(), sys.argv[1:], out)}")
    except UserError:
        raise  # one line, by the command group (a RunFolderError is an OSError too)
    except OSError as exc:  # a file of the run cannot be written (full disk, removed folder)
        what = f"{exc.strerror or exc}: {exc.filename}" if exc.filename else str(exc)
        _fail(f"{what}; the rows written so far are kept: {resume_command(_prog(), sys.argv[1:], out)}")
    table = Table(title=f"{system} on {dataset}", show_lines=True)
    for col in ("question", "gold", "answer", "status", "reason", "judge", "tokens", "ms"):
        table.add_column(col, overflow="fold")
    for r in res["rows"]:
        colour = {"accurate": "green", "incorrect": "red", "missing": "yellow"}[r["judgement"]]
        table.add_row(
            clip(r["query"], 70), clip(str(r["gold"]), 50), clip(r["prediction"], 110), r["status"], r["reason"],
            f"[{colour}]{r['judgement']}[/]", str(r["tokens"].get("total", 0)), f"{r['latency_ms']:.0f}",
        )
    console.print(table)
    from agentic_rag.eval.metrics import metric_label

    summary = Table(title="summary")
    summary.add_column("metric")
    summary.add_column("value")
    summary.add_column("meaning")
    for key, value in res["summary"].items():
        if not isinstance(value, dict):
            summary.add_row(escape(key), escape(str(value)), escape(metric_label(key)))
    console.print(summary)
    if res["summary"].get("unusable_gold"):
        err.print(f"[yellow]warning:[/] {res['summary']['unusable_gold']} questions have a gold answer that cannot score "
                  f"an answer (empty or 'nan') and are left out of the metrics: {', '.join(res['summary']['unusable_gold_ids'])}",
                  soft_wrap=True, highlight=False, markup=True)
    console.print(f"results in {res['out']}")
    if unavailable := res["summary"].get("llm_unavailable"):
        err.print(f"[yellow]warning:[/] {unavailable} of {res['summary']['n']} questions ended as ABSTAIN_LLM_UNAVAILABLE "
                  "(the model could not be reached; their rows say why): rerun them into a new --out once it answers",
                  soft_wrap=True, highlight=False)

    from agentic_rag.timing import format_startup, startup_report

    if startup_report():  # paid once by this process, inside the first questions' latency
        err.print(format_startup(startup_report()), soft_wrap=True)


def _executor(name: str, workers: int, settings: Settings, address: str | None):
    """Where `eval` and `ingest` run their work (a mistake in the options is one line, before any work)."""
    from agentic_rag.eval.executors import make_executor

    return make_executor(name, workers, settings, address)


def _prog() -> str:
    """How this command was started, for the resume line it prints."""
    return "agentic-rag" if Path(sys.argv[0]).name == "agentic-rag" else "python -m agentic_rag.cli"


@app.command("compare")
def compare_cmd(
    runs: Annotated[list[Path], typer.Argument(help="Run folders; the first is the reference.")],
    out: Annotated[Optional[Path], typer.Option("--out", help="Write the markdown report here.")] = None,
    title: Annotated[str, typer.Option("--title")] = "Comparison",
) -> None:
    """Side-by-side summary, per-question differences and a paired bootstrap CI on the score."""
    from agentic_rag.eval.compare import SUMMARY_KEYS, compare, paired_sentence, to_markdown

    if len(runs) < 2:
        _fail("give at least two run folders")
    try:
        result = compare(runs)
    except FileNotFoundError as exc:
        _fail(str(exc))
    if out:
        from agentic_rag.eval.compare import write_plots

        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(to_markdown(result, title, write_plots(result, out.parent)))
        console.print(f"written {out}")
    from agentic_rag.eval.metrics import metric_label

    table = Table(title=title)
    table.add_column("metric")
    for r in result["runs"]:
        table.add_column(r["name"])
    table.add_column("meaning")
    for key in SUMMARY_KEYS:
        table.add_row(key, *[str(r["summary"].get(key, "")) for r in result["runs"]], escape(metric_label(key)))
    console.print(table)
    for p in result["paired"]:
        console.print(paired_sentence(p), highlight=False)


@app.command("calibrate")
def calibrate_cmd(
    dataset: Annotated[str, typer.Option("--dataset", help="A development split (never the test split).")],
    param: Annotated[str, typer.Option("--param", help="Setting to sweep, e.g. RETRIEVAL_MIN_SCORE.")],
    values: Annotated[str, typer.Option("--values", help="Comma-separated values, e.g. 0.2,0.3,0.4.")],
    system: Annotated[str, typer.Option("--system")] = "agent",
    n: Annotated[Optional[int], typer.Option("--n")] = None,
    out: Annotated[Optional[Path], typer.Option("--out")] = None,
    max_false_refusal: Annotated[float, typer.Option("--max-false-refusal")] = 0.15,
    preset: PresetOpt = None,
    override: OverrideOpt = None,
) -> None:
    """Sweep a threshold; report accuracy, refusal and false-refusal rates and the CRAG score per value."""
    from agentic_rag.eval.calibrate import calibrate, parse_values, to_markdown

    settings = _settings(preset, override, needs_llm=True)
    out = out or Path(settings.paths.ARTIFACTS_DIR) / "calibration" / param.upper()
    try:
        report = calibrate(dataset, param, parse_values(param.upper(), values), settings, out, system, n, max_false_refusal)
    except (ValueError, SettingsError, DataError) as exc:
        _fail(str(exc))
    console.print(to_markdown(report))
    console.print(f"sweep written to {out}")


@app.command("graph")
def graph_cmd(
    system: Annotated[str, typer.Option("--system", help="agent or baseline.")] = "agent",
    fmt: Annotated[str, typer.Option("--format", help="mermaid, ascii, dot or png (png needs --out).")] = "mermaid",
    out: Annotated[Optional[Path], typer.Option("--out", help="Write the drawing to this file.")] = None,
    preset: PresetOpt = None,
    override: OverrideOpt = None,
) -> None:
    """Draw a graph's shape offline: Mermaid or DOT text, ASCII art, or a PNG (Graphviz where installed).
    With EXTENSIONS set, the agent is drawn with its extension nodes in place."""
    from agentic_rag.trace.draw import BINARY_FORMATS, DrawError, draw

    settings = _settings(preset, override)
    if fmt in BINARY_FORMATS and out is None:
        _fail(f"--format {fmt} writes a file: give --out FILE")
    try:
        drawing = draw(get_graph(system, settings), fmt)
    except (ValueError, DrawError) as exc:
        _fail(str(exc))
    if out is None:
        print(drawing)
        return
    out.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(drawing, bytes):
        out.write_bytes(drawing)
    else:
        out.write_text(drawing)
    console.print(f"written {out}")


@app.command("trace")
def trace_cmd(
    run_dir: Annotated[Path, typer.Argument(help="A run folder written by `eval`.")],
    qid: Annotated[Optional[str], typer.Option("--id", help="One question (id or 0-based row): its timeline.")] = None,
    html_out: Annotated[Optional[Path], typer.Option("--html", help="Write a self-contained HTML page of the run.")] = None,
    brief: Annotated[bool, typer.Option("--brief", help="With --id: one line per node, no passages or checks.")] = False,
    steps: Annotated[bool, typer.Option("--steps", help="With --id: list the checkpointed steps.")] = False,
    step: Annotated[Optional[int], typer.Option("--step", help="With --id: the graph state at this checkpointed step.")] = None,
    otlp: Annotated[Optional[str], typer.Option("--otlp", help="Send the run's spans (or --id's) to this OTLP/HTTP collector (docs/tracing.md).")] = None,
) -> None:
    """Inspect a run: a table of its questions, one question node by node, its checkpoints, or an HTML page."""
    from agentic_rag.trace.run import TraceError, load_run

    try:
        run = load_run(run_dir)
        if otlp is not None:
            from agentic_rag.trace.otel import send_cli

            console.print(send_cli(run, otlp, qid))
            return
        if html_out is not None:
            from agentic_rag.trace.html import write_html

            console.print(f"written {write_html(run, html_out)}")
            return
        if steps or step is not None:
            if qid is None:
                _fail("--steps and --step need --id QUESTION")
            _print_steps(run, run.row(qid)["id"], step)
            return
        if qid is not None:
            from agentic_rag.trace.text import print_question

            print_question(console, run, qid, detail=not brief)
            return
    except TraceError as exc:
        _fail(str(exc))
    from agentic_rag.trace.text import run_table

    console.print(run_table(run))


def _print_steps(run, qid: str, step: int | None) -> None:
    """The checkpointed steps of one question, or the state at one of them, in the graph the run used."""
    from agentic_rag.trace.run import TraceError
    from agentic_rag.trace.steps import checkpoint_file, print_step, print_steps

    path = checkpoint_file(run)
    extended = {k: run.settings[k] for k in ("EXTENSIONS", "EXTENSION_SETTINGS") if run.settings.get(k)}
    try:  # the graph the run used, extensions included
        graph = get_graph(run.system or "agent", Settings.load(overrides=extended) if extended else None)
    except SettingsError as exc:
        raise TraceError(f"the run's graph cannot be rebuilt: {exc}") from None
    if step is None:
        print_steps(console, graph, path, qid)
    else:
        print_step(console, err, graph, path, qid, step, run.settings.get("TRACE_TEXT_CHARS", 240))


@app.command("settings")
def show_settings(
    preset: PresetOpt = None,
    override: OverrideOpt = None,
    markdown: Annotated[bool, typer.Option("--markdown", help="One markdown table per section (docs/configuration.md).")] = False,
) -> None:
    """Print every setting by section: its value, unit, where the value comes from, and meaning."""
    from agentic_rag.configuration import SECTIONS, meaning_of, setting_sources, unit_of

    settings = _settings(preset, override)
    values, sources = settings.public_dump(), setting_sources(preset, override or [])
    rows = [(section, name, str(values[name]), unit_of(field), sources[name], meaning_of(field))
            for section, model in SECTIONS.items() for name, field in model.model_fields.items()]
    if settings.agent.EXTENSIONS:  # each configured extension's own settings, as EXTENSION_SETTINGS sets them
        from agentic_rag.extensions import load_extensions

        for ext in load_extensions(settings):
            options = ext.options(settings)
            given = settings.agent.EXTENSION_SETTINGS.get(ext.name, {})
            for name, field in (type(options).model_fields.items() if options is not None else ()):
                rows.append(("extension", f"{ext.name}.{name}", str(getattr(options, name)), unit_of(field),
                             sources["EXTENSION_SETTINGS"] if name in given else "default", meaning_of(field)))
    if markdown:
        typer.echo(_settings_markdown(rows))
        return
    table = Table(title="settings")
    for col in ("section", "name", "value", "unit", "source", "meaning"):
        table.add_column(col, overflow="fold")
    for row in rows:
        table.add_row(*map(escape, row))
    console.print(table)


def _settings_markdown(rows: list[tuple[str, ...]]) -> str:
    """The settings as markdown, one table per section, with the section's own description; paths
    under the user cache are written from ``<user cache>`` and others under the home folder from
    ``~``, so the tables read the same on every machine and for every user's environment."""
    from agentic_rag.configuration import FIELD_SECTIONS, SECTIONS, USER_CACHE, unit_of
    from agentic_rag.gate.checks import checks_markdown

    home, cache = str(Path.home()), str(USER_CACHE)
    out: list[str] = []
    for section in dict.fromkeys(r[0] for r in rows):
        doc = SECTIONS[section].__doc__ if section in SECTIONS else "The configured extensions' own settings."
        out += [f"### {section}", "", " ".join((doc or "").split()), "",
                "| setting | value | unit | meaning |", "|---|---|---|---|"]
        for _, name, value, unit, _, meaning in (r for r in rows if r[0] == section):
            if value.startswith(cache):
                value = "<user cache>" + value[len(cache):]
            elif value.startswith(home):
                value = "~" + value[len(home):]
            cells = [f"`{name}`", f"`{value}`", unit, meaning]
            out.append("| " + " | ".join(c.replace("|", "\\|") for c in cells) + " |")
        out.append("")
    units = {name: unit_of(SECTIONS[section].model_fields[name]) for name, section in FIELD_SECTIONS.items()}
    out += ["### checks", "", "What each threshold is held against (gate/checks.py): a reading passes when it reaches "
            "its setting; a check whose on-switch is off does not apply.", "", checks_markdown(units), ""]
    return "\n".join(out).rstrip() + "\n"


# -- prepare -------------------------------------------------------------------------------------
@prepare_app.command("crag")
def prepare_crag_cmd(
    input: Annotated[Path, typer.Option("--input", help="A CRAG .jsonl[.bz2] file, e.g. the release's crag_task_1_dev_v4.jsonl.bz2.")],
    out: Annotated[Path, typer.Option("--out")] = Path("data"),
    split: Annotated[Optional[str], typer.Option("--split")] = None,
    static_only: Annotated[bool, typer.Option("--static-only")] = False,
    n: Annotated[Optional[int], typer.Option("--n")] = None,
    seed: Annotated[int, typer.Option("--seed")] = 0,
) -> None:
    """CRAG file -> question file (with pages) + deduplicated page corpus."""
    from agentic_rag.datasets.prepare import prepare_crag

    _run_prepare(lambda: prepare_crag(input, out, split=split, static_only=static_only, n=n, seed=seed))


@prepare_app.command("squad2")
def prepare_squad2_cmd(
    input: Annotated[Path, typer.Option("--input", help="SQuAD 2.0 questions with their paragraphs, a JSON object a line.")],
    out: Annotated[Path, typer.Option("--out")] = Path("data/squad2.jsonl"),
    n: Annotated[Optional[int], typer.Option("--n")] = None,
    seed: Annotated[int, typer.Option("--seed")] = 0,
) -> None:
    """SQuAD 2.0 -> CRAG format (own paragraph + others of the article; unanswerable -> "i don't know")."""
    from agentic_rag.datasets.prepare import prepare_squad2

    _run_prepare(lambda: prepare_squad2(input, out, n=n, seed=seed))


@prepare_app.command("rgb")
def prepare_rgb_cmd(
    input: Annotated[Path, typer.Option("--input", help="RGB's English questions (en_fact.json), a JSON object a line.")],
    out: Annotated[Path, typer.Option("--out")] = Path("data/rgb.jsonl"),
    variants: Annotated[str, typer.Option("--variants", help="Comma list of answerable,negative,counterfactual.")] = "answerable,negative,counterfactual",
    n: Annotated[Optional[int], typer.Option("--n")] = None,
    seed: Annotated[int, typer.Option("--seed")] = 0,
) -> None:
    """RGB -> CRAG format, three variants per question."""
    from agentic_rag.datasets.prepare import prepare_rgb

    names = tuple(v.strip() for v in variants.split(",") if v.strip())
    _run_prepare(lambda: prepare_rgb(input, out, variants=names, n=n, seed=seed))


@prepare_app.command("nq")
def prepare_nq_cmd(
    input: Annotated[Path, typer.Option("--input", help="NQ-open questions with their oracle passage, a JSON object a line.")],
    out: Annotated[Path, typer.Option("--out")] = Path("data/nq.jsonl"),
    n: Annotated[Optional[int], typer.Option("--n")] = None,
    seed: Annotated[int, typer.Option("--seed")] = 0,
) -> None:
    """Natural Questions (open, oracle passage) -> CRAG format."""
    from agentic_rag.datasets.prepare import prepare_nq

    _run_prepare(lambda: prepare_nq(input, out, n=n, seed=seed))


def _run_prepare(fn) -> None:
    try:
        result = fn()
    except (DataError, FileNotFoundError) as exc:
        _fail(str(exc))
    console.print_json(data=_jsonable(result))


def _jsonable(obj):
    return json.loads(json.dumps(obj, default=str))


def main() -> None:  # pragma: no cover - console entry
    app()


if __name__ == "__main__":  # pragma: no cover
    sys.exit(app())
