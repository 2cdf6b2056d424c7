"""How the generator splits one short reply among a few choices ("yes" / "no", a relevance grade): the
readings the support verifier, the gray-zone judge and the relevance grader take, read from the cheapest
place each backend offers."""

from __future__ import annotations

import re
from typing import Any

from agentic_rag.llm.calls import call_model, prompt_cost
from agentic_rag.llm.factory import get_chat_model
from agentic_rag.llm.logprobs import TOP_LOGPROBS, first_token_split, request_kwargs

YES_NO_MAX_OUTPUT_TOKENS = 4  # "yes" / "no" when the backend must decode its verdict (tokens)


def yes_no_cost(messages: list, settings) -> int:
    return prompt_cost(messages, settings) - settings.llm.MAX_OUTPUT_TOKENS + YES_NO_MAX_OUTPUT_TOKENS


def choice_probabilities(messages: list, settings, stage: str, choices: list[str], llm=None,
                         max_output_tokens: int = YES_NO_MAX_OUTPUT_TOKENS) -> tuple[dict[str, float], dict[str, Any]]:
    """How the model splits its reply among ``choices``, and the call's usage under ``stage``.

    The in-process backend reads the split from one prefill (first-token probabilities, no decoding);
    an OpenAI-compatible server is asked for its first token's ``top_logprobs`` and the split is read
    from them; a server that returns none (``transformers serve``) or a backend without them decodes
    up to ``max_output_tokens`` and the first choice the reply opens with gets 1.0 (a reply that opens
    with none of them reads as all zeros)."""
    from agentic_rag.llm.local import ChatLocalTransformers

    capped = settings.replace(MAX_OUTPUT_TOKENS=max_output_tokens)
    llm = llm if llm is not None else get_chat_model(settings)
    if isinstance(llm, ChatLocalTransformers):
        message, usage = call_model(messages, capped, stage, llm, score_choices=list(choices))
        return {c: float(p) for c, p in message.response_metadata["choice_probs"].items()}, usage
    asked = request_kwargs(llm, settings)  # a server that returns log-probabilities: read the split, not a word
    message, usage = call_model(messages, capped, stage, llm, **({**asked, "top_logprobs": TOP_LOGPROBS} if asked else {}))
    split = first_token_split(message, choices) if asked else None
    if split is not None:
        return split, usage
    opened = re.match(r"^\W*(\w+)", str(message.content))
    word = opened.group(1).lower() if opened else ""
    return {c: float(word == c.lower()) for c in choices}, usage


def yes_probability(messages: list, settings, stage: str, llm=None) -> tuple[float, dict[str, Any]]:
    """P(yes) for a yes/no prompt, and the call's usage under ``stage``."""
    split, usage = choice_probabilities(messages, settings, stage, ["yes", "no"], llm)
    return split["yes"], usage
