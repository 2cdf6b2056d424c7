"""Token accounting per pipeline stage.

A run's cost and its budget decisions must be explainable afterwards ("the grader spent 40% of the
tokens"), so every LLM call goes through ``invoke_llm`` and lands in a ``UsageLedger``. The ledger
is locked because graph branches may call the model from several threads.
"""

from __future__ import annotations

import threading
import time
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any, Iterator, Mapping, Sequence

from langchain_core.language_models.chat_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage

from agentic_rag.redact import redact_text, redact_url
from agentic_rag.timing import book_llm

_FIELDS = ("input_tokens", "output_tokens", "total_tokens")


class LLMUnavailableError(RuntimeError):
    """The model could not be asked: its server refused, failed, timed out or replied with something
    that is not a chat completion, on every attempt the question's time allowed; or its server had
    stopped answering an earlier call, and its breaker refused this one without a try (llm/breaker.py).

    Graph nodes turn it into the refusal ABSTAIN_LLM_UNAVAILABLE, so one unreachable server costs a
    question, never the run; with no attempt at all (the question's wall time ran out before the call
    could start) the model is not to blame (``model_failed``), and the refusal is ABSTAIN_LOW_BUDGET. ``url`` and
    ``last_error`` are kept free of credentials (agentic_rag/redact.py)."""

    def __init__(self, url: str, last_error: str, attempts: int, elapsed_s: float,
                 down_since: float | None = None) -> None:
        url, last_error = redact_url(url), redact_text(last_error)  # whoever raised it: stored and shown
        self.url, self.last_error, self.attempts, self.elapsed_s = url, last_error, attempts, elapsed_s
        self.down_since = down_since  # set when the server's breaker refused the call (llm/breaker.py)
        if down_since is not None:
            super().__init__(f"the model at {url} {last_error}")
            return
        super().__init__(f"the model at {url} did not answer ({attempts} attempt{'s' if attempts != 1 else ''} "
                         f"in {elapsed_s:.1f} s; last error: {last_error})")

    @property
    def tried(self) -> bool:
        return model_failed(self.to_dict())

    def to_dict(self) -> dict[str, Any]:
        return {"url": self.url, "last_error": self.last_error, "attempts": self.attempts,
                "elapsed_s": round(self.elapsed_s, 2),
                **({"down_since": round(self.down_since, 3)} if self.down_since is not None else {})}


def model_failed(llm_error: Mapping[str, Any]) -> bool:
    """Whether the model is to blame for a failed call (``LLMUnavailableError.to_dict``): an attempt
    failed, or its server had stopped answering; not when the question's time ran out before any try."""
    return bool(llm_error.get("attempts") or llm_error.get("down_since"))


_DEADLINE: ContextVar[float | None] = ContextVar("llm_deadline", default=None)


@contextmanager
def llm_deadline(at: float | None) -> Iterator[None]:
    """LLM calls made inside end by ``at`` (a ``time.time()`` instant; None = no deadline beyond
    each backend's own timeout). Nested deadlines keep the earlier one.

    A context variable rather than a call argument: the deadline is the question's, set once by the
    node that holds the question's state, and must reach every call made below it (grader, judge,
    verifier) without entering the call's kwargs, which key the replay cache."""
    outer = _DEADLINE.get()
    token = _DEADLINE.set(at if outer is None else outer if at is None else min(at, outer))
    try:
        yield
    finally:
        _DEADLINE.reset(token)


def seconds_left() -> float | None:
    """Seconds until the current LLM deadline (negative once passed), or None when there is none."""
    at = _DEADLINE.get()
    return None if at is None else at - time.time()


def usage_of(message: AIMessage) -> dict[str, int]:
    """Token counts of one reply; ChatOpenAI may only fill ``response_metadata['token_usage']``."""
    usage = getattr(message, "usage_metadata", None)
    if usage:
        n_in, n_out, total = usage.get("input_tokens"), usage.get("output_tokens"), usage.get("total_tokens")
    else:
        raw = (getattr(message, "response_metadata", None) or {}).get("token_usage") or {}
        n_in, n_out, total = raw.get("prompt_tokens"), raw.get("completion_tokens"), raw.get("total_tokens")
    n_in, n_out = int(n_in or 0), int(n_out or 0)
    return {"input_tokens": n_in, "output_tokens": n_out, "total_tokens": int(total or n_in + n_out)}


