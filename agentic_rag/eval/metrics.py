"""A run's summary: CRAG's scores, the abstention metrics and their breakdowns by question type, domain
and dynamism. ``METRICS`` names and defines every field once; the terminal, report.md, summary.json's
legend and docs/metrics.md are derived from it."""

from __future__ import annotations

import math
import statistics
from collections import Counter
from typing import Any

from agentic_rag import checks
from agentic_rag.eval.provenance import signal_gaps
from agentic_rag.eval.refusals import refusals_by_reason
from agentic_rag.eval.rows import gold_groups, is_refusal, split_judged, split_usable, stage_calls

# every field of summary.json: key -> (plain name, what it means in one line). Rates are fractions of the
# group named; "answerable" means a gold other than "i don't know" and "invalid question".
METRICS: dict[str, tuple[str, str]] = {
    "system": ("system", "which graph answered: agent (BAUG) or baseline (vanilla RAG)"),
    "n": ("questions scored", "questions in the metrics (those with a usable gold answer)"),
    "unusable_gold": ("unusable gold answers", "questions left out of every metric: their gold is empty, 'nan' or similar"),
    "unusable_gold_ids": ("ids with unusable gold", "the ids of those questions, to fix or drop in the data"),
    "unjudged": ("unjudged answers", "answers the LLM judge (--judge llm) did not grade: its endpoint failed or its reply "
                                     "held no score; left out of every metric, never counted accurate"),
    "unjudged_ids": ("ids left unjudged", "the ids of those questions, to judge again"),
    "accuracy": ("accuracy", "judged accurate / all questions"),
    "hallucination": ("hallucination rate", "judged incorrect (answered wrongly) / all questions"),
    "missing": ("missing rate", "refused or said 'I don't know' / all questions"),
    "score": ("CRAG score", "accuracy - hallucination, from -1 to 1 (a refusal costs nothing, a wrong answer 1)"),
    "em_short": ("exact match (short answer)", "mean exact match of the extracted short answer with the best gold"),
    "f1_short": ("token F1 (short answer)", "mean token F1 of the extracted short answer with the best gold"),
    "answerable": ("answerable questions", "questions whose gold is an answer (not 'i don't know' or 'invalid question')"),
    "unanswerable": ("unanswerable questions", "questions whose gold is 'i don't know'"),
    "accuracy_answerable": ("accuracy on answerable", "judged accurate / answerable questions"),
    "refusal_rate_unanswerable": ("refusal rate on unanswerable", "refused / unanswerable questions (higher is better)"),
    "false_refusal_rate": ("false refusal rate", "refused / answerable questions (lower is better)"),
    "false_acceptance_rate": ("false acceptance rate", "answered / unanswerable questions (lower is better)"),
    "a_acc": ("A-Acc (Abstain-R1)", "Abstain-R1's name for accuracy on answerable (same value)"),
    "a_fu": ("A-FU (Abstain-R1)", "Abstain-R1's false unknowns: its name for the false refusal rate (same value)"),
    "u_ref": ("U-Ref (Abstain-R1)", "Abstain-R1's refusals on unanswerable: its name for the refusal rate on unanswerable"),
    "wrong_on_answerable": ("wrong on answerable", "answered with token F1 0 and not judged accurate / answerable questions"),
    "idk_with_citations": ("refusals with citations", "refusals that still show citations (must be 0)"),
    "answered_with_world_answer": ("answered with the real answer", "unanswerable-labelled questions answered with the "
                                   "real-world answer a noise snippet leaked (still scored incorrect)"),
    "llm_unavailable": ("model unreachable", "questions ended as ABSTAIN_LLM_UNAVAILABLE (rerun them)"),
    "refused_before_generation": ("refused before generating", "refusals decided before any draft (gate, no evidence, "
                                  "out of domain, ambiguity)"),
    "refused_before_generation_with_llm_call": ("... with an LLM call", "of those, questions that still made some LLM call"),
    "refused_before_generation_with_generator_call": ("... with a generator call", "of those, questions that called "
                                                      "the generator (should be 0)"),
    "tokens_saved_per_q": ("tokens saved per question", "mean generation tokens a pre-generation refusal did not spend"),
    "overlap_mean": ("mean overlap", "answered questions: mean share of answer sentences backed by a source sentence"),
    "faith_mean": ("mean faithfulness", "answered questions: mean share of names and numbers found in the cited text"),
    "tokens_per_q": ("tokens per question", "mean LLM tokens (prompt + output) per question"),
    "llm_calls_per_q": ("LLM calls per question", "mean LLM calls per question"),
    "latency_p50_ms": ("median latency (ms)", "median wall time per question, milliseconds"),
    "latency_p95_ms": ("95th percentile latency (ms)", "95th percentile wall time per question, milliseconds"),
    "by_question_type": ("by question type", "accuracy, hallucination, missing, score, refusal on unanswerable and false refusal "
                                             "per question type (CRAG's; bridge / comparison for HotpotQA)"),
    "by_domain": ("by domain", "the same per CRAG domain"),
    "by_static_or_dynamic": ("by dynamism", "the same per CRAG static-or-dynamic label"),
    "refusals_by_reason": ("refusals by reason", "per reason code, the answerable and unanswerable questions it refused"),
    "risk": ("the stated risk", "with RISK set: the share of wrong answers promised, against the share among the answered "
                                "ones (95% Clopper-Pearson) and the coverage, overall and per question type, whether it "
                                "held, and the shift test against the calibration set"),
    "bad_records": ("bad input records", "dataset lines skipped as malformed"),
    "signals_missing": ("model signals missing", "per signal read from the model (the answerability probe, token "
                        "log-probabilities), the drafts it was missing on and why: empty when the backend gave every one"),
    "legend": ("legend", "each field's plain name (this table)"),
}


