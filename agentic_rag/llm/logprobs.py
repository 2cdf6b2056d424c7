"""Token log-probabilities of a reply, read the same way from every backend.

Why: the answerability probe needs the in-process model's hidden states, so a served model (vLLM,
llama.cpp's server, OpenAI) had no signal of its own confidence at all. Every one of those servers
returns the log-probability of each generated token when asked (``logprobs``), and the in-process
model has it in its scores; the fitted decision (baug/fitted.py) reads three numbers from it:

* ``lp_mean``: the mean token log-probability over the reply (nats per token; 0 = certain);
* ``lp_min``: the least likely token's log-probability (one invented name shows here, not in the mean);
* ``p_first``: the probability of the reply's first token (whether the model knew how to start).

A server that ignores the request (``transformers serve`` does) returns a reply without them: the
signals are then None, never 0 (0 would read as certainty), and ``logprobs`` says why.
"""

from __future__ import annotations

import math
import sys
from typing import Any, Sequence

LOGPROB_SIGNALS = ("lp_mean", "lp_min", "p_first")
RETURNED, NOT_RETURNED, NOT_REQUESTED = "returned", "not returned by the backend", "not requested"
TOP_LOGPROBS = 20  # alternatives per token asked of a server when a yes/no split is read from its first token


def request_kwargs(model: Any, settings: Any) -> dict[str, Any]:
    """What a generation call passes for its tokens' log-probabilities (both backends take ``logprobs``).
    A server is also sent ``top_logprobs=0``: llama-cpp-python's server returns no log-probabilities
    without it, and OpenAI and vLLM accept it."""
    if not settings.baug.REQUEST_LOGPROBS:
        return {}
    # a model of a module never imported is not what this one is: importing the OpenAI client just to
    # say no would add seconds to every in-process run's first question
    openai_chat = getattr(sys.modules.get("langchain_openai"), "ChatOpenAI", None)
    if openai_chat is not None and isinstance(model, openai_chat):
        return {"logprobs": True, "top_logprobs": 0}
    local = getattr(sys.modules.get("agentic_rag.llm.local"), "ChatLocalTransformers", None)
    return {"logprobs": True} if local is not None and isinstance(model, local) else {}


def token_logprobs(message: Any) -> list[float] | None:
    """The reply's per-token log-probabilities: the in-process model's ``token_logprobs``, or an OpenAI
    reply's ``logprobs.content`` (None when the reply carries none)."""
    meta = getattr(message, "response_metadata", None) or {}
    if meta.get("token_logprobs") is not None:
        return [float(v) for v in meta["token_logprobs"]]
    content = (meta.get("logprobs") or {}).get("content") if isinstance(meta.get("logprobs"), dict) else None
    if not content:
        return None
    values = [t.get("logprob") for t in content if isinstance(t, dict)]
    return [float(v) for v in values if v is not None] or None


def summarise(logprobs: Sequence[float] | None, requested: bool = True) -> dict[str, Any]:
    """The three signals and whether they could be read (``logprobs``: returned / why not)."""
    if not logprobs:
        return {**dict.fromkeys(LOGPROB_SIGNALS), "logprobs": NOT_RETURNED if requested else NOT_REQUESTED}
    values = [max(v, -1e4) for v in logprobs]  # -inf (a token the server calls impossible) stays finite in JSON
    return {
        "lp_mean": round(sum(values) / len(values), 4),
        "lp_min": round(min(values), 4),
        "p_first": round(math.exp(values[0]), 4),
        "logprobs": RETURNED,
    }


def reply_signals(message: Any, kwargs: dict[str, Any]) -> dict[str, Any]:
    """``summarise`` of a reply made with ``request_kwargs``."""
    return summarise(token_logprobs(message), requested=bool(kwargs.get("logprobs")))


def first_token_split(message: Any, choices: Sequence[str]) -> dict[str, float] | None:
    """How the first reply token's ``top_logprobs`` split among ``choices`` (each choice sums its
    spellings: "yes", " Yes", ...), renormalised among them; None when the reply has no alternatives
    or none of them is a choice (then the caller falls back to the decoded word)."""
    meta = getattr(message, "response_metadata", None) or {}
    content = (meta.get("logprobs") or {}).get("content") if isinstance(meta.get("logprobs"), dict) else None
    if not content or not content[0].get("top_logprobs"):
        return None
    mass = dict.fromkeys(choices, 0.0)
    for alt in content[0]["top_logprobs"]:
        word = str(alt.get("token", "")).strip().lower()
        for choice in choices:
            if word == choice.lower() and alt.get("logprob") is not None:
                mass[choice] += math.exp(float(alt["logprob"]))
    total = sum(mass.values())
    if total <= 0:
        return None
    return {c: round(m / total, 6) for c, m in mass.items()}
