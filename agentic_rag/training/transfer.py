"""How a fitted decision does on question families it was not fitted on (issue 70; scripts/bench_lofo.py).

Cross-validation on a pooled mix rewards a signal that reads a family's layout as much as one that reads
answerability; leaving each family out in turn shows the difference as the left-out family's loss.
"""

from __future__ import annotations

import math
from typing import Any, Callable

import numpy as np

from agentic_rag.baug.fitted import CANDIDATE_FEATURES
from agentic_rag.training.decision import feature_set, fit_model

Refit = Callable[[str, list[dict[str, Any]], list[dict[str, Any]]], tuple[list[dict[str, Any]], list[dict[str, Any]]]]


def leave_one_family_out(records: list[dict[str, Any]], cut: float, drop: tuple[str, ...] = (),
                         extra: tuple[str, ...] = (), refit: Refit | None = None) -> dict[str, Any]:
    """The decision chosen by how it does where it was not fitted: for each question family (``rows.family_of``)
    in turn, fitted on the other families' drafts (without the signals in ``drop``, with the candidate signals
    in ``extra`` beside the decision's own) and read on that family's, at ``cut``. Per family: the AUC of P
    between right drafts and the rest; false refusal (answerable questions' drafts refused); right drafts kept
    (of the right drafts: what the baseline, answering every draft, shows right); refusal of unanswerable
    questions' drafts; the CRAG score over the drafts; and the least false refusal any cut on this P gives
    while refusing ``BEST_CUT_REFUSAL`` of the unanswerable drafts, a bound no recalibration can pass.
    The worst family's score and false refusal are what a change must raise (issue 70); the pooled score
    (every draft read by the fit that left its family out) must not fall beyond its interval. ``refit`` (family,
    train, test) -> (train, test) replaces a signal per fold, for a signal that is itself fitted (``reader_refit``)."""
    from sklearn.metrics import roc_auc_score

    from agentic_rag.eval.rows import family_of

    families = sorted({family_of(r["id"]) for r in records})
    out: dict[str, Any] = {"drop": list(drop), "extra": list(extra), "families": {}}
    pooled: list[int] = []
    for fam in families:
        train = [r for r in records if family_of(r["id"]) != fam]
        test = [r for r in records if family_of(r["id"]) == fam]
        if refit is not None:
            train, test = refit(fam, train, test)
        features = [f for f in feature_set(train, (*CANDIDATE_FEATURES, *extra)) if f not in drop]
        model, _ = fit_model(train, features)
        p = [model.probability(r) for r in test]
        answered = [r for r, q in zip(test, p) if q > cut]
        right = [r for r in test if r["right"]]
        unanswerable = [r for r in test if r["judgement"] == "unanswerable"]
        answerable = len(test) - len(unanswerable)
        y = [int(r["right"]) for r in test]
        pooled += [(1 if r["right"] else -1) if q > cut else 0 for r, q in zip(test, p)]
        out["families"][fam] = {
            "drafts": len(test), "right_drafts": len(right), "unanswerable_drafts": len(unanswerable),
            "auc": round(float(roc_auc_score(y, p)), 4) if 0 < sum(y) < len(y) else None,
            "false_refusal": round(1 - sum(r["judgement"] != "unanswerable" for r in answered) / answerable, 4)
            if answerable else None,
            "right_kept": round(sum(r["right"] for r in answered) / len(right), 4) if right else None,
            "refusal_unanswerable": round(1 - sum(r["judgement"] == "unanswerable" for r in answered) / len(unanswerable), 4)
            if unanswerable else None,
            "score": round((sum(r["right"] for r in answered) - sum(not r["right"] for r in answered)) / len(test), 4),
            "best_cut_false_refusal": best_cut_false_refusal(test, p),
            "features": features}
    scores = [v["score"] for v in out["families"].values()]
    out["worst_score"] = min(scores) if scores else None
    refusals = [v["false_refusal"] for v in out["families"].values() if v["false_refusal"] is not None]
    out["worst_false_refusal"] = max(refusals) if refusals else None
    mean = float(np.mean(pooled)) if pooled else 0.0
    half = 1.96 * float(np.std(pooled, ddof=1)) / math.sqrt(len(pooled)) if len(pooled) > 1 else 0.0
    out["pooled_score"] = {"score": round(mean, 4), "ci95": [round(mean - half, 4), round(mean + half, 4)], "drafts": len(pooled)}
    return out


