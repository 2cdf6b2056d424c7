"""One LLM call as every role makes it: which model a run uses, what a call may cost, and the call.

Every call is deterministic (temperature 0) and capped at ``MAX_OUTPUT_TOKENS``. ``prompt_cost`` lets
a node check a call against the per-question token budget *before* making it; ``call_model`` books
what the call used under its stage (generation, reflect, judge, verify...).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from langchain_core.messages import AIMessage

from agentic_rag.configuration import Settings
from agentic_rag.llm.factory import count_tokens, get_chat_model
from agentic_rag.llm.usage import UsageLedger, invoke_llm

CHAT_TEMPLATE_MARGIN = 24  # tokens the chat template adds around two messages (role markers), upper bound


def prompt_cost(messages: list, settings: Settings) -> int:
    """Upper bound of one call's tokens: the prompt as the tokenizer counts it, plus the output cap."""
    prompt = sum(count_tokens(str(m.content), settings) for m in messages) + CHAT_TEMPLATE_MARGIN
    return prompt + settings.llm.MAX_OUTPUT_TOKENS


def model_from(config: Any, settings: Settings):
    """The chat model for a run: ``configurable.llm`` when a caller injects one (tests, notebooks), else settings.
    A mapping there is the ``llm`` settings section a served graph's request sent as context (LangGraph copies
    context into ``configurable``), read with the other settings, not a model."""
    injected = ((config or {}).get("configurable") or {}).get("llm")
    return injected if injected is not None and not isinstance(injected, Mapping) else get_chat_model(settings)


def call_model(messages: list, settings: Settings, stage: str, llm=None, **call_kwargs: Any) -> tuple[AIMessage, dict[str, Any]]:
    """Return the reply message and this call's usage by stage."""
    ledger = UsageLedger()
    model = llm if llm is not None else get_chat_model(settings)
    message = invoke_llm(model, messages, stage, ledger, max_tokens=settings.llm.MAX_OUTPUT_TOKENS, **call_kwargs)
    return message, ledger.by_stage


def call_generator(messages: list, settings: Settings, stage: str, llm=None) -> tuple[str, dict[str, Any]]:
    """Return the text and this call's usage by stage."""
    message, usage = call_model(messages, settings, stage, llm)
    return str(message.content).strip(), usage
