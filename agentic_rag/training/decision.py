"""Fit the decision ``GATE_POLICY=fitted`` reads (``agentic-rag train decision``).

One run of the agent under the hand-set thresholds on a development split gives every draft's signals;
each draft is judged against the gold (right, wrong, or a draft to an unanswerable question) and
P(right | signals) is fitted on them. Two model families are compared by stratified cross-validation
on the same drafts: a standardised logistic regression (its weights held at zero or above, so P never
falls as a signal of support rises) and gradient-boosted trees. The one with the
lower cross-validated log-loss is kept, the logistic one unless the trees beat it by more than
``BOOSTING_MARGIN`` (it is smoother on a few hundred rows, its contributions are exact, and a
logistic regression's output is already a calibrated probability when its log-loss is the lower
one); the file says which and why. Drafts that hedge are left out: the policy refuses them by rule
before the fitted decision is read.

When the verifier is on, every draft also gets the verifier's P(yes) (one call per draft the run
did not already verify), and a second model is fitted with it: the one the grey zone reads.

A split with fewer than ``MIN_DRAFTS`` drafts, or fewer than ``MIN_PER_CLASS`` right or wrong ones, is
refused (``DevSplitError``): a decision fitted on it would be noise.
"""

from __future__ import annotations

import hashlib
import json
import math
from pathlib import Path
from typing import Any

import numpy as np

from agentic_rag.baug.fitted import (
    CANDIDATE_FEATURES,
    VERIFIER_FEATURE,
    DecisionFile,
    FittedModel,
    cut_for,
    feature_value,
    model_key,
)
from agentic_rag.errors import replace_file, write_output

MIN_DRAFTS = 30  # drafts a development split must give before a decision is fitted on it
MIN_PER_CLASS = 5  # right and wrong drafts each, at least (cross-validation needs both in every fold)
CV_FOLDS = 5  # at most; fewer when a class has fewer drafts
FEATURE_MIN_SHARE = 0.8  # a signal enters the fit when at least this share of drafts has it measured
BOOSTING_MARGIN = 0.01  # log-loss (nats) by which the trees must win to be kept over the logistic model
RELIABILITY_BINS = 10


class DevSplitError(ValueError):
    """The development split cannot support a fitted decision (too small or one-sided)."""


def judgement_of(row: dict[str, Any]) -> str:
    """right, wrong or unanswerable (any draft to a question without an answer is wrong): the draft's,
    whatever the system then did with it."""
    from agentic_rag.eval.judge import judge
    from agentic_rag.eval.rows import gold_is_idk
    from agentic_rag.generator.short_answer import short_answer
    from agentic_rag.text import strip_markup

    if gold_is_idk(row):
        return "unanswerable"
    answer = strip_markup(row["draft"]) or row["draft"]
    j = judge(answer, short_answer(row["query"], answer), row["gold"], row.get("alternatives") or [], False, question=row["query"])
    return "right" if j.label == "accurate" else "wrong"


