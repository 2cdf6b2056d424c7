"""The answerability probe's learning curve on the test splits: fitted on growing random subsets of the
training views, scored on each split's views, with a paired interval for each step. Whether more rows
still help is read from the steps, not from cross-validation on the training rows, which the test
splits' kinds of question (single passage, multi-hop, news snippets) do not all share.

scripts/study_probe.py curve writes the report, the table and the plot.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from agentic_rag.eval.metrics import auc
from agentic_rag.reader.cross_encoder import join_readings
from agentic_rag.training.fitting import VIEW_C, fit_logistic
from agentic_rag.training.probe_report import auc_difference
from agentic_rag.training.views import at_layer

# The readers the curve follows: the shipped probe's view, and the pair that read multi-hop prompts
# best when the views were compared (benchmarks/probe/features.md), each member with its view's C.
READERS = {"last@{layer}": ("last",), "last@{layer} + question@{layer}": ("last", "question")}


def sizes_for(n: int, smallest: int = 400) -> list[int]:
    """Training sizes that double from ``smallest`` and end at every row, each step at least 1.5 times the
    size before: a last step of a few more rows (3,200 to 3,350) gains nothing whatever the curve does,
    and would read as flat."""
    sizes, size = [], smallest
    while size * 1.5 <= n:
        sizes.append(size)
        size *= 2
    return sizes + [n]


def auc_interval(y: np.ndarray, p: np.ndarray, samples: int = 1000, seed: int = 0) -> tuple[float, float]:
    """A 95% bootstrap interval of one reader's AUC on one split (questions resampled)."""
    from agentic_rag.training.probe_report import _rank_auc

    idx = np.random.default_rng(seed).integers(0, len(y), (samples, len(y)))
    idx = idx[[0 < y[i].sum() < len(y) for i in idx]]
    low, high = np.percentile(_rank_auc(y[idx], p[idx]), [2.5, 97.5])
    return round(float(low), 4), round(float(high), 4)


def split_curve(train: dict[str, np.ndarray], evals: dict[str, dict[str, np.ndarray]], layer: int,
                sizes: list[int] | None = None, draws: int = 3, seed: int = 0,
                baseline: dict[str, np.ndarray] | None = None) -> dict[str, Any]:
    """Per reader and split: the AUC at each training size (P averaged over ``draws`` random subsets
    below the full size), its interval, and each step's paired difference to the size before.
    ``baseline`` holds the shipped probe's P per split (on the same rows), drawn as a line to beat."""
    y = train["y"]
    sizes = sizes or sizes_for(len(y))
    rng = np.random.default_rng(seed)
    subsets = {size: [np.arange(len(y))] if size >= len(y) else [rng.choice(len(y), size, replace=False) for _ in range(draws)]
               for size in sizes}
    report: dict[str, Any] = {"layer": layer, "train_rows": int(len(y)), "sizes": sizes, "draws": draws,
                              "multi_hop_rows": int(np.char.startswith(train["sources"].astype(str), "hotpotqa").sum()),
                              "readers": {}}
    for template, members in READERS.items():
        name = template.format(layer=layer)
        curve: dict[str, Any] = {split: [] for split in evals}
        previous: dict[str, np.ndarray] = {}
        for size in sizes:
            p = {split: reader_p(train, views, y, members, layer, subsets[size]) for split, views in evals.items()}
            for split, views in evals.items():
                point = {"rows": size, "auc": round(auc(views["y"], p[split]), 4),
                         "ci95": auc_interval(views["y"], p[split])}
                if split in previous:
                    point["step"] = auc_difference(views["y"], previous[split], p[split])
                if baseline and split in baseline:
                    point["vs_shipped"] = auc_difference(views["y"], baseline[split], p[split])
                curve[split].append(point)
            previous = p
        report["readers"][name] = {split: {"points": points, "flattens_at": flattens_at(points)}
                                   for split, points in curve.items()}
    if baseline:
        report["shipped"] = {split: {"auc": round(auc(evals[split]["y"], p), 4), "ci95": auc_interval(evals[split]["y"], p)}
                             for split, p in baseline.items()}
    return report


def reader_p(train: dict[str, np.ndarray], views: dict[str, np.ndarray], y: np.ndarray,
            members: tuple[str, ...], layer: int, subsets: list[np.ndarray]) -> np.ndarray:
    """P(answerable) of one reader on a split, averaged over the probes fitted on each subset; a reader of
    several views joins its members' readings by their mean logit, as the agent joins two readers."""
    total = np.zeros(len(views["y"]))
    for rows in subsets:
        readings = [fit_logistic(at_layer(train, view, layer)[rows].astype(np.float64), y[rows], VIEW_C[view])
                    .predict_proba(at_layer(views, view, layer).astype(np.float64))[:, 1] for view in members]
        total += np.array([join_readings(*r) for r in zip(*readings)]) if len(readings) > 1 else readings[0]
    return total / len(subsets)


