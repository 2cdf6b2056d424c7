"""A run's summary: CRAG's scores, the abstention metrics (defined in the README's evaluation
section) and their breakdowns by question type, domain and dynamism."""

from __future__ import annotations

import math
import statistics
from typing import Any

from agentic_rag.eval.refusals import refusals_by_reason
from agentic_rag.gate import checks
from agentic_rag.eval.rows import gold_groups, is_refusal, stage_calls


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
    """CRAG scores plus the abstention metrics (definitions in the README's evaluation section)."""
    n = len(rows)
    if n == 0:
        return {"n": 0}
    count = lambda label: sum(r["judgement"] == label for r in rows)  # noqa: E731
    latencies = sorted(r["latency_ms"] for r in rows)
    tokens = [r["tokens"].get("total", 0) for r in rows]
    acc, hal, miss = count("accurate") / n, count("incorrect") / n, count("missing") / n
    answerable, unans = gold_groups(rows)
    signals = [r.get("signals") or {} for r in rows]
    answered_signals = [s for r, s in zip(rows, signals) if not is_refusal(r) and "overlap_est" in s]
    return {
        "n": n,
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
# refusals decided before any generation: the confidence gate, no evidence, out of domain, ambiguity
PRE_GENERATION_REFUSALS = checks.PRE_GENERATION_REFUSALS


def _breakdown(rows: list[dict[str, Any]], field: str) -> dict[str, dict[str, Any]]:
    """CRAG scores per value of a record field (empty when the data does not have it)."""
    groups: dict[str, list[dict[str, Any]]] = {}
    for r in rows:
        if r.get(field):
            groups.setdefault(str(r[field]), []).append(r)
    out = {}
    for name, rs in sorted(groups.items()):
        acc = sum(r["judgement"] == "accurate" for r in rs) / len(rs)
        hal = sum(r["judgement"] == "incorrect" for r in rs) / len(rs)
        out[name] = {"n": len(rs), "accuracy": round(acc, 4), "hallucination": round(hal, 4),
                     "missing": round(1 - acc - hal, 4), "score": round(acc - hal, 4)}
    return out
