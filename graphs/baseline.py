"""Vanilla RAG: retrieve, pack, generate once, finalize.

It takes the same settings, prompt and packing as the agent and returns the same ``AnswerRecord``,
so the two compare question by question. It never abstains: that is what the agent adds.
"""

from __future__ import annotations

import time
from typing import Any

from langchain_core.runnables import RunnableConfig
from langgraph.graph import END, START, StateGraph

from agentic_rag.configuration import Settings
from agentic_rag.generator.finalize import make_finalize_node
from agentic_rag.generator.node import generate_plain_node
from agentic_rag.llm.factory import count_tokens
from agentic_rag.retrievers.source import resolve_index, retrieve
from agentic_rag.state import RAGState
from agentic_rag.supervisor.packing import pack_evidence
from agentic_rag.utils import timed

SYSTEM = "baseline"


@timed("retrieve")
def retrieve_node(state: RAGState, config: RunnableConfig) -> dict[str, Any]:
    settings = Settings.from_runnable_config(config)
    index = resolve_index(state, settings)
    started = time.time()  # the question's clock, as the agent's: WALL_TIME_S bounds its LLM call too
    passages = retrieve(index, state["question"], settings)
    return {"passages": [p.to_dict() for p in passages], "started_at": started}


@timed("pack")
def pack_node(state: RAGState, config: RunnableConfig) -> dict[str, Any]:
    settings = Settings.from_runnable_config(config)
    bundle = pack_evidence(state.get("passages", []), settings.MAX_CONTEXT_TOKENS, lambda t: count_tokens(t, settings))
    return {"bundle": bundle, "decision": {"action": "STOP", "reason": "STOP_SINGLE_PASS"}}


def build_graph():
    g = StateGraph(RAGState)
    g.add_node("retrieve", retrieve_node)
    g.add_node("pack", pack_node)
    g.add_node("generate", generate_plain_node)
    g.add_node("finalize", make_finalize_node(SYSTEM))
    g.add_edge(START, "retrieve")
    g.add_edge("retrieve", "pack")
    g.add_edge("pack", "generate")
    g.add_edge("generate", "finalize")
    g.add_edge("finalize", END)
    return g.compile(name=SYSTEM)


graph = build_graph()
