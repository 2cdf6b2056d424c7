"""Score a finished run again with today's judge, without a model call, and bring a committed run back
into a run folder to do it.

Every figure stands on the judge: when a rule changes, every committed run is re-judged from the rows it
saved (each row keeps the question, the answer and the draft), so no table mixes two rulers. A committed
run is its gzipped rows beside its config and summary (``benchmarks/agent_vs_baseline/<split>/``); restored
into a folder, it is read by ``compare``, the report and the benchmark scripts like any run.
"""

from __future__ import annotations

import gzip
import json
from pathlib import Path
from typing import Any

from agentic_rag.errors import replace_file
from agentic_rag.eval.judge import judge
from agentic_rag.eval.lock import RunLock
from agentic_rag.eval.metrics import run_summary
from agentic_rag.eval.report import write_report
from agentic_rag.eval.results import read_results
from agentic_rag.eval.rows import matches_world_answer, reextracted_short_answer


def rejudge_row(row: dict[str, Any]) -> dict[str, Any]:
    """The row with its short answer read again and its judgement, rule, score, EM and F1 as the judge
    gives them now."""
    row["short_answer"] = reextracted_short_answer(row)
    j = judge(row["prediction"] or "", row["short_answer"], row["gold"], row["alternatives"], row["status"] != "ok",
              question=row["query"])
    row.update(judgement=j.label, judge_rule=j.rule, score=j.score, em=j.em, f1=j.f1)
    if row.get("world_answer"):
        row["matches_world_answer"] = matches_world_answer(row)
    return row


def rejudge_run(run_dir: str | Path) -> tuple[dict[str, Any], int]:
    """Re-score a finished run folder in place (results.jsonl, summary.json, report.md with its plot), holding
    its lock as a run does: the new summary, and how many judgements changed."""
    out = Path(run_dir)
    if not (out / "results.jsonl").is_file():
        raise FileNotFoundError(f"{out} holds no results.jsonl: not a finished run folder")
    lock = RunLock(out).acquire()  # RunFolderBusy while a run still writes it
    try:
        before = read_results(out / "results.jsonl")
        was = [r.get("judgement") for r in before]
        rows = [rejudge_row(row) for row in before]
        replace_file(out / "results.jsonl", "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows))
        old = json.loads((out / "summary.json").read_text()) if (out / "summary.json").is_file() else {}
        config = json.loads((out / "config.json").read_text()) if (out / "config.json").is_file() else {}
        summary = run_summary(old.get("system", config.get("system", "")), rows, old.get("bad_records", 0), config)
        replace_file(out / "summary.json", json.dumps(summary, indent=2))
        write_report(out, summary, rows, config.get("model"))
    finally:
        lock.release()
    return summary, sum(a != r["judgement"] for a, r in zip(was, rows))


def restore_run(committed: str | Path, label: str, run_dir: str | Path) -> Path:
    """A committed run (``<label>_results.jsonl.gz``, ``<label>_config.json``, ``<label>_summary.json`` in
    ``committed``) written into ``run_dir`` as a run folder; an error naming the file when one is missing."""
    src, dest = Path(committed), Path(run_dir)
    rows = src / f"{label}_results.jsonl.gz"
    if not rows.is_file():
        raise FileNotFoundError(f"{rows} is not committed: no {label} run to restore from {src}")
    dest.mkdir(parents=True, exist_ok=True)
    replace_file(dest / "results.jsonl", gzip.decompress(rows.read_bytes()))
    for name in ("config.json", "summary.json"):
        if (part := src / f"{label}_{name}").is_file():
            replace_file(dest / name, part.read_bytes())
    return dest