def metric_label(key: str) -> str:
    """A metric's plain name and meaning in one line, as a terminal or a report shows it."""
    name, meaning = METRICS.get(key, (key, ""))
    return f"{name}: {meaning}" if meaning else name


def run_summary(system: str, rows: list[dict[str, Any]], bad_records: int, config: dict[str, Any] | None = None) -> dict[str, Any]:
    """summary.json: the metrics with the system, the malformed input count and a legend of plain names;
    with the run's ``config``, what a stated risk (``RISK``) promised against what happened."""
    from agentic_rag.eval.risk_control import promise_of, promise_outcome

    summary = {"system": system, **summarize(rows), "bad_records": bad_records}
    if system == "agent":  # the baseline decides nothing, so reads no model signal
        summary["signals_missing"] = signal_gaps(rows)
    if promise := promise_of(config):
        summary["risk"] = promise_outcome(rows, promise)
    return {**summary, "legend": {k: METRICS[k][0] for k in summary if k in METRICS}}


def metrics_markdown() -> str:
    """docs/metrics.md, generated from ``METRICS`` (a test checks the file matches)."""
    lines = ["# Metrics", "", "Every field of a run's `summary.json`, as `eval`, `compare` and `report.md` print it. "
             "Generated from `agentic_rag/eval/metrics.py` (`METRICS`); the evaluation itself is described in "
             "`docs/how-it-works.md`.", "", "| field | name | meaning |", "|---|---|---|"]
    lines += [f"| `{k}` | {name} | {meaning} |" for k, (name, meaning) in METRICS.items()]
    return "\n".join(lines) + "\n"


def _rate(num: int, den: int) -> float | None:
    return round(num / den, 4) if den else None


