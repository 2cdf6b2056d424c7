"""Plots a reader looks at rather than reads: evidence consistency vs cost, and risk vs coverage."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Callable

from agentic_rag.errors import save_figure


def pyplot():
    """matplotlib's pyplot on the file-only Agg backend (plots are written, never shown), imported on first use."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def confidence_of(row: dict[str, Any]) -> float:
    """How sure the system's own signals were (support x faithfulness x relevance), for ranking answers."""
    s = row.get("signals") or {}
    return float(s.get("overlap_est", 0.0)) * float(s.get("faith_est", 0.0)) * max(0.0, float(s.get("answer_relevance", 1.0)))


def top_cosine(row: dict[str, Any]) -> float:
    """The best cosine between the question and a passage the system retrieved: what a one-line
    cosine gate ("answer only when the top passage is similar enough") thresholds."""
    best = 0.0
    for event in row.get("events") or []:
        passages = list(event.get("passages") or [])
        for path in event.get("paths") or []:
            passages += path.get("kept") or []
        for p in passages:
            if p.get("vector_score") is not None:
                best = max(best, float(p["vector_score"]))
    return best


def risk_coverage(rows: list[dict[str, Any]], score: Callable[[dict[str, Any]], float] = confidence_of
                  ) -> list[tuple[float, float]]:
    """(coverage, accuracy of answered) as answers are admitted from the highest ``score`` down: each
    point is one threshold on that score."""
    n = len(rows)
    answered = sorted((r for r in rows if r["status"] == "ok" and r["judgement"] != "missing"), key=score, reverse=True)
    points, right = [], 0
    for k, r in enumerate(answered, start=1):
        right += r["judgement"] == "accurate"
        points.append((k / n, right / k))
    return points


def mean_risk(points: list[tuple[float, float]], upto: float | None = None) -> float | None:
    """Area under the risk (1 - accuracy of answered) against coverage curve from 0 to ``upto`` (by
    default the curve's own end), divided by that width: the mean share of wrong answers over every
    threshold that answers at most that share of the questions. Lower is better. Systems that refuse
    different amounts are compared over the coverage all of them reach (``upto`` = the smallest end),
    so the figure is not bought by refusing more or lost by answering more."""
    kept = [acc for cov, acc in points if upto is None or cov <= upto + 1e-9]
    return round(sum(1.0 - acc for acc in kept) / len(kept), 4) if kept else None


def common_coverage(curves: list[list[tuple[float, float]]]) -> float | None:
    """The coverage every curve reaches (the smallest end among those with a point), where
    ``mean_risk`` compares systems that refuse different amounts; None when no curve has a point."""
    ends = [pts[-1][0] for pts in curves if pts]
    return min(ends) if ends else None


def plot_risk_coverage(runs: list[dict[str, Any]], path: Path, title: str = "Risk-coverage",
                       promise: dict[str, Any] | None = None) -> Path:
    """One curve per run; a run may carry its own ``score`` (how its answers are ranked) and the
    legend gives each curve's area. With a run's ``promise`` (``summary["risk"]``): the accuracy it promised
    as a line, and the run's own point with its 95% interval, beside the calibration set's."""
    plt = pyplot()
    fig, ax = plt.subplots(figsize=(5.5, 3.8))
    curves = [risk_coverage(run["rows"], run.get("score", confidence_of)) for run in runs]
    common = common_coverage(curves)
    for run, pts in zip(runs, curves):
        if pts:
            ax.plot([p[0] for p in pts], [p[1] for p in pts], marker=".", markersize=3,
                    label=f"{run['name']} (mean risk {mean_risk(pts, common):.3f})")
    if sum(bool(pts) for pts in curves) > 1:  # where the comparison stops
        ax.axvline(common, color="grey", lw=0.8, ls=":")
    if promise:
        _mark_promise(ax, promise)
    ax.set_xlim(0, 1)
    if ax.get_legend_handles_labels()[0]:  # a run that answered nothing has no curve to name
        ax.legend(fontsize=8)
    return finish_axes(plt, fig, ax, path, title, "coverage (fraction of questions answered)",
                   "accuracy of answered questions (1 - risk)")


def _mark_promise(ax, promise: dict[str, Any]) -> None:
    alpha = float(promise["alpha"])
    ax.axhline(1 - alpha, color="tab:red", lw=0.9, ls="--", label=f"promised: at most {alpha:.0%} wrong")
    if promise.get("answered"):
        low, high = promise.get("interval_95") or (promise["risk"], promise["risk"])
        ax.errorbar([promise["coverage"]], [1 - promise["risk"]], yerr=[[high - promise["risk"]], [promise["risk"] - low]],
                    fmt="o", color="tab:red", capsize=3, label=f"this run ({'held' if promise['held'] else 'broken'})")
    if (cal := promise.get("calibrated")) is not None:
        ax.plot([cal["coverage"]], [1 - cal["risk"]], "s", color="black", label="calibration set")


