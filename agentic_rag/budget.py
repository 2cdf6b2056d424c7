"""Hard caps per question: tokens, LLM calls and wall time.

Every LLM call is checked *before* it is made against the worst case (its exact prompt tokens plus
the output cap), so the caps hold whatever the model or the signals do.

Those checks only decide whether to *start* work. A caller that must return by a fixed time (the CRAG
starter kit's per-query limit) also opens a ``hard_deadline`` scope: work already under way when it
passes, local decoding and embedding, stops and raises ``DeadlineExceeded``, so the question ends as
a refusal instead of as whatever partial text the clock left.
"""

from __future__ import annotations

import time
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any, Iterable, Iterator

# A context variable, not an argument: the deadline must reach model calls deep inside graph nodes,
# and LangGraph copies the context into the threads that run parallel branches.
_DEADLINE: ContextVar[float | None] = ContextVar("agentic_rag_hard_deadline", default=None)


class DeadlineExceeded(TimeoutError):
    """The question's hard deadline passed while its work was under way."""


@contextmanager
def hard_deadline(at: float | None) -> Iterator[None]:
    """Within this scope, decoding and embedding stop once ``time.monotonic()`` reaches ``at``."""
    token = _DEADLINE.set(at)
    try:
        yield
    finally:
        _DEADLINE.reset(token)


def current_deadline() -> float | None:
    return _DEADLINE.get()


def check_deadline(what: str) -> None:
    """Raise ``DeadlineExceeded`` if the scope's deadline has passed."""
    at = current_deadline()
    if at is not None and time.monotonic() >= at:
        raise DeadlineExceeded(f"{what} stopped: the question's deadline passed")


def stop_modules_at_deadline(modules: Iterable[Any], what: str) -> None:
    """Make each torch module check the scope's deadline before its forward pass.

    Hooked on a network's blocks, one long forward pass (a prefill, a batch of embeddings) stops
    between two blocks once the deadline passes; with no deadline the hook only reads a variable.
    """
    for module in modules:
        module.register_forward_pre_hook(lambda _module, _args: check_deadline(what))


def tokens_used(usage: dict[str, Any] | None) -> int:
    return sum(int(v.get("total_tokens", 0)) for v in (usage or {}).values())


def llm_calls(usage: dict[str, Any] | None) -> int:
    return sum(int(v.get("calls", 0)) for v in (usage or {}).values())


def tokens_per_pass(usage: dict[str, Any] | None) -> dict[str, float]:
    """Per stage whose model counted its passes over the weights (the in-process model): tokens decoded per
    pass. 1 without speculation; prompt lookup or a draft model verify several proposed tokens per pass,
    which is what makes them faster (a served model does not say, so it is not listed)."""
    return {stage: round(int(v.get("output_tokens", 0)) / int(v["forward_passes"]), 2)
            for stage, v in (usage or {}).items() if int(v.get("forward_passes") or 0) > 0}


def time_left(state: dict[str, Any], settings) -> bool:
    started = state.get("started_at")
    return started is None or time.time() - started < settings.budget.WALL_TIME_S


def question_deadline(state: dict[str, Any], settings) -> float | None:
    """The ``time.time()`` instant the question's ``WALL_TIME_S`` ends (None before its clock started)."""
    started = state.get("started_at")
    return None if started is None else started + settings.budget.WALL_TIME_S


def can_afford(state: dict[str, Any], settings, cost_tokens: int) -> bool:
    usage = state.get("usage")
    return (
        tokens_used(usage) + cost_tokens <= settings.budget.TOKEN_BUDGET
        and llm_calls(usage) < settings.budget.MAX_LLM_CALLS
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