class UsageLedger:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._by_stage: dict[str, dict[str, int]] = {}
        self._ms_by_stage: dict[str, float] = {}

    def record(self, stage: str, message: AIMessage, ms: float = 0.0) -> dict[str, int]:
        """Book one reply's tokens, and ``ms`` of wall time spent in the call, under ``stage``; and an
        in-process model's passes over its weights (``budget.tokens_per_pass`` reads them)."""
        usage = usage_of(message)
        passes = int((getattr(message, "response_metadata", None) or {}).get("forward_passes") or 0)
        with self._lock:
            self._ms_by_stage[stage] = self._ms_by_stage.get(stage, 0.0) + ms
            row = self._by_stage.setdefault(stage, {**dict.fromkeys(_FIELDS, 0), "calls": 0})
            for key in _FIELDS:
                row[key] += usage[key]
            row["calls"] += 1
            if passes:
                row["forward_passes"] = row.get("forward_passes", 0) + passes
        return usage

    @property
    def by_stage(self) -> dict[str, dict[str, int]]:
        with self._lock:
            return {stage: dict(row) for stage, row in self._by_stage.items()}

    @property
    def ms_by_stage(self) -> dict[str, float]:
        """Wall time inside the model calls per stage (ms): what is left of a question's time is the
        system's own work."""
        with self._lock:
            return {stage: round(ms, 3) for stage, ms in self._ms_by_stage.items()}

    @property
    def calls(self) -> int:
        return sum(row["calls"] for row in self.by_stage.values())

    def _sum(self, key: str) -> int:
        return sum(row[key] for row in self.by_stage.values())

    @property
    def total_tokens(self) -> int:
        return self._sum("total_tokens")

    def to_dict(self) -> dict[str, Any]:
        by_stage = self.by_stage
        totals = {key: sum(row[key] for row in by_stage.values()) for key in (*_FIELDS, "calls")}
        return {**totals, "by_stage": by_stage}


def invoke_llm(
    llm: BaseChatModel,
    messages: Sequence[BaseMessage],
    stage: str,
    ledger: UsageLedger | None,
    max_tokens: int | None = None,
    **call_kwargs: Any,
) -> AIMessage:
    """Call the model and book its usage under ``stage``.

    ``max_tokens`` is bound per call because both backends accept that kwarg (ChatLocalTransformers
    maps it to ``max_new_tokens``), so stages can cap themselves without a second model instance.
    ``call_kwargs`` go to the model as they are (e.g. ``prompt_state_layer`` for the local backend).
    """
    bound = {**({"max_tokens": max_tokens} if max_tokens else {}), **call_kwargs}
    runnable = llm.bind(**bound) if bound else llm
    started, t0 = time.time(), time.perf_counter()
    try:
        message = runnable.invoke(list(messages))
    except Exception as exc:
        ms = (time.perf_counter() - t0) * 1000.0
        book_llm(ms, call_record(llm, messages, stage, started, ms, error=exc))
        raise
    ms = (time.perf_counter() - t0) * 1000.0
    book_llm(ms, call_record(llm, messages, stage, started, ms, message))
    if ledger is not None:
        ledger.record(stage, message, ms)
    return message


def call_record(llm: BaseChatModel, messages: Sequence[BaseMessage], stage: str, started: float, ms: float,
                message: AIMessage | None = None, error: Exception | None = None) -> dict[str, Any]:
    """One LLM call as a run folder keeps it (in its node's trace event, under ``llm``): the whole prompt
    and raw completion, so a trace shows what the model was asked and said, and an exporter
    (trace/otel.py) re-sends it with its own times."""
    meta = (getattr(message, "response_metadata", None) or {}) if message is not None else {}
    model = meta.get("model_name") or getattr(llm, "model_name", None) or getattr(llm, "_llm_type", "")
    out: dict[str, Any] = {"stage": stage, "model": str(model), "start": round(started, 4), "ms": round(ms, 3),
                           "messages": [{"role": m.type, "content": str(m.content)} for m in messages]}
    if message is not None:
        out.update(output=str(message.content), **usage_of(message))
        if meta.get("forward_passes"):  # an in-process model's passes over its weights (speculative decoding: fewer)
            out["forward_passes"] = int(meta["forward_passes"])
    if error is not None:
        out["error"] = str(error)
    return out
