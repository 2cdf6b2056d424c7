"""Commands that answer: `search`, `ask`, `ingest`, `eval`, and `calibrate` (which answers a development split)."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path
from typing import Annotated, Optional

import typer
from rich.markup import escape
from rich.table import Table

from agentic_rag.baug.chain import hop_line
from agentic_rag.cli.common import (
    AddressOpt,
    DatasetOpt,
    ExecutorOpt,
    IdOpt,
    IndexOpt,
    OverrideOpt,
    PresetOpt,
    answer_folders_writable,
    app,
    console,
    err,
    executor_for,
    fail,
    load_settings,
    prog_name,
    record_source,
    risk_option,
    say_model,
    say_reader,
    say_risk,
    storage_errors,
    warn_missing_signals,
)
from agentic_rag.configuration import SettingsError
from agentic_rag.datasets.crag import DataError
from agentic_rag.errors import named_path, output_file
from agentic_rag.eval.provenance import signal_gaps, signals_unavailable
from agentic_rag.events import clip
from agentic_rag.state import citation_status


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
    from agentic_rag.runner import graph_input
    from agentic_rag.workers.source import resolve_index, retrieve

    settings = load_settings(preset, override)
    record, index_dir = record_source(dataset, record_id, index, settings)
    answer_folders_writable(settings, None, record)
    try:
        with storage_errors("nothing was searched; free space there, or point ARTIFACTS_DIR elsewhere"):
            idx = resolve_index(graph_input(query, record, index_dir), settings)
    except ValueError as exc:  # a damaged index folder
        fail(str(exc))
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
    from agentic_rag.anchors.inputs import question_too_long
    from agentic_rag.runner import answer
    from agentic_rag.trace.live import node_printer

    settings = load_settings(preset, override, needs_llm=True)
    say_model(settings)
    if system == "agent":
        say_reader(settings)
        say_risk(settings)
        warn_missing_signals(signals_unavailable(settings), "this answer will lack model signals")
    record, index_dir = record_source(dataset, record_id, index, settings)
    if record is None and not question:
        fail("give a QUESTION with --index")
    if too_long := question_too_long(question or record.query, settings):
        fail(f"the question {too_long}")
    answer_folders_writable(settings, system, record)
    try:
        with storage_errors("no answer was given; free space there, or point ARTIFACTS_DIR elsewhere"):
            result = answer(
                system, settings, question=question, record=record, index_dir=index_dir,
                on_update=None if as_json else node_printer(console, err, settings, debug), selected_option=select,
            )
    except ValueError as exc:
        fail(str(exc))
    if system == "agent":  # the same account as a run's, of a run of one
        warn_missing_signals(signal_gaps([{"draft": result.draft, "signals": result.signals}]), "the answer lacked model signals")
    if as_json:
        print(json.dumps(result.model_dump(), indent=2, ensure_ascii=False))
        return
    if debug:
        err.print_json(data={"latency_by_node_ms": result.latency_by_node_ms, "tokens": result.tokens})
        err.print(f"telemetry: {result.trace}")
    console.print(f"[bold]{result.question}[/]")
    console.print(f"status: {result.status}  reason: {result.reason}"
                  + (f"  P(right): {result.p_right:.2f}" if result.p_right is not None else ""))
    console.print(f"answer: {result.answer}")
    for c in result.citations:
        console.print(f"  [{c.n}] {c.page_name} <{c.page_url}> ({citation_status(c.model_dump())}) {clip(c.quote, 160)}",
                      markup=False)
    if result.chain:
        console.print("evidence chain:")
        for h in result.chain:
            console.print(f"  {hop_line(h, 160)}", markup=False)
    for o in result.options:
        console.print(f"  option {o['id']}: {o['signature']} (best score {o['best_score']}): {clip(o['anchor_passage']['text'], 120)}")
    console.print(f"tokens: {result.tokens.get('total', 0)}  llm calls: {result.llm_calls}  latency: {result.latency_ms:.0f} ms")


@app.command()
def ingest(
    source: Annotated[str, typer.Argument(help="CRAG dataset, prepared crag_corpus.jsonl, folder, or 'example'.")],
    out: Annotated[Optional[str], typer.Option("--out", help="Index folder (default artifacts/index/NAME).")] = None,
    executor: ExecutorOpt = "local",
    workers: Annotated[int, typer.Option("--workers", help="With --executor ray: Ray workers.")] = 1,
    address: AddressOpt = None,
    preset: PresetOpt = None,
    override: OverrideOpt = None,
) -> None:
    """Build a persistent FAISS + BM25 corpus index."""
    from agentic_rag.ingest.ingest import build_corpus_index

    out = named_path(out, "--out")
    settings = load_settings(preset, override)
    pool = executor_for(executor, workers, settings, address)
    out = out or Path(settings.paths.ARTIFACTS_DIR) / "index" / Path(source).name.split(".")[0]
    with storage_errors(f"{out} is left as it was"):
        stats = build_corpus_index(source, out, settings, executor=pool if pool.name == "ray" else None)
    console.print_json(data=stats)


@app.command("eval")
def eval_cmd(
    dataset: Annotated[str, typer.Option("--dataset", help="CRAG .jsonl[.bz2] or 'example'.")] = "example",
    system: Annotated[str, typer.Option("--system", help="agent or baseline.")] = "agent",
    n: Annotated[Optional[int], typer.Option("--n", help="First N questions.")] = None,
    out: Annotated[Optional[str], typer.Option("--out", help="Run folder.")] = None,
    resume: Annotated[bool, typer.Option("--resume", help="Skip questions already in results.jsonl.")] = False,
    overwrite: Annotated[bool, typer.Option("--overwrite", help="Replace the results a run folder already holds.")] = False,
    workers: Annotated[int, typer.Option("--workers", help="Questions answered in parallel (threads, or Ray workers).")] = 1,
    executor: ExecutorOpt = "local",
    address: AddressOpt = None,
    seed: Annotated[Optional[int], typer.Option("--seed", help="With --n: a reproducible random sample.")] = None,
    checkpoints: Annotated[bool, typer.Option("--checkpoints",
                                              help="Keep every graph step in RUN/checkpoints.sqlite (`trace --steps`).")] = False,
    judge: Annotated[Optional[str], typer.Option("--judge", help="rule (the default) or llm: every answer graded by CRAG's "
                                                 "protocol by the model at EVAL_JUDGE_BASE_URL / EVAL_JUDGE_MODEL.")] = None,
    preset: PresetOpt = None,
    override: OverrideOpt = None,
) -> None:
    """Run a system over a dataset; print a per-question table and the summary."""
    from agentic_rag.eval.executors import ExecutorError
    from agentic_rag.eval.resume import exit_interrupted, interrupt_on_sigterm, resume_command
    from agentic_rag.eval.runner import run_eval

    if resume and overwrite:
        fail("give --resume or --overwrite, not both")
    out = named_path(out, "--out")
    interrupt_on_sigterm()
    settings = load_settings(preset, [*(override or []), *([f"EVAL_JUDGE={judge}"] if judge else [])], needs_llm=True)
    if settings.eval.EVAL_JUDGE == "llm":
        from agentic_rag.eval.llm_judge import judge_settings

        try:
            judge_settings(settings)
        except SettingsError as exc:
            fail(f"settings error: {exc}")
    if executor == "ray" and (checkpoints or settings.paths.CHECKPOINT_PATH is not None):
        fail("checkpoints are written where the graph runs: use --executor local to keep them")
    pool = executor_for(executor, workers, settings, address)
    out = out or Path(settings.paths.ARTIFACTS_DIR) / "runs" / f"{system}-{time.strftime('%Y%m%d-%H%M%S')}"
    if checkpoints and settings.paths.CHECKPOINT_PATH is None:
        settings = settings.replace(CHECKPOINT_PATH=str(out / "checkpoints.sqlite"))
    def on_start() -> None:
        say_model(settings)
        if system == "agent":
            say_reader(settings)
            say_risk(settings)
            warn_missing_signals(signals_unavailable(settings), "this run will lack model signals")

    resume_with = resume_command(prog_name(), sys.argv[1:], out)
    try:
        # a file of the run that cannot be written (a full disk, in results.jsonl or an SQLite file, a removed
        # folder) is one line; a RunFolderError (an OSError too) says itself
        with storage_errors(f"the rows written so far are kept: {resume_with}"):
            res = run_eval(dataset, system, settings, out, n=n, resume=resume, workers=workers, seed=seed,
                           executor=pool, overwrite=overwrite, on_start=on_start)
    except KeyboardInterrupt as exc:
        exit_interrupted(exc, out, prog_name(), sys.argv[1:])
    except ExecutorError as exc:
        fail(f"{exc}; resume with: {resume_with}")
    table = Table(title=f"{system} on {dataset}", show_lines=True)
    for col in ("question", "gold", "answer", "status", "reason", "judge", "tokens", "ms"):
        table.add_column(col, overflow="fold")
    for r in res["rows"]:
        colour = {"accurate": "green", "incorrect": "red", "missing": "yellow"}.get(r["judgement"], "dim")
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
    if missing := res["summary"].get("signals_missing"):
        summary.add_row("signals_missing", f"[yellow]{escape(', '.join(missing))}[/]", escape(metric_label("signals_missing")))
    console.print(summary)
    warn_missing_signals(res["summary"].get("signals_missing") or {}, "this run lacked model signals")
    if res["summary"].get("unusable_gold"):
        err.print(f"[yellow]warning:[/] {res['summary']['unusable_gold']} questions have a gold answer that cannot score "
                  f"an answer (empty or 'nan') and are left out of the metrics: {', '.join(res['summary']['unusable_gold_ids'])}",
                  soft_wrap=True, highlight=False, markup=True)
    if unjudged := res["summary"].get("unjudged"):
        err.print(f"[yellow]warning:[/] the LLM judge graded {unjudged} answers not at all (its endpoint failed or its reply "
                  f"held no score): counted apart, never accurate: {', '.join(res['summary']['unjudged_ids'])}",
                  soft_wrap=True, highlight=False)
    if risk := res["summary"].get("risk"):
        console.print(f"risk: promised {escape(risk['line'])}; wrong among answered {risk['risk']} "
                      f"(95% interval {risk['interval_95']}) at coverage {risk['coverage']}: "
                      + ("held" if risk["held"] else "[red]broken[/]"), soft_wrap=True, highlight=False)
        if risk["shift"]["fires"]:
            err.print(f"[yellow]warning:[/] these questions are not like the calibration set's "
                      f"({escape(risk['shift']['measure'])}: p = {risk['shift']['p_value']}"
                      + (f"; question types not calibrated: {escape(', '.join(risk['shift']['types_not_calibrated']))}"
                         if risk["shift"]["types_not_calibrated"] else "") + "): do not trust the promise here",
                      soft_wrap=True, highlight=False)
    console.print(f"results in {res['out']}")
    if unavailable := res["summary"].get("llm_unavailable"):
        err.print(f"[yellow]warning:[/] {unavailable} of {res['summary']['n']} questions ended as ABSTAIN_LLM_UNAVAILABLE "
                  "(the model could not be reached; their rows say why): rerun them into a new --out once it answers",
                  soft_wrap=True, highlight=False)

    from agentic_rag.timing import format_startup, startup_report

    if startup_report():  # paid once by this process, inside the first questions' latency
        err.print(format_startup(startup_report()), soft_wrap=True)




@app.command("calibrate")
def calibrate_cmd(
    dataset: Annotated[Optional[str], typer.Option("--dataset", help="A development split (never the test split).")] = None,
    param: Annotated[Optional[str], typer.Option("--param", help="Setting to sweep, e.g. RETRIEVAL_MIN_SCORE.")] = None,
    values: Annotated[Optional[str], typer.Option("--values", help="Comma-separated values, e.g. 0.2,0.3,0.4.")] = None,
    system: Annotated[str, typer.Option("--system")] = "agent",
    n: Annotated[Optional[int], typer.Option("--n")] = None,
    out: Annotated[Optional[str], typer.Option("--out")] = None,
    max_false_refusal: Annotated[float, typer.Option("--max-false-refusal")] = 0.15,
    run: Annotated[Optional[Path], typer.Option("--run", help="With --risk: calibrate on this agent run folder, "
                                                "not a new run.")] = None,
    decision_file: Annotated[Optional[str], typer.Option("--decision-file", help="With --risk: the decision file the "
                                                         "thresholds go into (default OUT/decision.json).")] = None,
    seed: Annotated[Optional[int], typer.Option("--seed", help="With --n: a reproducible sample of n.")] = None,
    risk: Annotated[Optional[str], typer.Option("--risk", help="Risks to promise, e.g. 0.1 or 0.1,0.2,0.3: the share of wrong "
                                                "answers among the shown ones; a threshold per risk goes into the decision file.")] = None,
    delta: Annotated[float, typer.Option("--delta", help="With --risk: the chance the promise may fail on questions like "
                                         "the calibration set.")] = 0.1,
    preset: PresetOpt = None,
    override: OverrideOpt = None,
) -> None:
    """Sweep a threshold (--param/--values): accuracy, refusal and false-refusal rates and the CRAG score
    per value. Or, with --risk, calibrate the fitted decision's threshold for a stated risk. (Fitting the
    decision itself is `agentic-rag train decision`.)"""
    out, decision_file = named_path(out, "--out"), output_file(decision_file, "--decision-file")
    risks = risk_option(risk, delta)
    if risks:
        return _calibrate_risk(dataset, run, n, seed, out, decision_file, preset, override, risks)
    from agentic_rag.eval.calibrate import calibrate, parse_values, to_markdown

    if not (dataset and param and values):
        fail("a sweep needs --dataset, --param and --values (to fit the decision: agentic-rag train decision)")
    settings = load_settings(preset, override, needs_llm=True)
    out = out or Path(settings.paths.ARTIFACTS_DIR) / "calibration" / param.upper()
    try:
        report = calibrate(dataset, param, parse_values(param.upper(), values), settings, out, system, n, max_false_refusal)
    except (ValueError, SettingsError, DataError) as exc:
        fail(str(exc))
    console.print(to_markdown(report))
    console.print(f"sweep written to {out}")


def _calibrate_risk(dataset, run, n, seed, out, decision_file, preset, override, risks) -> None:
    """``calibrate --risk``: on a finished agent run (``--run``), or a new one of ``--dataset`` under the decision
    in force; nothing is written when the set cannot support the promise."""
    from agentic_rag.datasets.crag import IDK, iter_records
    from agentic_rag.eval.risk_control import MIN_DRAFTS, RiskCalibrationError, calibrate_run, levels_markdown
    from agentic_rag.eval.runner import run_eval

    settings = load_settings(preset, override, needs_llm=True)
    out = out or Path(settings.paths.ARTIFACTS_DIR) / "calibration" / "risk"
    target = decision_file or out / "decision.json"
    try:
        if run is None:
            if dataset is None:
                fail("calibrate --risk needs --dataset (a development split to run) or --run (an agent run of one)")
            records = list(iter_records(dataset))[:n] if n else list(iter_records(dataset))
            if len(records) < MIN_DRAFTS:
                fail(f"{dataset} holds {len(records)} questions: a risk bound needs at least {MIN_DRAFTS}")
            if all(str(r.answer).strip().lower() == IDK for r in records):
                fail(f"{dataset} holds no answerable question: no threshold keeps a risk on it")
            run_eval(dataset, "agent", settings.replace(RISK=None), out / "run", n=n, seed=seed, resume=True)
            run = out / "run"
        report = calibrate_run(settings, run, *risks, target)
    except (RiskCalibrationError, ValueError, SettingsError, DataError, FileNotFoundError) as exc:
        fail(str(exc))
    console.print(levels_markdown(report), highlight=False)


@app.command("serve")
def serve_cmd(
    model: Annotated[str, typer.Option("--model", help="A packaged model, by LLM_MODEL name or short name.")] = "packaged-1.5b",
    port: Annotated[int, typer.Option("--port", min=1, max=65535)] = 8765,
    host: Annotated[str, typer.Option("--host")] = "127.0.0.1",
    context_tokens: Annotated[int, typer.Option("--context-tokens", min=256, help="The server's context window.")] = 4096,
    repack: Annotated[str, typer.Option("--repack", help="llama.cpp's weight repacking: auto (off where the processor "
                                        "has AMX, whose repacked weights crash the server), on or off.")] = "auto",
    preset: PresetOpt = None,
    override: OverrideOpt = None,
) -> None:
    """Serve a packaged model with llama.cpp's OpenAI-compatible server, token log-probabilities
    included, until Ctrl-C (or SIGTERM, SIGHUP: the server ends with this command); prints the
    settings that point the agent at it. A server that dies (or ends) on its own is said with its signal
    or status and its last log lines, and serve exits with status 3."""
    from agentic_rag.children import start_child, stop_child
    from agentic_rag.llm.serve import REPACK_CHOICES, SERVER_DIED_EXIT, ServerLog, packaged, prepared_command, weight_repacking

    if repack not in REPACK_CHOICES:
        fail(f"--repack {repack}: choose {', '.join(REPACK_CHOICES)}")
    settings = load_settings(preset, override)
    spec = packaged(model)
    repacks, why = weight_repacking(repack)
    cmd = prepared_command(spec, Path(settings.paths.MODEL_CACHE_DIR), host, port, context_tokens, repacks)
    err.print(f"serving {spec.gguf_name} as {spec.short_name}, llama.cpp's weight repacking {'on' if repacks else 'off'} "
              f"({escape(why)}); point the agent at it with:\n"
              f"  -o LLM_BACKEND=openai -o OPENAI_BASE_URL=http://{host}:{port}/v1 -o LLM_MODEL={spec.short_name}",
              soft_wrap=True, highlight=False)
    server = start_child(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    log = ServerLog(server.stdout, sys.stderr.buffer)
    try:
        code = server.wait()
    except KeyboardInterrupt:  # Ctrl-C reaches this process alone: the server leads a process group of its own
        stop_child(server)
        raise typer.Exit(130) from None
    _server_died(code, log.tail(), SERVER_DIED_EXIT)


def _server_died(code: int, tail: list[str], exit_code: int) -> None:
    """The model server ended without serve asking it to (a crash on its first token, a kill): said with its
    signal or status and its last log lines, not left to the access log's last "200 OK"."""
    from agentic_rag.llm.serve import how_it_ended

    if tail:
        err.print(f"llama.cpp's server, its last {len(tail)} log lines:", highlight=False)
        for line in tail:
            err.print(f"  | {escape(line)}", soft_wrap=True, highlight=False)
    fail(f"llama.cpp's server {how_it_ended(code)}: nothing serves the model any more (exit status {exit_code})",
         exit_code)
