"""A finished run's report.md (summary, breakdowns, refusals by reason, the risk-coverage plot), and
re-scoring a finished run with the current judge."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from agentic_rag.eval.judge import judge
from agentic_rag.eval.metrics import metric_label, run_summary
from agentic_rag.eval.refusals import refusal_table
from agentic_rag.eval.results import read_results
from agentic_rag.eval.rows import matches_world_answer


def write_report(out: Path, summary: dict[str, Any], rows: list[dict[str, Any]]) -> Path:
    """report.md: the summary, breakdowns and the risk-coverage plot of one run."""
    from agentic_rag.eval.plots import plot_risk_coverage

    plot = plot_risk_coverage([{"name": summary["system"], "rows": rows}], out / "risk_coverage.png")
    lines = [f"# Run report: {summary['system']}", "", "| metric | value | meaning |", "|---|---|---|"]
    lines += [f"| {k} | {v} | {metric_label(k)} |" for k, v in summary.items() if not isinstance(v, dict)]
    for key, groups in summary.items():
        if key.startswith("by_") and isinstance(groups, dict) and groups:
            lines += ["", f"## {key.replace('_', ' ')}", "", "| group | n | accuracy | hallucination | missing | score |",
                      "|---|---|---|---|---|---|"]
            lines += [f"| {g} | {v['n']} | {v['accuracy']} | {v['hallucination']} | {v['missing']} | {v['score']} |"
                      for g, v in groups.items()]
    if summary.get("refusals_by_reason"):
        lines += ["", "## refusals by reason", ""] + refusal_table(summary["refusals_by_reason"])
    lines += ["", f"![risk-coverage]({plot.name})", ""]
    path = out / "report.md"
    path.write_text("\n".join(lines))
    return path


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
    summary = run_summary(old.get("system", rows[0].get("system", "")) if rows else "", rows, old.get("bad_records", 0))
    (out / "summary.json").write_text(json.dumps(summary, indent=2))
    write_report(out, summary, rows)
    return summary
