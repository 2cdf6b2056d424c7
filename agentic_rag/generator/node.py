"""Graph nodes: generate the answer, and the one-shot Self-RAG-style critique-and-revise."""

from __future__ import annotations

from typing import Any

from langchain_core.runnables import RunnableConfig

from agentic_rag.configuration import Settings
from agentic_rag.gate.probe import probe_request, read_probe
from agentic_rag.generator.generate import answer_messages, call_generator, call_model, model_from, reflect_request
from agentic_rag.nodes import Node
from agentic_rag.state import RAGState
from agentic_rag.utils import timed


def _generate(state: RAGState, config: RunnableConfig, with_probe: bool) -> dict[str, Any]:
    settings = Settings.from_runnable_config(config)
    messages = answer_messages(state["question"], state["bundle"], state.get("query_time", ""))
    model = model_from(config, settings)
    # the probe's state comes from this same call's prefill; a graph without BAUG has no use for it
    request = probe_request(model, settings) if with_probe else {"status": "off"}
    message, usage = call_model(messages, settings, "generation", model, **request.get("kwargs", {}))
    return {"draft": str(message.content).strip(), "usage": usage, "probe": read_probe(message, request)}


@timed(Node.GENERATE)
def generate_node(state: RAGState, config: RunnableConfig) -> dict[str, Any]:
    """The agent's answer call, read by the answerability probe."""
    return _generate(state, config, with_probe=True)


@timed(Node.GENERATE)
def generate_plain_node(state: RAGState, config: RunnableConfig) -> dict[str, Any]:
    """The baseline's answer call: vanilla RAG, no probe."""
    return _generate(state, config, with_probe=False)


@timed(Node.REFLECT)
def reflect_node(state: RAGState, config: RunnableConfig) -> dict[str, Any]:
    settings = Settings.from_runnable_config(config)
    revised, usage = call_generator(reflect_request(state), settings, "reflect", model_from(config, settings))
    return {"draft": revised, "usage": usage, "reflected": True}
