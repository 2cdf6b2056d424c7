"""Abstention with a stated risk: the threshold on P(right) that keeps the share of wrong answers among
the answered ones at most ALPHA, with probability at least 1 - DELTA, chosen on labelled calibration drafts.

The fitted decision ranks drafts well (its P(right)), but its cut comes from a cost, and what that cut
costs in wrong answers changes from one family of questions to the next. Selective prediction has a
standard answer, used here: Geifman and El-Yaniv's *selection with guaranteed risk* (SGR; "Selective
Classification for Deep Neural Networks", NeurIPS 2017). The drafts are sorted by P(right); a binary
search over how many to answer computes, at each of its ceil(log2 m) steps, the exact binomial (Clopper-
Pearson) upper bound of the wrong share among the answered drafts at confidence 1 - DELTA / steps, and
keeps the most permissive threshold whose bound is at most ALPHA. By the union bound over the steps, with
probability at least 1 - DELTA the threshold's risk on questions like the calibration set is at most ALPHA.
(C-RAG, Kang et al., ICML 2024, certifies RAG generation risk the same way.)

What a calibration draft is, and so what the promise is about:
- a question refused before any draft was written is refused at every threshold (it counts in the coverage,
  never in the risk);
- a draft another layer refused although its P cleared the run's cut stays refused (``frontier.refused_at_cut``);
- a draft the run withheld is scored as the judge would have scored it; any answer to an unanswerable
  question is wrong.

The bound holds only for questions like the calibration set: ``shift`` says when a run's questions are
not (their P(right) tested against the calibration set's with a two-sample Kolmogorov-Smirnov test, and
question types the calibration set lacked).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

METHOD = "SGR (Geifman & El-Yaniv 2017): binary search with Clopper-Pearson bounds at DELTA / ceil(log2 m)"
MIN_DRAFTS = 20  # calibration drafts below which no bound is worth stating
SHIFT_P = 0.01  # the two-sample test's p-value below which a run's P(right) is not like the calibration set's


class RiskCalibrationError(ValueError):
    """The calibration set cannot support the asked promise (too few drafts, nothing answerable, no threshold)."""


@dataclass(frozen=True)
class Draft:
    """One calibration question: its last draft's P(right) (None: refused before a draft, or by another layer
    whatever its P) and whether that draft is right."""

    p: float | None
    right: bool


def drafts_of(rows: list[dict[str, Any]], p_right: dict[str, float], cut: float) -> list[Draft]:
    """Each row of a run as a calibration draft (see the module's list), given the P(right) of its last
    judged draft (``frontier.p_right_by_question``) and the cut the run decided with."""
    from agentic_rag.eval.refusals import draft_right
    from agentic_rag.eval.rows import is_refusal, split_usable

    out = []
    for row in split_usable(rows)[0]:
        p = p_right.get(str(row["id"]))
        if p is None or (is_refusal(row) and p > cut):
            out.append(Draft(None, False))
            continue
        out.append(Draft(p, draft_right(row)))
    return out


NO_TYPE = frozenset({"", "unknown", "none"})  # a question type that says nothing about the question


def question_types(rows: list[dict[str, Any]]) -> set[str]:
    return {str(r.get("question_type") or "").lower() for r in rows} - NO_TYPE


def upper_bound(wrong: int, answered: int, delta: float) -> float:
    """The exact one-sided (1 - delta) upper confidence bound on a binomial rate (Clopper-Pearson)."""
    from scipy.stats import beta

    if answered == 0:
        return 1.0
    return 1.0 if wrong >= answered else float(beta.ppf(1.0 - delta, wrong + 1, answered - wrong))


def interval(wrong: int, answered: int, confidence: float = 0.95) -> list[float] | None:
    """The two-sided Clopper-Pearson interval of a realized wrong share (None with nothing answered)."""
    from scipy.stats import beta

    if answered == 0:
        return None
    tail = (1.0 - confidence) / 2
    low = 0.0 if wrong == 0 else float(beta.ppf(tail, wrong, answered - wrong + 1))
    high = 1.0 if wrong == answered else float(beta.ppf(1 - tail, wrong + 1, answered - wrong))
    return [round(low, 4), round(high, 4)]


def at_threshold(drafts: list[Draft], threshold: float) -> tuple[int, int]:
    """(answered, wrong) had every draft with P(right) >= ``threshold`` been answered."""
    answered = [d for d in drafts if d.p is not None and d.p >= threshold]
    return len(answered), sum(not d.right for d in answered)


def calibrate(drafts: list[Draft], alpha: float, delta: float) -> dict[str, Any]:
    """The most permissive threshold SGR certifies for risk ``alpha`` at confidence 1 - ``delta``, with the
    calibration set's coverage and risk there. ``RiskCalibrationError`` where the set cannot support it."""
    if not 0.0 < alpha < 1.0:
        raise RiskCalibrationError(f"the risk is a share of wrong answers between 0 and 1, exclusive (got {alpha:g})")
    if not 0.0 < delta < 1.0:
        raise RiskCalibrationError(f"delta is a probability between 0 and 1, exclusive (got {delta:g})")
    scored = sorted((d.p for d in drafts if d.p is not None), reverse=True)
    if len(drafts) < MIN_DRAFTS or len(scored) < MIN_DRAFTS:
        raise RiskCalibrationError(f"{len(scored)} scored drafts of {len(drafts)} questions: a bound needs at least "
                                   f"{MIN_DRAFTS} of each")
    if not any(d.right for d in drafts if d.p is not None):
        raise RiskCalibrationError("no calibration draft is right (no answerable question, or none answered right): "
                                   "no threshold keeps any risk")
    steps = max(1, math.ceil(math.log2(len(scored))))
    level = delta / steps
    low, high, best = 1, len(scored), None
    for _ in range(steps):
        if low > high:
            break
        z = (low + high + 1) // 2
        answered, wrong = at_threshold(drafts, scored[z - 1])
        if upper_bound(wrong, answered, level) <= alpha:
            best, low = z, z + 1
        else:
            high = z - 1
    if best is None:
        raise RiskCalibrationError(f"no threshold keeps the wrong share at most {alpha:g} with confidence {1 - delta:g} "
                                   f"on these {len(drafts)} questions: a stricter risk needs more (or better) drafts")
    threshold = scored[best - 1]
    answered, wrong = at_threshold(drafts, threshold)
    return {"alpha": alpha, "delta": delta, "method": METHOD, "threshold": round(threshold, 4), "n": len(drafts),
            "answered": answered, "coverage": round(answered / len(drafts), 4),
            "risk": round(wrong / answered, 4), "bound": round(upper_bound(wrong, answered, level), 4)}


def realized(drafts: list[Draft], threshold: float, alpha: float) -> dict[str, Any]:
    """What a promise gave on other questions: the wrong share among the answered ones with its 95%
    Clopper-Pearson interval, the coverage, and whether the promise held (realized <= alpha)."""
    answered, wrong = at_threshold(drafts, threshold)
    risk = wrong / answered if answered else 0.0
    return {"alpha": alpha, "threshold": threshold, "questions": len(drafts), "answered": answered, "wrong": wrong,
            "coverage": round(answered / len(drafts), 4) if drafts else None, "risk": round(risk, 4),
            "interval_95": interval(wrong, answered), "held": risk <= alpha}


def oracle_coverage(drafts: list[Draft], risk: float) -> float:
    """The most coverage any threshold on these same drafts reaches with a wrong share at most ``risk``
    (the hindsight comparison for a calibrated threshold)."""
    scored = sorted((d for d in drafts if d.p is not None), key=lambda d: -d.p)
    best, wrong = 0.0, 0
    for k, d in enumerate(scored, start=1):  # answering the first k: the threshold at the k-th P
        wrong += not d.right
        tied = k < len(scored) and scored[k].p == d.p  # a threshold answers every draft of its P, not some
        if not tied and wrong / k <= risk + 1e-12:
            best = max(best, k / len(drafts))
    return round(best, 4)


def shift(run_p: list[float], calibration_p: list[float], run_types: set[str], calibration_types: set[str]) -> dict[str, Any]:
    """Whether a run's questions are unlike the calibration set's: its drafts' P(right) against the
    calibration drafts' (two-sample Kolmogorov-Smirnov), and the question types it has that the calibration
    set had none of. ``fires`` when either says so; the promise is then not to be trusted."""
    from scipy.stats import ks_2samp

    test = ks_2samp(run_p, calibration_p) if run_p and calibration_p else None
    p_value = float(test.pvalue) if test is not None else None
    new_types = sorted(run_types - calibration_types)
    return {"measure": "two-sample Kolmogorov-Smirnov test of P(right) against the calibration drafts'",
            "statistic": round(float(test.statistic), 4) if test is not None else None,
            "p_value": round(p_value, 6) if p_value is not None else None, "p_value_below": SHIFT_P,
            "types_not_calibrated": new_types,
            "fires": bool((p_value is not None and p_value < SHIFT_P) or new_types)}


def parse_risks(text: str) -> list[float]:
    """``--risk 0.1,0.2``: each a share strictly between 0 and 1 (``RiskCalibrationError`` otherwise)."""
    out = []
    for part in (p.strip() for p in str(text).split(",")):
        try:
            alpha = float(part)
        except ValueError:
            raise RiskCalibrationError(f"--risk takes shares of wrong answers such as 0.1 or 0.1,0.2 (got {part!r})") from None
        if not 0.0 < alpha < 1.0 or math.isnan(alpha):
            raise RiskCalibrationError(f"a risk is a share of wrong answers between 0 and 1, exclusive (got {part})")
        out.append(alpha)
    return out


def check_delta(delta: float) -> float:
    if not 0.0 < delta < 1.0 or math.isnan(delta):
        raise RiskCalibrationError(f"--delta is the chance the promise may fail, between 0 and 1, exclusive (got {delta:g})")
    return delta


def risk_section(drafts: list[Draft], rows: list[dict[str, Any]], alphas: list[float], delta: float,
                 about: dict[str, Any]) -> dict[str, Any]:
    """What a decision file keeps of a risk calibration: a level per risk (``calibrate``), and what the
    calibration set was (its source, size, question types and drafts' P(right), which the shift test reads)."""
    levels = {f"{alpha:g}": calibrate(drafts, alpha, delta) for alpha in alphas}  # any failure before anything is kept
    scored = sorted(round(d.p, 4) for d in drafts if d.p is not None)
    calibration = {**about, "questions": len(drafts), "scored_drafts": len(scored),
                   "answerable": sum(1 for r in rows if not _unanswerable(r)),
                   "question_types": sorted(question_types(rows)), "p_right": scored}
    return {"calibration": calibration, "levels": levels}


def _unanswerable(row: dict[str, Any]) -> bool:
    from agentic_rag.eval.rows import gold_is_idk

    return gold_is_idk(row)


def merged_risk(old: dict[str, Any] | None, new: dict[str, Any]) -> dict[str, Any]:
    """A decision file's risk section after a calibration: the new levels, beside the earlier ones only
    when both were calibrated on the same set (levels of two sets would promise two different things)."""
    if old and old.get("calibration") == new["calibration"]:
        return {"calibration": new["calibration"], "levels": {**old.get("levels", {}), **new["levels"]}}
    return new


def fitted_drafts(rows: list[dict[str, Any]], records: list[dict[str, Any]], oof: list[float]) -> list[Draft]:
    """The calibration drafts of a fit's own development run, each draft's P out of fold (the fit's
    cross-validation: a model that never saw the draft), so the promise is not read off the rows the
    decision learnt; a question with no draft the fit read (refused before one, or hedging) is refused."""
    from agentic_rag.eval.rows import split_usable

    by_id = {str(r["id"]): (p, bool(r["right"])) for r, p in zip(records, oof)}
    return [Draft(*by_id[str(row["id"])]) if str(row["id"]) in by_id else Draft(None, False)
            for row in split_usable(rows)[0]]


def calibrate_run(settings, run_dir, alphas: list[float], delta: float, decision_path) -> dict[str, Any]:
    """``calibrate --risk --run RUN``: the decision in force, with risk levels calibrated on the P(right) its
    drafts got in an agent run under that same decision, written to ``decision_path``."""
    import json

    from agentic_rag.baug.fitted import configured_decision_path, cut_for, decision_in_force
    from agentic_rag.errors import write_output
    from agentic_rag.eval.frontier import p_right_by_question
    from agentic_rag.eval.provenance import file_sha256
    from agentic_rag.eval.results import read_results

    check_delta(delta)
    unrisked = settings.replace(RISK=None)
    decision = decision_in_force(unrisked)
    if decision is None:
        raise RiskCalibrationError("a risk is a threshold on the fitted decision's P(right), and this configuration "
                                   "decides by thresholds: use GATE_POLICY=fitted with a DECISION_FILE")
    run_dir = Path(run_dir)
    try:
        config = json.loads((run_dir / "config.json").read_text())
    except (OSError, ValueError):
        raise FileNotFoundError(f"{run_dir} is not a run folder (no readable config.json)") from None
    path = configured_decision_path(unrisked)
    ran = (config.get("decision") or {}).get("sha256")
    if config.get("system") != "agent" or ran != file_sha256(path):
        raise RiskCalibrationError(f"{run_dir} was not run by the agent under the decision in force ({path}): its P(right) "
                                   "are another decision's; run the calibration set again, or name that DECISION_FILE")
    rows = read_results(run_dir / "results.jsonl")
    cut = cut_for(float(((config.get("settings") or {}).get("WRONG_ANSWER_COST")) or 1.0))
    drafts = drafts_of(rows, p_right_by_question(run_dir), cut)
    about = {"source": "the P(right) each draft got in the run, from the decision in force", "run": str(run_dir),
             "dataset": config.get("dataset"), "dataset_sha256": config.get("dataset_sha256")}
    section = risk_section(drafts, rows, alphas, delta, about)
    data = decision.to_dict()
    data["meta"] = {**data["meta"], "risk": merged_risk(decision.meta.get("risk"), section)}
    write_output(Path(decision_path), json.dumps(data, indent=1) + "\n")
    return {"decision_file": str(decision_path), "levels": data["meta"]["risk"]["levels"],
            "calibration": {k: v for k, v in section["calibration"].items() if k != "p_right"}}


def levels_markdown(report: dict[str, Any]) -> str:
    """The calibrated levels as ``calibrate --risk`` prints them."""
    cal = report["calibration"]
    lines = [f"Calibrated on {cal['questions']} questions ({cal['scored_drafts']} scored drafts, {cal['answerable']} "
             f"answerable; types {', '.join(cal['question_types']) or 'none given'}): {cal.get('dataset')}", "",
             "| risk | delta | threshold on P(right) | coverage | risk on the calibration set | upper bound |",
             "|---|---|---|---|---|---|"]
    lines += [f"| {k} | {v['delta']:g} | {v['threshold']} | {v['coverage']} | {v['risk']} | {v['bound']} |"
              for k, v in sorted(report["levels"].items(), key=lambda kv: float(kv[0]))]
    lines += ["", f"Decision file: {report['decision_file']} (use it with -o DECISION_FILE=... -o RISK=<risk>); method: {METHOD}."]
    return "\n".join(lines) + "\n"


def promise_of(config: dict[str, Any] | None) -> dict[str, Any] | None:
    """The risk a run's config.json says it promised (``RISK``): alpha, threshold and calibration set."""
    risk = ((config or {}).get("decision") or {}).get("risk")
    return risk if isinstance(risk, dict) and risk.get("threshold") is not None else None


def promise_line(promise: dict[str, Any]) -> str:
    """How a promise is said: the risk, the threshold and the set it was calibrated on."""
    cal = promise.get("calibration") or {}
    where = Path(str(cal.get("dataset") or "an unnamed set")).name
    return (f"at most {float(promise['alpha']):.0%} of shown answers wrong (RISK={float(promise['alpha']):g}): answering "
            f"needs P(right) >= {float(promise['threshold']):.2f}, calibrated on {cal.get('questions', '?')} questions of "
            f"{where}, with {1 - float(promise['delta']):.0%} confidence")


def promise_outcome(rows: list[dict[str, Any]], promise: dict[str, Any]) -> dict[str, Any]:
    """The promise against what happened: wrong among answered (95% Clopper-Pearson), coverage and whether
    it held, over the run and per question type; and the shift test against the calibration set."""
    from agentic_rag.eval.rows import is_refusal, split_judged, split_usable

    rows = split_judged(split_usable(rows)[0])[0]
    alpha = float(promise["alpha"])

    def outcome(group: list[dict[str, Any]]) -> dict[str, Any]:
        answered = [r for r in group if not is_refusal(r)]
        wrong = sum(r.get("judgement") == "incorrect" for r in answered)
        risk = wrong / len(answered) if answered else 0.0
        return {"questions": len(group), "answered": len(answered), "coverage": round(len(answered) / len(group), 4) if group else None,
                "risk": round(risk, 4), "interval_95": interval(wrong, len(answered)), "held": risk <= alpha}

    types = sorted({str(r.get("question_type") or "") for r in rows})
    cal = promise.get("calibration") or {}
    run_p = [float(p) for r in rows if (p := r.get("p_right")) is not None]
    calibrated = {k: promise[k] for k in ("coverage", "risk") if k in promise}
    return {"alpha": alpha, "threshold": promise["threshold"], "delta": promise.get("delta"), "line": promise_line(promise),
            "calibrated": calibrated or None, **outcome(rows),
            "by_question_type": {t: outcome([r for r in rows if str(r.get("question_type") or "") == t]) for t in types if t},
            "shift": shift(run_p, [float(p) for p in cal.get("p_right") or []], question_types(rows),
                           set(cal.get("question_types") or []))}
