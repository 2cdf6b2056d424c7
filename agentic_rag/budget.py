"""Hard caps per question: tokens, LLM calls and wall time.

Every LLM call is checked *before* it is made against the worst case (its exact prompt tokens plus
the output cap), so the caps hold whatever the model or the signals do.
"""

from __future__ import annotations

import time
from typing import Any


def tokens_used(usage: dict[str, Any] | None) -> int:
    return sum(int(v.get("total_tokens", 0)) for v in (usage or {}).values())


def llm_calls(usage: dict[str, Any] | None) -> int:
    return sum(int(v.get("calls", 0)) for v in (usage or {}).values())


def time_left(state: dict[str, Any], settings) -> bool:
    started = state.get("started_at")
    return started is None or time.time() - started < settings.WALL_TIME_S


def question_deadline(state: dict[str, Any], settings) -> float | None:
    """The ``time.time()`` instant the question's ``WALL_TIME_S`` ends (None before its clock started)."""
    started = state.get("started_at")
    return None if started is None else started + settings.WALL_TIME_S


def can_afford(state: dict[str, Any], settings, cost_tokens: int) -> bool:
    usage = state.get("usage")
    return (
        tokens_used(usage) + cost_tokens <= settings.TOKEN_BUDGET
        and llm_calls(usage) < settings.MAX_LLM_CALLS
        and time_left(state, settings)
    )


STAGES = ("predictor", "retrieval", "grade", "generation", "reflect", "judge", "verify")


def tokens_summary(usage: dict[str, Any] | None) -> dict[str, Any]:
    """Tokens by stage (every stage listed, 0 where no LLM ran) and in total, with the call detail.

    The predictor and retrieval stages use no LLM in this system, so they show 0; they are listed so a
    variant that adds an LLM there (query rewriting, an LLM reranker) is accounted the same way."""
    by_stage = {stage: 0 for stage in STAGES}
    by_stage.update({stage: int(v.get("total_tokens", 0)) for stage, v in (usage or {}).items()})
    return {"by_stage": by_stage, "total": sum(by_stage.values()), "detail": usage or {}}