def plot_refusal_tradeoff(curves: dict[str, list[dict[str, Any]]], points: dict[str, tuple[float, float]],
                          targets: tuple[float, float], path: Path, title: str) -> Path:
    """Refusal on unanswerable against false refusal on answerable: one curve per re-cut score (points
    as ``eval.frontier.cut_curve`` gives them), one marker per run's own operating point, and the
    shaded corner where both targets (max false refusal, min refusal) hold."""
    plt = pyplot()
    fig, ax = plt.subplots(figsize=(5.0, 4.0))
    for name, curve in curves.items():
        pts = sorted((c["false_refusal"], c["refusal_unanswerable"]) for c in curve
                     if c["false_refusal"] is not None and c["refusal_unanswerable"] is not None)
        ax.plot([p[0] for p in pts], [p[1] for p in pts], lw=1.2, label=f"{name}, every cut")
    for name, (fr, ref) in points.items():
        ax.scatter([fr], [ref], s=45, zorder=3, label=f"{name} as run")
    max_fr, min_ref = targets
    ax.fill_between([0, max_fr], min_ref, 1.0, color="green", alpha=0.12, label="targets")
    ax.set_xlim(0, 1)
    ax.legend(fontsize=7, loc="lower right")
    return finish_axes(plt, fig, ax, path, title, "false refusal (answerable questions)", "refusal on unanswerable")


def plot_kept_frontier(frontiers: dict[str, dict[str, Any]], path: Path) -> Path:
    """Right answers of the base run kept against unanswerable questions answered, one curve per pair of
    runs over every cut of the fitted decision's P(right) (``eval.frontier.kept_frontier``), a marker
    where the run cut it."""
    plt = pyplot()
    fig, ax = plt.subplots(figsize=(5.0, 4.0))
    for name, f in frontiers.items():
        pts = sorted((c["unanswerable_answered"], c["right_answers_kept"]) for c in f["curve"])
        line, = ax.plot([p[0] for p in pts], [p[1] for p in pts], lw=1.2, label=f"{name}, every cut (AUC {f['auc']})")
        ax.scatter([f["as_run"]["unanswerable_answered"]], [f["as_run"]["right_answers_kept"]], s=45, zorder=3,
                   color=line.get_color(), label=f"{name}, cut {f['cut']} as run")
    ax.set_xlim(0, 1)
    ax.legend(fontsize=7, loc="lower right")
    return finish_axes(plt, fig, ax, path, "What the cut of P(right) trades", "unanswerable questions answered",
                       "right answers of the base run kept")


def plot_pareto(runs: list[dict[str, Any]], path: Path) -> Path:
    """Evidence consistency (mean overlap of answered questions) against tokens per question."""
    plt = pyplot()
    fig, ax = plt.subplots(figsize=(5.5, 3.8))
    for run in runs:
        s = run["summary"]
        if s.get("overlap_mean") is None:
            continue
        ax.scatter([s["tokens_per_q"]], [s["overlap_mean"]], s=40)
        ax.annotate(run["name"], (s["tokens_per_q"], s["overlap_mean"]), fontsize=8, xytext=(4, 4), textcoords="offset points")
    return finish_axes(plt, fig, ax, path, "Evidence consistency vs cost", "tokens per question",
                   "overlap (evidence consistency)")


def plot_targets(reports: list[tuple[str, dict[str, Any]]], path: Path) -> Path:
    """Each rate target of the abstention reports, one row per target: every generator's figure with
    its 95% interval, and beside it a black bar at its target, marked with the side that passes.
    ``reports`` are (generator label, report) pairs, each report as ``bench_abstention`` writes it."""
    plt = pyplot()
    rows = list(dict.fromkeys((dataset, name) for _, report in reports for dataset, v in report.items()
                              for name, t in v["targets"].items() if "interval_95" in t))
    fig, ax = plt.subplots(figsize=(6.5, 0.75 * len(rows) + 1.2))
    colors = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    for i, (label, report) in enumerate(reports):
        offset = 0.15 * (i - (len(reports) - 1) / 2)
        for y, (dataset, name) in enumerate(rows):
            t = report.get(dataset, {}).get("targets", {}).get(name)
            if not t or not t.get("interval_95"):
                continue
            lo, hi = t["interval_95"]
            ax.errorbar([t["agent"]], [y + offset], xerr=[[t["agent"] - lo], [hi - t["agent"]]], fmt="o", capsize=3,
                        color=colors[i % len(colors)], label=label if label not in ax.get_legend_handles_labels()[1] else None)
            # the target, which for hallucination is this generator's own baseline halved
            at_least = " >= " in name
            value = t["baseline"] / 2 if "baseline" in t else float(name.rsplit(" ", 1)[1])
            ax.plot([value, value], [y + offset - 0.09, y + offset + 0.09], color="black", lw=2.5)
            if i == 0:
                ax.annotate("pass \u2192" if at_least else "\u2190 pass", (value, y - 0.3), fontsize=7,
                            ha="left" if at_least else "right")
    ax.set_yticks(range(len(rows)))
    ax.set_yticklabels([f"{d}\n{n}" for d, n in rows], fontsize=7)
    ax.invert_yaxis()
    ax.set_xlim(0, 1)
    ax.grid(alpha=0.3, axis="x")
    ax.legend(fontsize=7, loc="lower left")
    ax.set_xlabel("rate (point: agent; whiskers: 95% interval; black bar: target)")
    ax.set_title("Abstention targets", fontsize=10)
    fig.tight_layout()
    save_figure(fig, path, dpi=120)
    plt.close(fig)
    return path


def finish_axes(plt, fig, ax, path: Path, title: str, xlabel: str, ylabel: str) -> Path:
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    ax.set_ylim(0, 1.05)
    ax.grid(alpha=0.3)
    ax.set_title(title, fontsize=10)
    fig.tight_layout()
    save_figure(fig, path, dpi=120)
    plt.close(fig)
    return path