def wilson_interval(rate: float, n: int, z: float = 1.96) -> list[float] | None:
    """95% Wilson score interval of a rate measured on ``n`` questions.

    A target such as "refusal >= 0.70" read off 100 questions has an interval about +-0.09 wide:
    reporting it says whether a miss (or a pass) is larger than the sampling noise of the split."""
    if not n:
        return None
    centre = (rate + z * z / (2 * n)) / (1 + z * z / n)
    half = z * math.sqrt(rate * (1 - rate) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return [round(max(0.0, centre - half), 3), round(min(1.0, centre + half), 3)]


def summarize(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """CRAG scores plus the abstention metrics (``METRICS`` defines each). Questions whose gold cannot
    score an answer, and answers an LLM judge left unjudged, are counted and named, and left out of every
    other figure."""
    rows, unusable = split_usable(rows)
    rows, unjudged = split_judged(rows)
    left_out = {"unusable_gold": len(unusable), "unusable_gold_ids": [r["id"] for r in unusable]} if unusable else {}
    if unjudged:
        left_out.update(unjudged=len(unjudged), unjudged_ids=[r["id"] for r in unjudged])
    n = len(rows)
    if n == 0:
        return {"n": 0, **left_out}
    latencies = sorted(r["latency_ms"] for r in rows)
    tokens = [r["tokens"].get("total", 0) for r in rows]
    acc, hal, miss = judgement_shares(rows)
    answerable, unans = gold_groups(rows)
    signals = [r.get("signals") or {} for r in rows]
    answered_signals = [s for r, s in zip(rows, signals) if not is_refusal(r) and "overlap_est" in s]
    return {
        "n": n,
        **left_out,
        "accuracy": round(acc, 4),
        "hallucination": round(hal, 4),
        "missing": round(miss, 4),
        "score": round(acc - hal, 4),
        "em_short": round(statistics.fmean(r["em"] for r in rows), 4),
        "f1_short": round(statistics.fmean(r["f1"] for r in rows), 4),
        "answerable": len(answerable),
        "unanswerable": len(unans),
        "accuracy_answerable": _rate(sum(r["judgement"] == "accurate" for r in answerable), len(answerable)),
        "refusal_rate_unanswerable": _rate(sum(is_refusal(r) for r in unans), len(unans)),
        "false_refusal_rate": _rate(sum(is_refusal(r) for r in answerable), len(answerable)),
        "false_acceptance_rate": _rate(sum(not is_refusal(r) for r in unans), len(unans)),
        # Abstain-R1's names for the same quantities: accuracy and false unknowns on answerable
        # questions, refusals on unanswerable ones
        "a_acc": _rate(sum(r["judgement"] == "accurate" for r in answerable), len(answerable)),
        "a_fu": _rate(sum(is_refusal(r) for r in answerable), len(answerable)),
        "u_ref": _rate(sum(is_refusal(r) for r in unans), len(unans)),
        "wrong_on_answerable": _rate(
            sum(not is_refusal(r) and r["f1"] == 0 and r["judgement"] != "accurate" for r in answerable), len(answerable)
        ),
        "idk_with_citations": sum(is_refusal(r) and bool(r.get("citations")) for r in rows),
        # of the unanswerable-labelled questions answered, those answered with the real answer
        "answered_with_world_answer": (sum(bool(r.get("matches_world_answer")) for r in unans)
                                       if any(r.get("world_answer") for r in unans) else None),
        "llm_unavailable": sum(r.get("reason") == "ABSTAIN_LLM_UNAVAILABLE" for r in rows),
        "refused_before_generation": sum(r.get("reason") in PRE_GENERATION_REFUSALS for r in rows),
        "refused_before_generation_with_llm_call": sum(
            r.get("reason") in PRE_GENERATION_REFUSALS and r["llm_calls"] > 0 for r in rows
        ),
        # what the target asks: the generator skipped (an LLM grader in tier 1 may still have run)
        "refused_before_generation_with_generator_call": sum(
            r.get("reason") in PRE_GENERATION_REFUSALS and stage_calls(r, "generation") > 0 for r in rows
        ),
        "tokens_saved_per_q": round(statistics.fmean(r.get("tokens_saved", 0) for r in rows), 1),
        "overlap_mean": round(statistics.fmean(s["overlap_est"] for s in answered_signals), 4) if answered_signals else None,
        "faith_mean": round(statistics.fmean(s["faith_est"] for s in answered_signals), 4) if answered_signals else None,
        "tokens_per_q": round(statistics.fmean(tokens), 1),
        "llm_calls_per_q": round(statistics.fmean(r["llm_calls"] for r in rows), 3),
        "latency_p50_ms": round(latencies[len(latencies) // 2], 1),
        "latency_p95_ms": round(latencies[min(n - 1, int(0.95 * n))], 1),
        **{f"by_{field}": _breakdown(rows, field) for field in BREAKDOWNS},
        "refusals_by_reason": refusals_by_reason(rows),
    }


BREAKDOWNS = ("question_type", "domain", "static_or_dynamic")
# the figures of each group of a breakdown, in the order the reports show them
BREAKDOWN_FIGURES = ("n", "accuracy", "hallucination", "missing", "score", "refusal_rate_unanswerable", "false_refusal_rate",
                     "tokens_per_q")
# refusals decided before any generation: the confidence gate, no evidence, out of domain, ambiguity
PRE_GENERATION_REFUSALS = checks.PRE_GENERATION_REFUSALS


def judgement_shares(rows: list[dict[str, Any]]) -> tuple[float, float, float]:
    """The shares judged accurate, incorrect and missing, each counted (1 - the other two would print -0.0)."""
    counts = Counter(r["judgement"] for r in rows)
    return counts["accurate"] / len(rows), counts["incorrect"] / len(rows), counts["missing"] / len(rows)


def _breakdown(rows: list[dict[str, Any]], field: str) -> dict[str, dict[str, Any]]:
    """CRAG scores and refusal rates per value of a record field (empty when the data does not have it); a
    rate is None in a group without questions of its kind."""
    groups: dict[str, list[dict[str, Any]]] = {}
    for r in rows:
        if r.get(field):
            groups.setdefault(str(r[field]), []).append(r)
    out = {}
    for name, rs in sorted(groups.items()):
        acc, hal, miss = judgement_shares(rs)
        answerable, unans = gold_groups(rs)
        out[name] = {"n": len(rs), "accuracy": round(acc, 4), "hallucination": round(hal, 4),
                     "missing": round(miss, 4), "score": round(acc - hal, 4),
                     "refusal_rate_unanswerable": _rate(sum(is_refusal(r) for r in unans), len(unans)),
                     "false_refusal_rate": _rate(sum(is_refusal(r) for r in answerable), len(answerable)),
                     "tokens_per_q": round(statistics.fmean(r["tokens"].get("total", 0) for r in rs), 1)}
    return out


def auc(y: Any, s: Any) -> float:
    """ROC AUC of ``s`` for y = 1 (answerable); ties count half. NaN when only one class is present."""
    import numpy as np
    from sklearn.metrics import roc_auc_score

    y = np.asarray(y)
    return float(roc_auc_score(y, s)) if 0 < y.sum() < len(y) else float("nan")
