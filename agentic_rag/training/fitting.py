"""Fitting the answerability probe (reader/probe.py reads what this writes), run by `agentic-rag train probe`.

The layer whose states separate answerable from unanswerable prompts best is chosen by
cross-validation grouped by article, so no article's questions sit on both sides of a fold; then a
standardised logistic regression is fitted on every row. scikit-learn is needed here only, never at
answer time.
"""

from __future__ import annotations

from typing import Any, Sequence

import numpy as np

from agentic_rag.eval.metrics import auc


def cross_validated_scores(
    X: np.ndarray,
    y: np.ndarray,
    groups: Sequence[str],
    c: float = 0.05,
    folds: int = 5,
    train_fraction: float = 1.0,
    rng: np.random.Generator | None = None,
) -> np.ndarray:
    """Out-of-fold P(answerable) with folds split by ``groups`` (articles), so no article is in both.

    ``train_fraction`` < 1 fits each fold on a random subset of its training rows (a learning curve)."""
    out = np.zeros(len(y))
    for train, test in grouped_folds(y, groups, folds):
        if train_fraction < 1.0:
            train = (rng or np.random.default_rng(0)).choice(train, int(len(train) * train_fraction), replace=False)
        model = fit_logistic(X[train], y[train], c)
        out[test] = model.predict_proba(X[test])[:, 1]
    return out


def grouped_folds(y: np.ndarray, groups: Sequence[str], folds: int = 5) -> list[tuple[np.ndarray, np.ndarray]]:
    """(train, test) row indices of ``folds`` folds split by group (article), so no group is in both."""
    from sklearn.model_selection import GroupKFold

    y = np.asarray(y)
    return list(GroupKFold(n_splits=min(folds, len(set(groups)))).split(np.zeros(len(y)), y, groups))


# each view's L2 strength (the logistic regression's C), chosen by article-grouped CV when the views were
# compared (benchmarks/probe/features.md): what fitting a probe of that view uses unless told otherwise
VIEW_C = {"last": 0.003, "question": 0.001}


def fit_logistic(X: np.ndarray, y: np.ndarray, c: float):
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    return make_pipeline(StandardScaler(), LogisticRegression(C=c, max_iter=2000)).fit(X, y)


def fit_probe(
    states: np.ndarray,
    y: np.ndarray,
    groups: Sequence[str],
    model_key: str,
    layers: Sequence[int] | None = None,
    c: float = 0.05,
    folds: int = 5,
    meta: dict[str, Any] | None = None,
    collected: Sequence[int] | None = None,
    view: str = "last",
) -> tuple[Any, dict[str, Any]]:
    """Pick the layer with the best article-grouped cross-validated AUC, then fit on all rows.

    ``states`` is [n, layers, hidden] of one ``view`` (the last prompt token's by default), every layer or
    the layers ``collected`` names in order; ``y`` is 1 = answerable.
    """
    from agentic_rag.reader.probe import AnswerabilityProbe

    y = np.asarray(y, dtype=int)
    collected = list(collected) if collected is not None else list(range(states.shape[1]))
    layers = list(layers if layers is not None else collected)
    if missing := sorted(set(layers) - set(collected)):
        raise ValueError(f"layers {missing} were not collected (collected: {collected})")
    per_layer = {}
    for layer in layers:
        oof = cross_validated_scores(states[:, collected.index(layer), :].astype(np.float64), y, groups, c, folds)
        per_layer[layer] = {"auc": round(auc(y, oof), 4), "oof": oof}
    best = max(layers, key=lambda layer: per_layer[layer]["auc"])
    model = fit_logistic(states[:, collected.index(best), :].astype(np.float64), y, c)
    scaler, lr = model.steps[0][1], model.steps[1][1]
    probe = AnswerabilityProbe(
        layer=int(best),
        mean=scaler.mean_.tolist(),
        scale=scaler.scale_.tolist(),
        coef=lr.coef_[0].tolist(),
        intercept=float(lr.intercept_[0]),
        model_key=model_key,
        hidden_size=int(states.shape[2]),
        view=view,
        meta={**(meta or {}), "c": c, "cv_auc": per_layer[best]["auc"], "n": int(len(y)), "answerable": int(y.sum())},
    )
    report = {
        "layer_auc": {int(k): v["auc"] for k, v in per_layer.items()},
        "chosen_layer": int(best),
        "oof_scores": per_layer[best]["oof"].tolist(),
    }
    return probe, report
