"""Run a system over a CRAG-format dataset and score it (``agentic-rag eval``).

Each question's result line is appended in one write as soon as it is judged (eval/results.py), so an
interrupted run loses nothing; ``--resume`` skips the ids already written and refuses a folder written
under other settings (eval/resume.py). The run folder also gets config.json (eval/provenance.py),
summary.json (eval/metrics.py) and report.md (eval/report.py).
"""

from __future__ import annotations

import json
import sys
import threading
from functools import partial
from pathlib import Path
from typing import Any, Iterable

from tqdm import tqdm

from agentic_rag.budget import tokens_used
from agentic_rag.configuration import Settings
from agentic_rag.datasets.crag import BadRecordWarner, CragRecord, DataError, ReadReport, iter_records, resolve_dataset
from agentic_rag.errors import FolderMark, UserError, no_links, replace_file, replaceable_folder, writable_folder
from agentic_rag.eval.executors import LocalExecutor
from agentic_rag.eval.judge import judge
from agentic_rag.eval.llm_judge import llm_judge
from agentic_rag.eval.lock import LOCK_NAME, RunFolderBusy, RunLock, describe
from agentic_rag.eval.metrics import run_summary
from agentic_rag.eval.provenance import (
    decision_identity,
    file_sha256,
    logprob_report,
    model_identity,
    package_versions,
    probe_identity,
    run_segments,
)
from agentic_rag.eval.report import write_report
from agentic_rag.eval.results import done_ids, load_rows, read_results, set_aside_bad_lines
from agentic_rag.eval.resume import EvalInterrupted, check_resumable
from agentic_rag.eval.rows import result_row
from agentic_rag.runner import answer, warm_up
from agentic_rag.telemetry import append_line, keep_questions, write_lines

REJECTED_NAME = "results.rejected.jsonl"  # damaged lines of results.jsonl, set aside by a resume
# what tells a run folder from a folder that holds a results.jsonl or a report.md of someone else's: its
# config.json (a run killed before writing it leaves only its lock)
RUN_FOLDER = FolderMark("a run folder", "config.json", frozenset({"system", "dataset", "settings"}),
                        before_mark=frozenset({LOCK_NAME}))


class RunFolderError(UserError, OSError):
    """The run folder is in use, or holds a run that would be lost (one that cannot be written: OutputError)."""


def question_row(system: str, settings: Settings, extra_config: dict[str, Any] | None, rec: CragRecord) -> dict[str, Any]:
    """Answer and judge one question: its result row (a module function, so a Ray worker can run it)."""
    result = answer(system, settings, record=rec, extra_config=extra_config)
    refused = result.status != "ok"
    j = judge(result.answer, result.short_answer, rec.answer, rec.alternative_answers, refused, question=rec.query)
    ruled = j
    judge_usage: dict[str, Any] = {}
    if settings.eval.EVAL_JUDGE == "llm":
        j, judge_usage = llm_judge(rec.query, rec.answer, rec.alternative_answers, result.answer, ruled, settings)
    row = result_row(rec, result, j)
    row["eval_judge_tokens"] = tokens_used(judge_usage)
    if j is not ruled:
        row.update(rule_judgement=ruled.label, rule_judge_rule=ruled.rule)
    return row


def run_eval(
    dataset: str | Path,
    system: str,
    settings: Settings,
    out_dir: str | Path,
    n: int | None = None,
    resume: bool = False,
    progress: bool = True,
    on_result=None,
    workers: int = 1,
    seed: int | None = None,
    extra_config: dict[str, Any] | None = None,
    executor: Any = None,
    overwrite: bool = False,
    on_start=None,
) -> dict[str, Any]:
    """Answer and judge every selected question; ``executor`` (default: ``workers`` threads here) says
    where the questions run, while this process alone writes the run folder (holding its lock).
    A folder that holds results is continued with ``resume`` or replaced with ``overwrite``, never
    emptied otherwise, and only a run folder (``RUN_FOLDER``) or an empty one is written at all.
    ``on_start`` is called once the folder is accepted, before the first question."""
    # the dataset is read before the run folder is touched: an unusable one leaves an earlier run intact
    report = ReadReport(str(dataset))
    warner = BadRecordWarner(settings.eval.BAD_RECORDS_SHOWN)
    records: Iterable[CragRecord] = iter_records(dataset, on_bad=settings.eval.BAD_RECORDS, report=report, on_bad_record=warner,
                                                 max_record_bytes=settings.eval.MAX_RECORD_BYTES)
    selected = select(records, n, seed)
    warner.finish()
    if not selected:
        raise DataError(f"no records in {report.path}" + (f" ({len(report.bad)} bad lines skipped)" if report.bad else ""))
    out = Path(out_dir)
    writable_folder(out, f"the run folder {out}")
    replaceable_folder(out, RUN_FOLDER)
    no_links(out, f"the run folder {out}")
    try:
        lock = RunLock(out).acquire()
    except RunFolderBusy as exc:
        raise RunFolderError(str(exc)) from None
    if lock.stale is not None:
        print(f"warning: {out} was locked by {describe(lock.stale)}, which is gone; the lock is taken over",
              file=sys.stderr)
    try:
        return _run_locked(out, selected, report, system, settings, dataset, resume, overwrite, progress,
                           on_result, workers, seed, extra_config, executor, on_start)
    finally:
        lock.release()


