"""Reading the answerability probe's fit: refusal rates at a threshold, AUC per data source, the
learning curve, and the AUC a score needs to meet the refusal targets (`agentic-rag train probe` writes
them into the probe's training report)."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from agentic_rag.eval.metrics import auc
from agentic_rag.training.fitting import cross_validated_scores


def refusal_rates(p: np.ndarray, y: np.ndarray, threshold: float) -> dict[str, float | None]:
    """Refusing below ``threshold``: the share of unanswerable rows refused and of answerable rows
    refused (None for a class the rows do not have)."""
    def share(mask: np.ndarray) -> float | None:
        return round(float((p[mask] < threshold).mean()), 3) if mask.any() else None

    return {"refusal_unanswerable": share(y == 0), "false_refusal": share(y == 1)}


def refusal_table(p: np.ndarray, y: np.ndarray, sources: np.ndarray,
                  thresholds: tuple[float, ...] = (0.3, 0.4, 0.5, 0.6, 0.7)) -> list[dict[str, float]]:
    """``refusal_rates`` of each source at each threshold: a row per threshold."""
    table = []
    for t in thresholds:
        row = {"threshold": t}
        for src in sorted(set(sources)):
            m = sources == src
            row.update({f"{src}_{k}": v for k, v in refusal_rates(p[m], y[m], t).items() if v is not None})
        table.append(row)
    return table


def source_pairs(y: np.ndarray, sources: np.ndarray) -> dict[str, np.ndarray]:
    """Rows to score each source on: its own rows, and for a negatives-only source (answer-removed
    twins) also the answerable rows of the source it was built from."""
    out = {}
    for src in sorted(set(sources)):
        m = sources == src
        if not (m & (y == 1)).any():
            m = m | ((sources == src.removesuffix("_removed")) & (y == 1))
        if (m & (y == 0)).any() and (m & (y == 1)).any():
            out[str(src)] = m
    return out


def auc_by_source(oof: np.ndarray, y: np.ndarray, sources: np.ndarray) -> dict[str, float]:
    return {src: round(auc(y[m], oof[m]), 4) for src, m in source_pairs(y, sources).items()}


def learning_curve(X: np.ndarray, y: np.ndarray, groups: list[str], c: float,
                   fractions=(0.25, 0.5, 0.75, 1.0), draws: int = 3) -> dict[str, float]:
    """Article-grouped CV AUC when each training fold keeps only a fraction of its rows (mean of
    ``draws`` random subsets): whether more rows of the same kind would still help."""
    rng = np.random.default_rng(0)
    curve = {}
    for fraction in fractions:
        n = 1 if fraction >= 1.0 else draws
        aucs = [auc(y, cross_validated_scores(X, y, groups, c, train_fraction=fraction, rng=rng)) for _ in range(n)]
        curve[str(fraction)] = round(float(np.mean(aucs)), 3)
    return curve


def required_auc(refusal: float, false_refusal: float) -> float:
    """The AUC a score needs for its ROC to pass through (false_refusal, refusal), under an
    equal-variance binormal model: d' = z(refusal) + z(1 - false_refusal), AUC = Phi(d' / sqrt 2)."""
    from scipy.stats import norm

    d_prime = norm.ppf(refusal) + norm.ppf(1.0 - false_refusal)
    return round(float(norm.cdf(d_prime / np.sqrt(2.0))), 3)


def auc_difference(y: np.ndarray, base: np.ndarray, other: np.ndarray, samples: int = 1000, seed: int = 0) -> dict[str, float]:
    """AUC(other) - AUC(base) on the same questions, with its paired 95% bootstrap interval (the same
    resampled questions score both): whether a reader's gain is more than the split's noise."""
    y, base, other = np.asarray(y), np.asarray(base), np.asarray(other)
    idx = np.random.default_rng(seed).integers(0, len(y), (samples, len(y)))
    idx = idx[[0 < y[i].sum() < len(y) for i in idx]]
    diffs = _rank_auc(y[idx], other[idx]) - _rank_auc(y[idx], base[idx])
    low, high = np.percentile(diffs, [2.5, 97.5])
    return {"diff": round(auc(y, other) - auc(y, base), 4), "ci95_low": round(float(low), 4), "ci95_high": round(float(high), 4)}


def _rank_auc(y: np.ndarray, s: np.ndarray) -> np.ndarray:
    """Row-wise ROC AUC (Mann-Whitney, ties half) of [samples, n] labels and scores, in one pass."""
    from scipy.stats import rankdata

    ranks = rankdata(s, axis=1)
    pos = y.sum(axis=1)
    neg = y.shape[1] - pos
    return ((ranks * y).sum(axis=1) - pos * (pos + 1) / 2) / (pos * neg)


def roc_plot(oof: np.ndarray, y: np.ndarray, sources: np.ndarray, path: Path, auc: float) -> Path:
    """Out-of-fold ROC per source, with the issue's operating point (refuse >= 70% of unanswerable
    questions at <= 15% false refusals) marked: a curve that passes below it cannot meet the targets."""
    from sklearn.metrics import roc_curve

    from agentic_rag.eval.plots import pyplot

    plt = pyplot()
    fig, ax = plt.subplots(figsize=(5, 5))
    for src, m in source_pairs(y, sources).items():
        # "refuse" is the positive class and a lower P(answerable) refuses first:
        # x = answerable refused (false refusal), y = unanswerable refused
        fr, rr, _ = roc_curve(y[m] == 0, -oof[m])
        ax.plot(fr, rr, label=f"{src} (n={int(m.sum())})")
    ax.plot([0, 1], [0, 1], ls=":", c="grey")
    ax.scatter([0.15], [0.70], marker="*", s=160, c="crimson", zorder=3, label="target (15% FR, 70% refusal)")
    ax.set_xlabel("false refusal (answerable refused)")
    ax.set_ylabel("refusal of unanswerable")
    ax.set_title(f"answerability probe, out-of-fold (AUC {auc:.3f})")
    ax.legend(loc="lower right", fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path
