"""A finished run's report.md (summary, breakdowns, refusals by reason, the risk-coverage plot)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from agentic_rag.errors import replace_file
from agentic_rag.eval.markdown import markdown_table, md_escape
from agentic_rag.eval.metrics import BREAKDOWN_FIGURES, metric_label
from agentic_rag.eval.provenance import gap_warning
from agentic_rag.eval.refusals import refusal_table


def write_report(out: Path, summary: dict[str, Any], rows: list[dict[str, Any]], model: dict[str, Any] | None = None) -> Path:
    """report.md: the model that answered, the summary, breakdowns and the risk-coverage plot of one run
    (group names come from the dataset and are escaped, as every cell is)."""
    from agentic_rag.eval.plots import plot_risk_coverage

    plot = plot_risk_coverage([{"name": summary["system"], "rows": rows}], out / "risk_coverage.png",
                              promise=summary.get("risk"))
    lines = [f"# Run report: {md_escape(summary['system'])}", ""]
    if model:
        lines += [md_escape(model_line(model)), ""]
    lines += markdown_table(["metric", "value", "meaning"],
                            [[k, v, metric_label(k)] for k, v in summary.items() if not isinstance(v, dict)])
    for key, groups in summary.items():
        if key.startswith("by_") and isinstance(groups, dict) and groups:
            lines += ["", f"## {key.replace('_', ' ')}", ""]
            lines += markdown_table(["group", *BREAKDOWN_FIGURES], [[g, *(v.get(f, "") for f in BREAKDOWN_FIGURES)]
                                                                 for g, v in groups.items()])
    if summary.get("signals_missing"):
        lines += ["", "## model signals missing", "", md_escape(gap_warning(summary["signals_missing"], "This run lacked model signals"))]
    if risk := summary.get("risk"):
        lines += ["", "## the stated risk", "", md_escape(f"Promised: {risk['line']}."), ""]
        lines += markdown_table(["questions", "answered", "coverage", "wrong among answered", "95% interval", "held"],
                                [[g, v["answered"], v["coverage"], v["risk"], v["interval_95"], "yes" if v["held"] else "no"]
                                 for g, v in {"all": risk, **risk["by_question_type"]}.items()])
        s = risk["shift"]
        lines += ["", md_escape(
            ("**Shift warning**: these questions are not like the calibration set's, so the promise is not to be "
             "trusted here" if s["fires"] else "No shift found against the calibration set") +
            f" ({s['measure']}: p = {s['p_value']}, warns below {s['p_value_below']}"
            + (f"; question types it was not calibrated on: {', '.join(s['types_not_calibrated'])}" if s["types_not_calibrated"] else "")
            + ").")]
    if summary.get("refusals_by_reason"):
        lines += ["", "## refusals by reason", ""] + refusal_table(summary["refusals_by_reason"])
    lines += ["", f"![risk-coverage]({plot.name})", ""]
    return replace_file(out / "report.md", "\n".join(lines))


def model_line(model: dict[str, Any]) -> str:
    """One line naming the model of a run's config.json, and for an in-process model the dtype it computed in
    and why (a speed figure means little without it)."""
    line = f"Model: {model.get('model')} ({model.get('backend')} backend)"
    if model.get("dtype"):
        line += f", computing in {model['dtype']} ({model.get('dtype_reason', '')})"
    return line + "."
