"""Plots a reader looks at rather than reads: evidence consistency vs cost, and risk vs coverage."""

from __future__ import annotations

from pathlib import Path
from typing import Any


def _plt():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def confidence_of(row: dict[str, Any]) -> float:
    """How sure the system's own signals were (support x faithfulness x relevance), for ranking answers."""
    s = row.get("signals") or {}
    return float(s.get("overlap_est", 0.0)) * float(s.get("faith_est", 0.0)) * max(0.0, float(s.get("answer_relevance", 1.0)))


def risk_coverage(rows: list[dict[str, Any]]) -> list[tuple[float, float]]:
    """(coverage, accuracy of answered) as answers are admitted from most to least confident."""
    n = len(rows)
    answered = sorted((r for r in rows if r["status"] == "ok" and r["judgement"] != "missing"), key=confidence_of, reverse=True)
    points, right = [], 0
    for k, r in enumerate(answered, start=1):
        right += r["judgement"] == "accurate"
        points.append((k / n, right / k))
    return points


def plot_risk_coverage(runs: list[dict[str, Any]], path: Path) -> Path:
    plt = _plt()
    fig, ax = plt.subplots(figsize=(5.5, 3.8))
    for run in runs:
        pts = risk_coverage(run["rows"])
        if pts:
            ax.plot([p[0] for p in pts], [p[1] for p in pts], marker=".", label=run["name"])
    ax.set_xlim(0, 1)
    ax.legend(fontsize=8)
    return _finish(plt, fig, ax, path, "Risk-coverage", "coverage (fraction of questions answered)",
                   "accuracy of answered questions")


def plot_pareto(runs: list[dict[str, Any]], path: Path) -> Path:
    """Evidence consistency (mean overlap of answered questions) against tokens per question."""
    plt = _plt()
    fig, ax = plt.subplots(figsize=(5.5, 3.8))
    for run in runs:
        s = run["summary"]
        if s.get("overlap_mean") is None:
            continue
        ax.scatter([s["tokens_per_q"]], [s["overlap_mean"]], s=40)
        ax.annotate(run["name"], (s["tokens_per_q"], s["overlap_mean"]), fontsize=8, xytext=(4, 4), textcoords="offset points")
    return _finish(plt, fig, ax, path, "Evidence consistency vs cost", "tokens per question",
                   "overlap (evidence consistency)")


def _finish(plt, fig, ax, path: Path, title: str, xlabel: str, ylabel: str) -> Path:
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    ax.set_ylim(0, 1.05)
    ax.grid(alpha=0.3)
    ax.set_title(title, fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path
