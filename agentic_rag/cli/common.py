"""What every command shares: the app and its one-line errors, the consoles, the options, settings loading."""

from __future__ import annotations

import sys
import warnings
from contextlib import contextmanager
from pathlib import Path
from typing import Annotated, Iterator, Optional

import typer
from rich.markup import escape

from agentic_rag.configuration import RemovedSettingWarning, Settings, env_warnings
from agentic_rag.datasets.crag import BadRecordWarner, DataError, find_record
from agentic_rag.errors import UserError, writable_folder
from agentic_rag.redact import redact_text
from agentic_rag.terminal import SafeConsole
from graphs import get_graph  # noqa: F401  (the app layer: importing it registers the graphs with the runner)

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
IdOpt = Annotated[Optional[str], typer.Option("--id", help="interaction_id in --dataset, or @N for its record at 0-based position N.")]
IndexOpt = Annotated[Optional[Path], typer.Option("--index", help="Corpus index folder built by `ingest`.")]
ExecutorOpt = Annotated[str, typer.Option("--executor", help="local (threads here) or ray (Ray workers; extra 'ray').")]
AddressOpt = Annotated[Optional[str], typer.Option("--address", help="With --executor ray: HOST:PORT of a running "
                                                   "Ray cluster (default: start a local instance).")]


def load_settings(preset: str | None, overrides: list[str] | None, needs_llm: bool = False) -> Settings:
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
        fail(problem)
    if needs_llm:
        _model_cache_writable(settings)
    if needs_llm:  # a decision asked for (GATE_POLICY=fitted or a DECISION_FILE) that cannot be read fails now, in one line
        from agentic_rag.baug.fitted import decision_in_force

        try:
            decision_in_force(settings)
        except (ValueError, FileNotFoundError) as exc:
            fail(str(exc))
    if settings.agent.EXTENSIONS or settings.agent.EXTENSION_SETTINGS:  # a mistake shows now, not in the middle of a run
        get_graph("agent", settings)
    return settings


def _model_cache_writable(settings: Settings) -> None:
    """The packaged model a question loads is converted into MODEL_CACHE_DIR the first time, after that
    question's retrieval: a cache that cannot take it fails now, in one line. With the openai backend the
    0.5B's tokenizer still counts every prompt (llm.factory.get_tokenizer); a converted model is only read."""
    from agentic_rag.llm.packaged import FAST_MODEL, PACKAGED_MODELS, converted_source_key

    model = PACKAGED_MODELS.get(settings.llm.LLM_MODEL) if settings.llm.LLM_BACKEND == "local" else FAST_MODEL
    if model is None:  # a model folder of the user's own: nothing is converted
        return
    cache = Path(settings.paths.MODEL_CACHE_DIR).expanduser()
    try:
        converted = converted_source_key(cache / model.converted_dir) == model.sha256
    except OSError:  # a cache path under a file: writable_folder says so
        converted = False
    if not converted:
        writable_folder(cache, f"MODEL_CACHE_DIR {cache}")


def answer_folders_writable(settings: Settings, system: str | None, record) -> None:
    """The folders answering a question writes, each shown to take a file before the work: the telemetry of
    BAUG's decisions (with a ``system`` to answer; a bare search writes none) and, for a record's own pages,
    the index cache and its chunk vectors. An unwritable ARTIFACTS_DIR (the default `artifacts` of a
    read-only working folder) is then one line naming the setting, as eval's run folder is."""
    from agentic_rag.retrieval.embedding_cache import cache_folder
    from agentic_rag.telemetry import telemetry_path

    places = {}
    if system is not None:
        places[telemetry_path(settings, system).parent] = "the telemetry folder {} (TELEMETRY_PATH; by default under ARTIFACTS_DIR)"
    if record is not None:
        places[settings.cache_dir] = "the index cache {} (INDEX_CACHE_DIR; by default under ARTIFACTS_DIR)"
        if settings.retrieval.EMBEDDING_CACHE:
            places.setdefault(cache_folder(settings), "the chunk-vector cache {} (EMBEDDING_CACHE_DIR; by default the index cache)")
    for folder, what in places.items():
        writable_folder(folder, what.format(folder))


