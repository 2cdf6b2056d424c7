"""Replay the final check of a finished run at other thresholds, per reading, without calling a model.

Why: ``VERIFIER_MIN`` is one cut on one reading. To ask whether *any* cut on *any* reading the run
recorded could meet the refusal and false-refusal targets together, each answered or final-check-refused
draft is re-decided from its stored readings; questions decided before the final check keep their
outcome. The replay is exact for the final check (it is the last decision on a draft and reads nothing
else), so its curves are the operating frontier of the readings this machine's models give.
"""

from __future__ import annotations

from statistics import fmean
from typing import Any, Callable

from agentic_rag.eval.rows import gold_groups, is_refusal
from agentic_rag.gate.judge import COMBINE_PARTS

# each reading the replay can cut: the single readings, and the means VERIFIER_COMBINE offers
READINGS: dict[str, tuple[str, ...]] = {
    "answerability": ("answerability",),
    "quote_answerability": ("quote_answerability",),
    "support_verdict": ("support_verdict",),
    **{mode: parts for mode, parts in COMBINE_PARTS.items() if len(parts) > 1},
}


def reading_of(row: dict[str, Any], reading: str) -> float | None:
    """The mean of the row's stored readings that ``reading`` names; None when the draft never reached
    the final check or none of them was taken."""
    signals = row.get("signals") or {}
    if "verified_score" not in signals:
        return None
    parts = [signals[p] for p in READINGS[reading] if signals.get(p) is not None]
    return fmean(parts) if parts else None


Groups = tuple[list[dict[str, Any]], list[dict[str, Any]]]  # (answerable, unanswerable), as eval.rows.gold_groups


def _rates(groups: Groups, refused: Callable[[dict[str, Any]], bool]) -> dict[str, float | None]:
    def rate(group: list[dict[str, Any]]) -> float | None:
        return round(sum(map(refused, group)) / len(group), 4) if group else None

    answerable, unanswerable = groups
    return {"refusal_unanswerable": rate(unanswerable), "false_refusal": rate(answerable)}


def replay(rows: list[dict[str, Any]], reading: str, threshold: float) -> dict[str, float | None]:
    """Refusal on unanswerable and false refusal on answerable questions had the final check cut
    ``reading`` at ``threshold``."""
    def refused(row: dict[str, Any]) -> bool:
        value = reading_of(row, reading)
        return is_refusal(row) if value is None else value < threshold

    return _rates(gold_groups(rows), refused)


def frontier(rows: list[dict[str, Any]], thresholds: list[float]) -> dict[str, list[dict[str, float | None]]]:
    return {name: [{"threshold": t, **replay(rows, name, t)} for t in thresholds] for name in READINGS}


def cut_curve(rows: list[dict[str, Any]], score: Callable[[dict[str, Any]], float | None], cut: float,
              thresholds: list[float]) -> list[dict[str, float | None]]:
    """Refusal on unanswerable and false refusal on answerable questions had the decision cut ``score``
    at each of ``thresholds`` instead of at ``cut``. A question keeps its outcome where it has no score
    (decided before any draft was scored) or where the run refused it although its score cleared
    ``cut`` (another layer refused it)."""
    def refused_at(t: float) -> Callable[[dict[str, Any]], bool]:
        def refused(row: dict[str, Any]) -> bool:
            value = score(row)
            if value is None or (is_refusal(row) and value > cut):
                return is_refusal(row)
            return value <= t
        return refused

    groups = gold_groups(rows)
    return [{"threshold": t, **_rates(groups, refused_at(t))} for t in thresholds]


def operating_bounds(refusal: list[float | None], false_refusal: list[float | None], max_false_refusal: float,
                     min_refusal: float) -> dict[str, float | None]:
    """Over the points of one curve: the most it refuses while false refusal stays at or under the cap,
    and the least false refusal at which its refusal reaches the target (None where no point does)."""
    pairs = [(r, f) for r, f in zip(refusal, false_refusal) if r is not None and f is not None]
    within = [r for r, f in pairs if f <= max_false_refusal]
    reach = [f for r, f in pairs if r >= min_refusal]
    return {"best_refusal_within_cap": max(within) if within else None,
            "false_refusal_to_reach_target": min(reach) if reach else None}
