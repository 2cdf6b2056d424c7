"""Generator calls: the answer over the packed evidence, and the one-shot critique-and-revise.

Both are deterministic (temperature 0) and capped at ``MAX_OUTPUT_TOKENS``. ``prompt_cost`` lets the
graph check a call against the per-question token budget *before* making it.
"""

from __future__ import annotations

from typing import Any

from langchain_core.messages import AIMessage, HumanMessage, SystemMessage

from agentic_rag.configuration import Settings
from agentic_rag.llm.factory import count_tokens, get_chat_model
from agentic_rag.llm.usage import UsageLedger, invoke_llm
from agentic_rag.prompts import load_prompt, render
from agentic_rag.supervisor.packing import render_sources

CHAT_TEMPLATE_MARGIN = 24  # tokens the chat template adds around two messages (role markers), upper bound


def messages_for(template: str, **values: str) -> list:
    """``template`` names a prompt pair: ``<template>_system.txt`` and ``<template>_user.txt``."""
    return [
        SystemMessage(content=load_prompt(f"{template}_system").strip()),
        HumanMessage(content=render(f"{template}_user", **values).strip()),
    ]


def answer_messages(question: str, bundle: dict[str, Any], query_time: str = "") -> list:
    return messages_for(
        "answer",
        sources=render_sources(bundle) or "(no sources)",
        question=question,
        query_time=query_time or "unknown",
    )


def reflect_messages(question: str, bundle: dict[str, Any], draft: str, problems: str, query_time: str = "") -> list:
    return messages_for(
        "reflect",
        sources=render_sources(bundle) or "(no sources)",
        question=question,
        query_time=query_time or "unknown",
        draft=draft,
        problems=problems or "none found",
    )


def reflect_problems(signals: dict[str, Any]) -> str:
    """What the critique found, in words the reviser can act on (from the code's signals, not the model)."""
    parts = []
    unsupported = [r["sentence"] for r in signals.get("sentences", []) if not r.get("supported")]
    if unsupported:
        parts.append("sentences without support: " + " | ".join(unsupported[:3]))
    if signals.get("unsupported_claims"):
        parts.append("names or numbers not in the sources: " + ", ".join(signals["unsupported_claims"][:6]))
    return "; ".join(parts)


def reflect_request(state: dict[str, Any]) -> list:
    """The revision prompt for a state (the reflect node sends it; BAUG prices it before allowing one)."""
    return reflect_messages(
        state["question"],
        state["bundle"],
        state.get("draft", ""),
        reflect_problems(state.get("signals", {})),
        state.get("query_time", ""),
    )


def prompt_cost(messages: list, settings: Settings) -> int:
    """Upper bound of one call's tokens: the prompt as the tokenizer counts it, plus the output cap."""
    prompt = sum(count_tokens(str(m.content), settings) for m in messages) + CHAT_TEMPLATE_MARGIN
    return prompt + settings.MAX_OUTPUT_TOKENS


def model_from(config: Any, settings: Settings):
    """The chat model for a run: ``configurable.llm`` when a caller injects one (tests, notebooks), else settings."""
    injected = ((config or {}).get("configurable") or {}).get("llm")
    return injected if injected is not None else get_chat_model(settings)


def call_model(messages: list, settings: Settings, stage: str, llm=None, **call_kwargs: Any) -> tuple[AIMessage, dict[str, Any]]:
    """Return the reply message and this call's usage by stage."""
    ledger = UsageLedger()
    model = llm if llm is not None else get_chat_model(settings)
    message = invoke_llm(model, messages, stage, ledger, max_tokens=settings.MAX_OUTPUT_TOKENS, **call_kwargs)
    return message, ledger.by_stage


def call_generator(messages: list, settings: Settings, stage: str, llm=None) -> tuple[str, dict[str, Any]]:
    """Return the text and this call's usage by stage."""
    message, usage = call_model(messages, settings, stage, llm)
    return str(message.content).strip(), usage
