"""Replay the final check of a finished run at other thresholds, per reading, without calling a model.

Why: ``VERIFIER_MIN`` is one cut on one reading. To ask whether *any* cut on *any* reading the run
recorded could meet the refusal and false-refusal targets together, each answered or final-check-refused
draft is re-decided from its stored readings; questions decided before the final check keep their
outcome. The replay is exact for the final check (it is the last decision on a draft and reads nothing
else), so its curves are the operating frontier of the readings this machine's models give.
"""

from __future__ import annotations

from statistics import fmean
from typing import Any

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


def replay(rows: list[dict[str, Any]], reading: str, threshold: float) -> dict[str, float | None]:
    """Refusal on unanswerable and false refusal on answerable questions had the final check cut
    ``reading`` at ``threshold``."""
    def refused(row: dict[str, Any]) -> bool:
        value = reading_of(row, reading)
        return is_refusal(row) if value is None else value < threshold

    def rate(group: list[dict[str, Any]]) -> float | None:
        return round(sum(map(refused, group)) / len(group), 4) if group else None

    answerable, unanswerable = gold_groups(rows)
    return {"refusal_unanswerable": rate(unanswerable), "false_refusal": rate(answerable)}


def frontier(rows: list[dict[str, Any]], thresholds: list[float]) -> dict[str, list[dict[str, float | None]]]:
    return {name: [{"threshold": t, **replay(rows, name, t)} for t in thresholds] for name in READINGS}