def _run_locked(out: Path, selected: list[CragRecord], report: ReadReport, system: str, settings: Settings,
                dataset: str | Path, resume: bool, overwrite: bool, progress: bool, on_result, workers: int,
                seed: int | None, extra_config: dict[str, Any] | None, executor: Any, on_start=None) -> dict[str, Any]:
    results_path = out / "results.jsonl"
    if not resume:
        if (held := len(read_results(results_path))) and not overwrite:
            raise RunFolderError(f"{out} already holds a run ({held} results): give --resume to continue it, "
                                 "--overwrite to replace it, or another --out")
        results_path.unlink(missing_ok=True)
    elif moved := set_aside_bad_lines(results_path, out / REJECTED_NAME):
        print(f"warning: {len(moved)} damaged line{'s' if len(moved) > 1 else ''} of {results_path} "
              f"(line {', '.join(map(str, moved))}) set aside in {out / REJECTED_NAME}; "
              "their questions are answered again", file=sys.stderr)
    done = done_ids(results_path)
    own_telemetry = out / "telemetry.jsonl"
    if settings.paths.TELEMETRY_PATH is None:
        settings = settings.replace(TELEMETRY_PATH=str(own_telemetry))
    # the run folder's trace belongs to this run: a fresh run must not append to the last one's rows
    # (a TELEMETRY_PATH elsewhere is the user's own log and is never removed)
    if not resume and Path(settings.paths.TELEMETRY_PATH).resolve() == own_telemetry.resolve():
        own_telemetry.unlink(missing_ok=True)
    config = {
        "system": system,
        "dataset": str(resolve_dataset(dataset)),
        "dataset_sha256": file_sha256(resolve_dataset(dataset)),
        "n": len(selected),
        "seed": seed,
        "settings": settings.public_dump(),
        "model": model_identity(settings),
        "probe": probe_identity(system, settings),
        "decision": decision_identity(system, settings),
        "versions": package_versions(),
        "bad_records": [str(b) for b in report.bad],
    }
    config["segments"] = run_segments(check_resumable(out, config) if done else None, len(done))
    if resume and Path(settings.paths.TELEMETRY_PATH).resolve() == own_telemetry.resolve():
        keep_questions(own_telemetry, done)
    replace_file(out / "config.json", json.dumps(config, indent=2))
    todo = [rec for rec in selected if rec.interaction_id not in done]
    if on_start:
        on_start()
    bar = tqdm(total=len(selected), initial=len(selected) - len(todo), desc=system, unit="q", disable=not progress)
    tally = {"n": 0, "accurate": 0, "incorrect": 0, "tokens": 0}
    lock = threading.Lock()

    executor = executor or LocalExecutor(workers)
    run_settings = executor.worker_settings(settings)
    warm = partial(warm_up, system, run_settings, (extra_config or {}).get("llm"))  # once per Ray worker
    results = executor.map(partial(question_row, system, run_settings, extra_config), todo, warm)
    try:
        for _, row, telemetry in results:
            with lock:  # one whole line per question in one write: a kill loses at most the running ones
                write_lines(telemetry)  # a Ray worker's rounds, before the row: a resume keeps both or neither
                append_line(results_path, json.dumps(row, ensure_ascii=False))
                tally["n"] += 1
                tally[row["judgement"]] = tally.get(row["judgement"], 0) + 1
                tally["tokens"] += row["tokens"].get("total", 0)
                bar.set_postfix(acc=f"{tally['accurate'] / tally['n']:.2f}", hall=f"{tally['incorrect'] / tally['n']:.2f}",
                                tok=f"{tally['tokens'] / tally['n']:.0f}")
                bar.update(1)
            if on_result:
                on_result(row)
    except BaseException as exc:
        # queued questions are dropped, not run: the caller gets control back now, not after the dataset
        results.close()
        bar.close()
        if isinstance(exc, KeyboardInterrupt) and not isinstance(exc, EvalInterrupted):
            raise EvalInterrupted(out, len(done_ids(results_path)), len(selected)) from None
        raise
    bar.close()
    rows = load_rows(results_path, [r.interaction_id for r in selected])
    config["logprobs"] = logprob_report(rows)  # known once the drafts are in: did the backend return them?
    replace_file(out / "config.json", json.dumps(config, indent=2))
    summary = run_summary(system, rows, len(report.bad), config)
    replace_file(out / "summary.json", json.dumps(summary, indent=2))
    write_report(out, summary, rows, config["model"])
    return {"summary": summary, "rows": rows, "out": str(out)}


def select(records: Iterable[CragRecord], n: int | None, seed: int | None) -> list[CragRecord]:
    """The first n records, or with a seed a reproducible sample of n (reservoir; dataset order kept)."""
    if n is None:
        return list(records)
    if seed is None:
        out = []
        for rec in records:
            if len(out) >= n:
                break
            out.append(rec)
        return out
    import random

    rng = random.Random(seed)
    reservoir: list[tuple[int, CragRecord]] = []
    for i, rec in enumerate(records):
        if len(reservoir) < n:
            reservoir.append((i, rec))
        else:
            j = rng.randint(0, i)
            if j < n:
                reservoir[j] = (i, rec)
    return [rec for _, rec in sorted(reservoir, key=lambda t: t[0])]