def flattens_at(points: list[dict[str, Any]]) -> int | None:
    """The smallest size from which no later step gains beyond its interval (its lower end above 0):
    where more rows of the same kinds stopped helping. None when the last step still gains."""
    steps = [pt for pt in points if "step" in pt]
    if steps and steps[-1]["step"]["ci95_low"] > 0:
        return None
    flat = points[0]["rows"]
    for pt in steps:
        if pt["step"]["ci95_low"] > 0:
            flat = pt["rows"]
    return flat


def curve_table(report: dict[str, Any]) -> str:
    """The curve as markdown: one row per reader and size, per split the AUC with its interval and the
    step's gain over the size before (paired 95% interval)."""
    splits = list(next(iter(report["readers"].values())))
    head = ["reader", "training rows"] + [f"{s}: AUC (95% CI), step" for s in splits]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    if report.get("shipped"):
        lines.append("| shipped probe | - | " + " | ".join(
            f"{report['shipped'][s]['auc']:.3f} ({report['shipped'][s]['ci95'][0]:.3f} to {report['shipped'][s]['ci95'][1]:.3f})"
            for s in splits) + " |")
    for name, curve in report["readers"].items():
        for i, size in enumerate(report["sizes"]):
            cells = []
            for s in splits:
                pt = curve[s]["points"][i]
                step = pt.get("step")
                cells.append(f"{pt['auc']:.3f} ({pt['ci95'][0]:.3f} to {pt['ci95'][1]:.3f})"
                             + (f", {step['diff']:+.3f} ({step['ci95_low']:+.3f} to {step['ci95_high']:+.3f})" if step else ""))
            lines.append(f"| {name} | {size} | " + " | ".join(cells) + " |")
    lines.append("")
    for name, curve in report["readers"].items():
        last = {s: c["points"][-1].get("vs_shipped") for s, c in curve.items()}
        if all(last.values()):
            lines.append(f"- {name} at {report['sizes'][-1]} rows against the shipped probe (paired 95% interval): " + "; ".join(
                f"{s} {d['diff']:+.3f} ({d['ci95_low']:+.3f} to {d['ci95_high']:+.3f})" for s, d in last.items()) + ".")
    for name, curve in report["readers"].items():
        flat = "; ".join(f"{s}: " + ("still rising at the full size" if c["flattens_at"] is None
                                      else f"flat from {c['flattens_at']} rows") for s, c in curve.items())
        lines.append(f"- {name}: {flat}.")
    return "\n".join(lines) + "\n"


def plot_curve(report: dict[str, Any], path) -> Any:
    """One panel per split: AUC against training rows (log scale) with 95% intervals, per reader, and the
    shipped probe's AUC as a dashed line; a filled marker is a step that gained beyond its interval."""
    from agentic_rag.eval.plots import pyplot

    plt = pyplot()
    splits = list(next(iter(report["readers"].values())))
    fig, axes = plt.subplots(1, len(splits), figsize=(4.2 * len(splits), 3.8), sharey=False)
    for ax, split in zip(np.atleast_1d(axes), splits):
        for name, curve in report["readers"].items():
            pts = curve[split]["points"]
            x, yv = [p["rows"] for p in pts], [p["auc"] for p in pts]
            err = np.array([[p["auc"] - p["ci95"][0], p["ci95"][1] - p["auc"]] for p in pts]).T
            line = ax.errorbar(x, yv, yerr=err, capsize=3, marker="o", mfc="white", label=name)
            gained = [p for p in pts if p.get("step", {}).get("ci95_low", 0) > 0]
            ax.plot([p["rows"] for p in gained], [p["auc"] for p in gained], "o", color=line[0].get_color(), zorder=4)
        if report.get("shipped"):
            ax.axhline(report["shipped"][split]["auc"], ls="--", c="grey", label="shipped probe")
        ax.set_xscale("log")
        ax.set_title(split)
        ax.set_xlabel("training rows")
        ax.set_ylabel("AUC")
        ax.grid(alpha=0.3)
    np.atleast_1d(axes)[0].legend(fontsize=7, loc="lower right")
    fig.suptitle(f"answerability probe: AUC by training rows ({report['train_rows']} in all, "
                 f"{report['multi_hop_rows']} multi-hop; filled: a step that gained beyond its 95% interval)", fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path