def draft_records(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """One record per draft the fitted decision would read: its signals and its judgement."""
    from agentic_rag.prompts import is_hedging

    out = []
    for row in rows:
        draft = (row.get("draft") or "").strip()
        if not draft or is_hedging(draft):
            continue
        signals = row.get("signals") or {}
        label = judgement_of(row)
        out.append({"id": row["id"], "judgement": label, "right": label == "right", "reason": row.get("reason"),
                    "status": row.get("status"),
                    **{k: feature_value(signals, k) for k in (*CANDIDATE_FEATURES, VERIFIER_FEATURE)}})
    return out


def fill_verdicts(records: list[dict[str, Any]], rows: list[dict[str, Any]], settings) -> int:
    """The verifier's P(yes) for every draft the run did not verify; how many calls that took. It reads
    the sentences the draft quoted, as at run time; a result row keeps no cited text, so a draft that
    quoted nothing is asked about an empty evidence (at run time: the first cited characters)."""
    from agentic_rag.baug.verifier import VERIFY_STAGE, verify_messages
    from agentic_rag.llm.choices import yes_probability

    by_id = {r["id"]: r for r in rows}
    calls = 0
    for rec in records:
        if rec[VERIFIER_FEATURE] is not None:
            continue
        row = by_id[rec["id"]]
        messages = verify_messages(row["query"], row["draft"], row.get("signals") or {}, "")
        rec[VERIFIER_FEATURE] = round(yes_probability(messages, settings, VERIFY_STAGE)[0], 4)
        calls += 1
    return calls


def feature_set(records: list[dict[str, Any]], candidates=CANDIDATE_FEATURES) -> list[str]:
    """The signals measured on (nearly) every draft and not constant: what this backend gives."""
    out = []
    for key in candidates:
        values = [r[key] for r in records if r.get(key) is not None]
        if len(values) >= FEATURE_MIN_SHARE * len(records) and len(set(values)) > 1:
            out.append(key)
    return out


def check_split(records: list[dict[str, Any]]) -> None:
    right = sum(r["right"] for r in records)
    wrong = len(records) - right
    if len(records) < MIN_DRAFTS:
        raise DevSplitError(f"the development split gave {len(records)} drafts; a fitted decision needs at least "
                            f"{MIN_DRAFTS} (use a larger split, e.g. --n)")
    if min(right, wrong) < MIN_PER_CLASS:
        scarce = "wrong" if wrong < MIN_PER_CLASS else "right"
        raise DevSplitError(f"the development split is one-sided: {right} right and {wrong} wrong drafts (at least "
                            f"{MIN_PER_CLASS} of each are needed); add questions the model gets {scarce}")


def _matrix(records: list[dict[str, Any]], features: list[str]) -> tuple[np.ndarray, np.ndarray, list[float]]:
    raw = np.array([[np.nan if r.get(k) is None else float(r[k]) for k in features] for r in records], dtype=float)
    reference = [float(np.nanmean(raw[:, j])) for j in range(len(features))]
    x = np.where(np.isnan(raw), np.array(reference)[None, :], raw)
    return x, np.array([int(r["right"]) for r in records]), reference


class MonotoneLogistic:
    """A standardised, L2-penalised logistic regression whose weights cannot go below zero.

    Every candidate signal means "better supported" as it rises, so a negative weight is an artefact of
    correlated signals (faithfulness beside overlap), and it reads backwards on one draft: a draft the
    sources back more fully would get a lower P. Bounding the weights at zero keeps P monotone in every
    signal; the objective is sklearn's (C times the summed log-loss plus half the squared weights)."""

    def __init__(self, c: float = 1.0):
        self.c = c

    def fit(self, x: np.ndarray, y: np.ndarray) -> "MonotoneLogistic":
        from scipy.optimize import minimize

        self.mean_ = x.mean(axis=0)
        scale = x.std(axis=0)
        self.scale_ = np.where(scale > 0, scale, 1.0)
        z = (x - self.mean_) / self.scale_
        sign = 2.0 * y - 1.0

        def loss(theta: np.ndarray) -> tuple[float, np.ndarray]:
            w, b = theta[:-1], theta[-1]
            margin = sign * (z @ w + b)
            nll = np.logaddexp(0.0, -margin)
            g = -sign * (1.0 / (1.0 + np.exp(margin)))  # d nll / d logit
            return (self.c * nll.sum() + 0.5 * w @ w,
                    np.append(self.c * (z.T @ g) + w, self.c * g.sum()))

        n = z.shape[1]
        bounds = [(0.0, None)] * n + [(None, None)]
        result = minimize(loss, np.zeros(n + 1), jac=True, method="L-BFGS-B", bounds=bounds)
        self.coef_, self.intercept_ = result.x[:-1], float(result.x[-1])
        return self

    def predict_proba(self, x: np.ndarray) -> np.ndarray:
        p = 1.0 / (1.0 + np.exp(-(((x - self.mean_) / self.scale_) @ self.coef_ + self.intercept_)))
        return np.column_stack([1.0 - p, p])


def _logistic(x: np.ndarray, y: np.ndarray) -> MonotoneLogistic:
    return MonotoneLogistic(c=1.0).fit(x, y)


def _boosting(x: np.ndarray, y: np.ndarray):
    from sklearn.ensemble import GradientBoostingClassifier

    return GradientBoostingClassifier(n_estimators=100, max_depth=2, learning_rate=0.05, subsample=0.8,
                                      random_state=0).fit(x, y)


FAMILIES = {"logistic": _logistic, "boosting": _boosting}


def _export(kind: str, fitted, features: list[str], reference: list[float]) -> FittedModel:
    """The fitted estimator as plain numbers (no pickle: a decision file is data, safe to share)."""
    if kind == "logistic":
        params = {"mean": [round(float(v), 6) for v in fitted.mean_], "scale": [round(float(v), 6) for v in fitted.scale_],
                  "coef": [round(float(v), 6) for v in fitted.coef_], "intercept": round(fitted.intercept_, 6)}
    else:
        prior = float(np.clip(fitted.init_.class_prior_[1], 1e-6, 1 - 1e-6))
        trees = []
        for est in fitted.estimators_[:, 0]:
            t = est.tree_
            trees.append({"left": t.children_left.tolist(), "right": t.children_right.tolist(),
                          "feature": t.feature.tolist(), "threshold": [round(float(v), 6) for v in t.threshold],
                          "value": [round(float(v), 6) for v in t.value[:, 0, 0]]})
        params = {"init": round(math.log(prior / (1 - prior)), 6), "learning_rate": fitted.learning_rate, "trees": trees}
    return FittedModel(kind, list(features), [round(v, 6) for v in reference], params)


def cross_validated(records: list[dict[str, Any]], features: list[str]) -> dict[str, Any]:
    """Each family's out-of-fold P(right) and its log-loss, AUC and Brier score on the drafts."""
    from sklearn.metrics import brier_score_loss, log_loss, roc_auc_score
    from sklearn.model_selection import StratifiedKFold

    x, y, _ = _matrix(records, features)
    folds = StratifiedKFold(n_splits=min(CV_FOLDS, int(min(y.sum(), len(y) - y.sum()))), shuffle=True, random_state=0)
    out = {}
    for kind, fit in FAMILIES.items():
        p = np.zeros(len(y))
        for train, test in folds.split(x, y):
            p[test] = fit(x[train], y[train]).predict_proba(x[test])[:, 1]
        p = np.clip(p, 1e-6, 1 - 1e-6)
        out[kind] = {"log_loss": round(float(log_loss(y, p)), 4), "auc": round(float(roc_auc_score(y, p)), 4),
                     "brier": round(float(brier_score_loss(y, p)), 4), "oof": [round(float(v), 4) for v in p]}
    return out


def fit_model(records: list[dict[str, Any]], features: list[str]) -> tuple[FittedModel, dict[str, Any]]:
    """The chosen family fitted on every draft, and the cross-validation that chose it."""
    cv = cross_validated(records, features)
    boosting_wins = cv["boosting"]["log_loss"] < cv["logistic"]["log_loss"] - BOOSTING_MARGIN
    kind = "boosting" if boosting_wins else "logistic"
    why = (f"cross-validated log-loss {cv['boosting']['log_loss']} (trees) against {cv['logistic']['log_loss']} (logistic), "
           + ("the trees win by more than" if boosting_wins else "the trees do not win by more than")
           + f" {BOOSTING_MARGIN}; AUC {cv['boosting']['auc']} against {cv['logistic']['auc']}")
    x, y, reference = _matrix(records, features)
    model = _export(kind, FAMILIES[kind](x, y), features, reference)
    return model, {"chosen": kind, "why": why, **{k: {m: v for m, v in r.items() if m != "oof"} for k, r in cv.items()},
                   "oof": cv[kind]["oof"]}


def fit_decision(records: list[dict[str, Any]], settings, dev: dict[str, Any]) -> tuple[DecisionFile, dict[str, Any]]:
    """The decision file for the configured model, and the cross-validated P of every draft (for plots)."""
    check_split(records)
    features = feature_set(records)
    if not features:
        raise DevSplitError("no signal varies across the development split's drafts; nothing to fit")
    base, cv = fit_model(records, features)
    verified, verified_cv = None, None
    checked = [r for r in records if r.get(VERIFIER_FEATURE) is not None]
    if settings.baug.VERIFIER_ENABLED and len(checked) == len(records):
        verified, verified_cv = fit_model(records, [*features, VERIFIER_FEATURE])
    meta = {
        "model_identity": dev.get("model"),
        "fitted_on": {k: v for k, v in dev.items() if k != "model"},
        "drafts": len(records),
        "judgements": {k: sum(r["judgement"] == k for r in records) for k in ("right", "wrong", "unanswerable")},
        "cv": {k: v for k, v in cv.items() if k != "oof"},
        "cv_verified": {k: v for k, v in verified_cv.items() if k != "oof"} if verified_cv else None,
        "note": "P(the draft is right | signals); answer when P > cost / (1 + cost) (WRONG_ANSWER_COST)",
    }
    decision = DecisionFile(model_key=model_key(settings), backend=settings.llm.LLM_BACKEND, features=features,
                            base=base, verified=verified, meta=meta)
    return decision, {"base": cv["oof"], "verified": verified_cv["oof"] if verified_cv else None}


def data_hash(records: list[dict[str, Any]]) -> str:
    """Which drafts (ids, judgements and signals) a decision was fitted on."""
    return hashlib.sha256(json.dumps(records, sort_keys=True, default=str).encode()).hexdigest()


def reliability(p: list[float], y: list[int], bins: int = RELIABILITY_BINS) -> list[dict[str, Any]]:
    """Per probability bin: the mean predicted P, the observed share of right drafts, how many drafts."""
    out = []
    for b in range(bins):
        lo, hi = b / bins, (b + 1) / bins
        idx = [i for i, v in enumerate(p) if lo <= v < hi or (b == bins - 1 and v == 1.0)]
        if idx:
            out.append({"p": round(sum(p[i] for i in idx) / len(idx), 4), "observed": round(sum(y[i] for i in idx) / len(idx), 4),
                        "n": len(idx)})
    return out


def plot_reliability(p: list[float], y: list[int], path: Path, title: str) -> Path:
    from agentic_rag.eval.plots import finish_axes, pyplot

    plt = pyplot()
    fig, ax = plt.subplots(figsize=(4.5, 4.2))
    bins = reliability(p, y)
    ax.plot([0, 1], [0, 1], color="grey", lw=0.8, ls=":")
    ax.plot([b["p"] for b in bins], [b["observed"] for b in bins], "o-")
    for b in bins:
        ax.annotate(str(b["n"]), (b["p"], b["observed"]), fontsize=7, xytext=(3, -9), textcoords="offset points")
    ax.set_xlim(0, 1)
    return finish_axes(plt, fig, ax, path, title, "predicted P(right) (cross-validated)", "observed share right")


def plot_risk_coverage(records: list[dict[str, Any]], p: list[float], path: Path, title: str) -> Path:
    """Drafts admitted from the highest cross-validated P down (coverage of the drafts, risk = wrong
    share of those admitted); the thresholds policy's own operating point on the same drafts."""
    from agentic_rag.eval.plots import finish_axes, pyplot

    plt = pyplot()
    fig, ax = plt.subplots(figsize=(5.5, 3.8))
    order = sorted(range(len(p)), key=lambda i: -p[i])
    wrong, xs, ys = 0, [], []
    for k, i in enumerate(order, start=1):
        wrong += not records[i]["right"]
        xs.append(k / len(p))
        ys.append(wrong / k)
    ax.plot(xs, ys, marker=".", markersize=3, label=f"fitted P (mean risk {sum(ys) / len(ys):.3f})")
    shown = [r for r in records if r["status"] == "ok"]
    if shown:
        risk = sum(not r["right"] for r in shown) / len(shown)
        ax.plot([len(shown) / len(records)], [risk], "s", color="black", label=f"thresholds (risk {risk:.3f})")
    ax.set_xlim(0, 1)
    ax.legend(fontsize=8)
    return finish_axes(plt, fig, ax, path, title, "coverage (fraction of drafts answered)", "risk (wrong share of answered)")


def signal_aucs(records: list[dict[str, Any]], candidates=(*CANDIDATE_FEATURES, VERIFIER_FEATURE)) -> dict[str, Any]:
    """Each signal's AUC on the drafts that have it: right vs wrong, and answerable vs unanswerable
    questions (None when a group is empty). Above 0.5: higher values go with right / answerable."""
    from sklearn.metrics import roc_auc_score

    out = {}
    for key in candidates:
        have = [r for r in records if r.get(key) is not None]
        row: dict[str, Any] = {"n": len(have)}
        for name, label in (("right_vs_wrong", lambda r: r["right"]),
                            ("answerable_vs_unanswerable", lambda r: r["judgement"] != "unanswerable")):
            y = [int(label(r)) for r in have]
            row[name] = round(float(roc_auc_score(y, [float(r[key]) for r in have])), 4) if 0 < sum(y) < len(y) else None
        out[key] = row
    return out


def fit_from_rows(rows: list[dict[str, Any]], settings, out_dir: Path, dev: dict[str, Any],
                  decision_path: Path | None = None, risks: tuple[list[float], float] | None = None) -> dict[str, Any]:
    """Records, the fit, the decision file and its two plots; the report ``train decision`` prints. With
    ``risks`` (the risks and delta of ``--risk``), the decision file also holds a threshold per risk,
    calibrated on the same drafts' out-of-fold P (``eval/risk_control.py``)."""
    records = draft_records(rows)
    check_split(records)  # before any verifier call: a refusal costs nothing
    verdict_calls = fill_verdicts(records, rows, settings) if settings.baug.VERIFIER_ENABLED else 0
    dev = {**dev, "drafts_sha256": data_hash(records)}
    decision, oof = fit_decision(records, settings, dev)
    if risks:
        from agentic_rag.eval.risk_control import fitted_drafts, risk_section

        about = {"source": "each draft's out-of-fold P(right) in the fit's cross-validation", **dev}
        decision.meta["risk"] = risk_section(fitted_drafts(rows, records, oof["base"]), rows, *risks, about)
    out_dir.mkdir(parents=True, exist_ok=True)
    decision_path = decision_path or out_dir / "decision.json"
    decision_path.parent.mkdir(parents=True, exist_ok=True)
    write_output(decision_path, json.dumps(decision.to_dict(), indent=1) + "\n")  # a --decision-file the user named
    # each draft with the P a model fitted without it gave it: what a risk is calibrated on (eval/risk_control.py)
    replace_file(out_dir / "drafts.jsonl", "".join(json.dumps({**r, "p_oof": p}) + "\n" for r, p in zip(records, oof["base"])))
    y = [int(r["right"]) for r in records]
    name = decision.meta["model_identity"].get("model", "model") if decision.meta.get("model_identity") else "model"
    plots = [str(plot_reliability(oof["base"], y, out_dir / "reliability.png", f"Reliability of the fitted P ({name})")),
             str(plot_risk_coverage(records, oof["base"], out_dir / "risk_coverage.png",
                                    f"Risk-coverage on dev drafts ({name})"))]
    return {"decision_file": str(decision_path), "plots": plots, "features": decision.features,
            "chosen": decision.meta["cv"]["chosen"], "why": decision.meta["cv"]["why"], "cv": decision.meta["cv"],
            "cv_verified": decision.meta["cv_verified"], "drafts": len(records), "judgements": decision.meta["judgements"],
            "verifier_calls": verdict_calls, "cut": cut_for(settings.baug.WRONG_ANSWER_COST),
            "signal_auc": signal_aucs(records),
            "risk_levels": (decision.meta.get("risk") or {}).get("levels")}


def to_markdown(report: dict[str, Any]) -> str:
    cv = report["cv"]
    lines = [
        f"# Fitted decision ({report['drafts']} drafts: {report['judgements']})", "",
        f"Features: {', '.join(report['features'])}. Chosen: **{report['chosen']}** ({report['why']}).", "",
        "| model | CV log-loss | CV AUC | CV Brier |", "|---|---|---|---|",
        *[f"| {k} | {cv[k]['log_loss']} | {cv[k]['auc']} | {cv[k]['brier']} |" for k in ("logistic", "boosting")],
        "", f"Decision file: {report['decision_file']}; plots: {', '.join(report['plots'])}",
    ]
    if report.get("risk_levels"):
        lines += ["", "| risk | threshold on P(right) | coverage | calibration risk | upper bound |", "|---|---|---|---|---|",
                  *[f"| {k} | {v['threshold']} | {v['coverage']} | {v['risk']} | {v['bound']} |"
                    for k, v in report["risk_levels"].items()]]
    return "\n".join(lines) + "\n"


def calibrate_fit(settings, out_dir: str | Path, dataset: str | Path | None = None, run_dir: str | Path | None = None,
                  n: int | None = None, seed: int | None = None, decision_path: str | Path | None = None,
                  extra_config: dict[str, Any] | None = None, risks: tuple[list[float], float] | None = None) -> dict[str, Any]:
    """``train decision``: run the agent once on ``dataset`` under the hand-set thresholds (or read the
    run folder ``run_dir``) and fit the decision on its drafts."""
    from agentic_rag.eval.provenance import logprob_report, model_identity
    from agentic_rag.eval.results import read_results
    from agentic_rag.eval.resume import _identity
    from agentic_rag.eval.runner import run_eval

    out = Path(out_dir)
    if run_dir is None:
        if dataset is None:
            raise ValueError("give --dataset (a development split) or --run (a run folder of one)")
        run_settings = settings.replace(GATE_POLICY="thresholds")  # the signals every draft gets, unfiltered by a fit
        if run_settings.paths.LLM_CACHE_PATH is None:
            run_settings = run_settings.replace(LLM_CACHE_PATH=str(out / "llm_cache.sqlite"))
        run_eval(dataset, "agent", run_settings, out / "run", n=n, seed=seed, resume=True, extra_config=extra_config)
        run_dir = out / "run"
    run_dir = Path(run_dir)
    try:
        config = json.loads((run_dir / "config.json").read_text())
        rows = read_results(run_dir / "results.jsonl")
    except FileNotFoundError:
        raise FileNotFoundError(f"{run_dir} is not a run folder (no config.json / results.jsonl)") from None
    if config.get("system") != "agent":
        raise ValueError(f"{run_dir} is a run of {config.get('system')!r}; a decision is fitted on the agent's drafts")
    ran, now = _identity(config, "model"), _identity({"model": json.loads(json.dumps(model_identity(settings)))}, "model")
    if ran != now:
        raise ValueError(f"{run_dir} was run with model {ran}; the configured model is {now}")
    dev = {"dataset": config.get("dataset"), "dataset_sha256": config.get("dataset_sha256"), "questions": len(rows),
           "run": str(run_dir), "model": config.get("model"),
           "logprobs": config.get("logprobs") or logprob_report(rows)}  # an unfinished run has not written it
    return fit_from_rows(rows, settings, out, dev, Path(decision_path) if decision_path else None, risks)


def signal_auc_report(run_dir: str | Path, backend: str) -> dict[str, Any]:
    """Per-signal AUCs of one agent run's drafts (``signal_aucs``), with what the run was."""
    from agentic_rag.eval.results import read_results

    run_dir = Path(run_dir)
    config = json.loads((run_dir / "config.json").read_text())
    records = draft_records(read_results(run_dir / "results.jsonl"))
    return {"backend": backend, "dataset": Path(str(config.get("dataset"))).name, "model": config.get("model"),
            "logprobs": config.get("logprobs"), "drafts": len(records),
            "judgements": {k: sum(r["judgement"] == k for r in records) for k in ("right", "wrong", "unanswerable")},
            "signals": signal_aucs(records)}


def signal_auc_markdown(reports: list[dict[str, Any]]) -> str:
    """One table per report: each signal's AUC, right vs wrong and answerable vs unanswerable."""
    lines = ["# Per-signal AUC of the agent's drafts", "",
             "Generated by scripts/bench_decision_signals.py from agent runs on development splits. AUC above 0.5: "
             "higher values go with right drafts (or answerable questions); '-' where a group is empty or the "
             "signal was not measured (n: drafts that have it).", ""]
    for rep in reports:
        lines += [f"## {rep['backend']} on {rep['dataset']} ({rep['drafts']} drafts: {rep['judgements']})", "",
                  "| signal | n | right vs wrong | answerable vs unanswerable |", "|---|---|---|---|"]
        for key, row in rep["signals"].items():
            cells = ["-" if row[k] is None else f"{row[k]:.3f}" for k in ("right_vs_wrong", "answerable_vs_unanswerable")]
            lines.append(f"| `{key}` | {row['n']} | {cells[0]} | {cells[1]} |")
        lines.append("")
    return "\n".join(lines)
