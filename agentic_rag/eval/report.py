"""A finished run's report.md (summary, breakdowns, refusals by reason, the risk-coverage plot)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from agentic_rag.eval.metrics import metric_label
from agentic_rag.eval.refusals import refusal_table


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


def markdown_table(header: list[str], rows: list[list[Any]]) -> list[str]:
    """A GitHub table's lines, for the benchmark reports that set runs side by side."""
    return ["| " + " | ".join(header) + " |", "|" + "---|" * len(header),
            *("| " + " | ".join(str(c) for c in row) + " |" for row in rows)]
