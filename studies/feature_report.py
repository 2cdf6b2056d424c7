"""Comparing what the answerability probe reads (training/views.py): each feature set fitted on the
training views with grouped cross-validation, scored on each test split, and set against the shipped
probe's view with a paired interval. scripts/compare_probe_features.py writes the report and table."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from agentic_rag.eval.metrics import auc
from agentic_rag.reader.cross_encoder import join_readings
from agentic_rag.training.fitting import cross_validated_scores, fit_logistic
from agentic_rag.training.probe_report import auc_by_source, auc_difference, learning_curve
from agentic_rag.training.views import ensembles, feature_sets


def _family(source: str) -> str:
    """The source a row is scored within: a multi-hop question and its twin with a page removed are
    one source, as an NQ record and its answer-removed twin are (probe_report.source_pairs)."""
    return source.split("_")[0] if source.startswith("hotpotqa_") else source


def compare_views(train: dict[str, np.ndarray], evals: dict[str, dict[str, np.ndarray]], layer: int,
                  c_grid: list[float], curve: bool = False,
                  progress: Callable[[str, dict], Any] = lambda name, row: None) -> dict[str, Any]:
    """The report of every feature set and ensemble around ``layer``: CV AUC per C (the best kept),
    by source, optionally the learning curve, the AUC on each split and its difference to the first set."""
    n_layers = int(train["n_layers"]) if "n_layers" in train else train["last"].shape[1] - 1
    y, groups = train["y"], [str(g) for g in train["groups"]]
    report: dict[str, Any] = {
        "train": {"rows": len(y), "answerable": int(y.sum()),
                  "by_source": {str(s): int((train["sources"] == s).sum()) for s in sorted(set(train["sources"]))},
                  "prefill_ms_median": float(np.median(train["ms"]))},
        "c_grid": list(c_grid), "feature_sets": {}}
    sources = np.array([_family(s) for s in train["sources"]])
    scores: dict[str, dict[str, np.ndarray]] = {}  # per set: out-of-fold and per-split P(answerable)
    for name, make in feature_sets(layer, n_layers).items():
        try:  # the draft view needs a decoded draft per training prompt, and a collection may hold some layers only
            X = make(train).astype(np.float64)
        except KeyError:
            report.setdefault("not_compared", []).append(name)
            continue
        by_c = {c: cross_validated_scores(X, y, groups, c) for c in c_grid}
        c = max(by_c, key=lambda k: auc(y, by_c[k]))  # the regularisation chosen on the training rows alone
        row = {"features": int(X.shape[1]), "cv_auc_by_c": {str(k): round(auc(y, v), 4) for k, v in by_c.items()},
               "c": c, "cv_auc": round(auc(y, by_c[c]), 4), "cv_auc_by_source": auc_by_source(by_c[c], y, sources)}
        if curve:
            row["learning_curve"] = learning_curve(X, y, groups, c, fractions=(0.25, 0.5, 1.0), draws=2)
        model = fit_logistic(X, y, c)
        scores[name] = {"cv": by_c[c]}
        for split, views in evals.items():
            scores[name][split] = p = model.predict_proba(make(views).astype(np.float64))[:, 1]
            row[f"auc_{split}"] = round(auc(views["y"], p), 4)
        report["feature_sets"][name] = row
        progress(name, row)
    for name, members in ensembles(layer).items():
        scores[name] = joined = {k: np.array([join_readings(*(float(scores[m][k][i]) for m in members))
                                              for i in range(len(scores[members[0]][k]))]) for k in scores[members[0]]}
        row = {"features": sum(report["feature_sets"][m]["features"] for m in members), "c": "per member",
               "cv_auc": round(auc(y, joined["cv"]), 4), "cv_auc_by_source": auc_by_source(joined["cv"], y, sources),
               **{f"auc_{split}": round(auc(evals[split]["y"], joined[split]), 4) for split in evals}}
        report["feature_sets"][name] = row
        progress(name, row)
    base = next(iter(scores))  # the shipped probe's view: every other set is measured against it
    for name, row in report["feature_sets"].items():
        if name != base:
            row["vs_base"] = {split: auc_difference(evals[split]["y"], scores[base][split], scores[name][split])
                              for split in evals}
    return report


def features_table(report: dict[str, Any], splits: list[str]) -> str:
    head = ["feature set", "features", "C", "CV AUC (train rows)", "CV AUC by source", "learning curve (25 / 50 / 100%)"] + [
        f"AUC {s} (vs {next(iter(report['feature_sets']))})" for s in splits]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for name, row in report["feature_sets"].items():
        by_source = ", ".join(f"{k} {v:.3f}" for k, v in row["cv_auc_by_source"].items())
        curve = " / ".join(f"{v:.3f}" for v in row["learning_curve"].values()) if row.get("learning_curve") else "-"
        cells = [name, str(row["features"]), str(row["c"]), f"{row['cv_auc']:.3f}", by_source, curve]
        for s in splits:
            d = row.get("vs_base", {}).get(s)
            cells.append(f"{row[f'auc_{s}']:.3f}" + (f" ({d['diff']:+.3f}, {d['ci95_low']:+.3f} to {d['ci95_high']:+.3f})" if d else ""))
        lines.append("| " + " | ".join(cells) + " |")
    t = report["train"]
    return (f"Answerability probe by feature set: fitted on {t['rows']} training prompts "
            f"({t['answerable']} answerable; {', '.join(f'{k} {v}' for k, v in t['by_source'].items())}), "
            "the logistic regression's C chosen per set by article-grouped CV on those rows; one prefill reads every set "
            f"(median {t['prefill_ms_median']:.0f} ms per prompt here). On each test split, the AUC difference to the "
            "first set with its paired 95% bootstrap interval."
            + (f" Not compared: {', '.join(report['not_compared'])} (the state after the draft needs the draft decoded for "
               "every training prompt, several seconds more per prompt on this CPU)." if report.get("not_compared") else "")
            + "\n\n" + "\n".join(lines) + "\n")
