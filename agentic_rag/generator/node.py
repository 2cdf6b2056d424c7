"""Graph nodes: generate the answer, and the one-shot Self-RAG-style critique-and-revise."""

from __future__ import annotations

from typing import Any

from langchain_core.runnables import RunnableConfig

from agentic_rag.configuration import Settings
from agentic_rag.generator.generate import answer_messages, call_generator, model_from, reflect_messages
from agentic_rag.state import RAGState
from agentic_rag.utils import timed


@timed("generate")
def generate_node(state: RAGState, config: RunnableConfig) -> dict[str, Any]:
    settings = Settings.from_runnable_config(config)
    messages = answer_messages(state["question"], state["bundle"], state.get("query_time", ""))
    draft, usage = call_generator(messages, settings, "generation", model_from(config, settings))
    return {"draft": draft, "usage": usage}


def reflect_problems(signals: dict[str, Any]) -> str:
    """What the critique found, in words the reviser can act on (from the code's signals, not the model)."""
    parts = []
    unsupported = [r["sentence"] for r in signals.get("sentences", []) if not r.get("supported")]
    if unsupported:
        parts.append("sentences without support: " + " | ".join(unsupported[:3]))
    if signals.get("unsupported_claims"):
        parts.append("names or numbers not in the sources: " + ", ".join(signals["unsupported_claims"][:6]))
    return "; ".join(parts)


def reflect_request(state: RAGState) -> list:
    return reflect_messages(
        state["question"],
        state["bundle"],
        state.get("draft", ""),
        reflect_problems(state.get("signals", {})),
        state.get("query_time", ""),
    )


@timed("reflect")
def reflect_node(state: RAGState, config: RunnableConfig) -> dict[str, Any]:
    settings = Settings.from_runnable_config(config)
    revised, usage = call_generator(reflect_request(state), settings, "reflect", model_from(config, settings))
    return {"draft": revised, "usage": usage, "reflected": True}