BEST_CUT_REFUSAL = 0.70  # the share of unanswerable drafts a cut must refuse for its false refusal to count (issue 70)


def best_cut_false_refusal(test: list[dict[str, Any]], p: list[float]) -> float | None:
    """The least false refusal of any cut on ``p`` that refuses at least ``BEST_CUT_REFUSAL`` of the unanswerable
    drafts (every cut when there are none). Read on the family itself, so it is hindsight: what the ranking allows."""
    answerable = sorted(q for q, r in zip(p, test) if r["judgement"] != "unanswerable")
    unanswerable = sorted(q for q, r in zip(p, test) if r["judgement"] == "unanswerable")
    if not answerable:
        return None
    best = None
    for c in [-1.0, *sorted(set(p))]:  # answer where P > c
        if unanswerable and sum(q <= c for q in unanswerable) / len(unanswerable) < BEST_CUT_REFUSAL:
            continue
        fr = sum(q <= c for q in answerable) / len(answerable)
        best = fr if best is None else min(best, fr)
    return round(best, 4) if best is not None else None


READER_C = 0.003  # the shipped 1.5B reader's regularisation (its probe file's meta)
READER_FOLDS = 5


def reader_refit(states: dict[str, Any]) -> Refit:
    """The answerability reader refitted in each fold on the training families' drafts alone (their answer
    prompts' states, ``candidate_signals.collect_prompt_states``; label: the question is answerable), as the
    shipped reader is (a logistic probe on the last prompt token and one on the question's tokens, their logits
    averaged), so the left-out family's reading comes from a reader that never saw the family. The training
    drafts get out-of-fold readings, so the decision does not learn to trust an in-sample one."""
    from sklearn.model_selection import StratifiedKFold

    from agentic_rag.training.fitting import fit_logistic

    index = {str(i): k for k, i in enumerate(states["ids"])}
    views = [np.asarray(states["state"], dtype=np.float64), np.asarray(states["question_state"], dtype=np.float64)]

    def logit(rows: list[dict[str, Any]], fit_rows: list[dict[str, Any]]) -> np.ndarray:
        y = np.array([int(r["judgement"] != "unanswerable") for r in fit_rows])
        out = np.zeros(len(rows))
        for view in views:
            model = fit_logistic(view[[index[r["id"]] for r in fit_rows]], y, READER_C)
            out += model.decision_function(view[[index[r["id"]] for r in rows]]) / len(views)
        return out

    def refit(fam: str, train: list[dict[str, Any]], test: list[dict[str, Any]]):
        train = [r for r in train if r["id"] in index]
        test = [r for r in test if r["id"] in index]
        y = np.array([int(r["judgement"] != "unanswerable") for r in train])
        oof = np.zeros(len(train))
        for fit_i, read_i in StratifiedKFold(READER_FOLDS, shuffle=True, random_state=0).split(np.zeros(len(y)), y):
            oof[read_i] = logit([train[i] for i in read_i], [train[i] for i in fit_i])
        left_out = logit(test, train)
        return ([{**r, "answerability": v} for r, v in zip(train, _probability(oof))],
                [{**r, "answerability": v} for r, v in zip(test, _probability(left_out))])

    return refit


def _probability(logits: np.ndarray) -> list[float]:
    return [round(float(v), 4) for v in 1 / (1 + np.exp(-logits))]