@contextmanager
def storage_errors(kept: str) -> Iterator[None]:
    """The one line of a command whose files could not be written for want of storage (a full, failing or
    read-only disk, a folder removed under it; SQLite's own errors arrive as ``OSError`` too,
    ``errors.sqlite_storage``): what failed, where, and ``kept``, what is kept and how to go on."""
    try:
        yield
    except UserError:
        raise  # says itself, by the command group
    except OSError as exc:
        what = exc.strerror or str(exc)
        fail(f"{what}: {exc.filename}; {kept}" if exc.filename else f"{what}; {kept}")


def fail(msg: str, code: int = 2) -> None:
    # one line whatever the terminal width (greppable), the message's own brackets not read as markup,
    # and no key that a URL in it carries
    err.print(f"[red]error:[/] {escape(redact_text(msg))}", soft_wrap=True, highlight=False)
    raise typer.Exit(code)


def warn_missing_signals(gaps: dict[str, str], when: str) -> None:
    """A warning line for the model signals a run lacks (eval/provenance.py): said, never silent."""
    from agentic_rag.eval.provenance import gap_warning

    if line := gap_warning(gaps, when):
        err.print(f"[yellow]warning:[/] {escape(line)}", soft_wrap=True, highlight=False)


def say_model(settings: Settings) -> None:
    """One line at the start of a local run: the dtype its model computes in and why (LLM_DTYPE)."""
    from agentic_rag.llm.dtype import local_dtype

    if settings.llm.LLM_BACKEND == "local":
        choice = local_dtype(settings)
        err.print(f"[dim]note:[/] the model computes in {choice.dtype} ({escape(choice.reason)}; LLM_DTYPE)",
                  soft_wrap=True, highlight=False)


def say_reader(settings: Settings) -> None:
    """One line at the start of an agent run whose answerability is not read from the generation call."""
    from agentic_rag.eval.provenance import reader_note

    if line := reader_note(settings):
        err.print(f"[dim]note:[/] {escape(line)}", soft_wrap=True, highlight=False)


def say_risk(settings: Settings) -> None:
    """The risk a run or an answer promises (``RISK``), said once at its start, with its calibration set."""
    if settings.baug.RISK is None:
        return
    from agentic_rag.eval.provenance import decision_identity
    from agentic_rag.eval.risk_control import promise_line

    if risk := (decision_identity("agent", settings) or {}).get("risk"):
        err.print(f"[dim]risk:[/] {escape(promise_line(risk))}", soft_wrap=True, highlight=False)


def record_source(dataset: str | None, record_id: str | None, index: Path | None, settings: Settings):
    """(record, index_dir) for a question: a dataset record's own pages, or a corpus index."""
    if index is not None:
        if not (index / "manifest.json").is_file():
            fail(f"{index} is not an index folder; build one with `agentic-rag ingest`")
        return None, index
    if dataset is None:
        dataset = "example"
    if record_id is None:
        fail("give --id with --dataset (or --index for a corpus index)")
    warner = BadRecordWarner(settings.eval.BAD_RECORDS_SHOWN)
    try:
        return find_record(dataset, record_id, on_bad=settings.eval.BAD_RECORDS, on_bad_record=warner,
                           max_record_bytes=settings.eval.MAX_RECORD_BYTES), None
    except DataError as exc:
        fail(str(exc))
    finally:
        warner.finish()


def risk_option(risk: str | None, delta: float):
    """``--risk``/``--delta`` read as (risks, delta), or None without ``--risk``; a bad value is one line."""
    from agentic_rag.eval.risk_control import RiskCalibrationError, check_delta, parse_risks

    try:
        return (parse_risks(risk), check_delta(delta)) if risk is not None else None
    except RiskCalibrationError as exc:
        fail(str(exc))


def executor_for(name: str, workers: int, settings: Settings, address: str | None):
    """Where `eval` and `ingest` run their work (a mistake in the options is one line, before any work)."""
    from agentic_rag.eval.executors import make_executor

    return make_executor(name, workers, settings, address)


def prog_name() -> str:
    """How this command was started, for the resume line it prints."""
    return "agentic-rag" if Path(sys.argv[0]).name == "agentic-rag" else "python -m agentic_rag.cli"
