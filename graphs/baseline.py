"""Vanilla RAG: retrieve, pack, generate once, measure, finalize.

It takes the same settings, prompt and packing as the agent and returns the same ``AnswerRecord``,
so the two compare question by question. It never abstains: that is what the agent adds.
"""

from __future__ import annotations

import time
from typing import Any

from langchain_core.runnables import RunnableConfig
from langgraph.graph import END, START, StateGraph

from agentic_rag.anchors.kind import question_kind
from agentic_rag.anchors.predictor import propose_anchors
from agentic_rag.baug.signals import collect_signals
from agentic_rag.configuration import Settings
from agentic_rag.generator.finalize import make_finalize_node
from agentic_rag.generator.node import generate_plain_node
from agentic_rag.llm.factory import count_tokens
from agentic_rag.nodes import Node, timed
from agentic_rag.state import GraphInput, GraphOutput, RAGState
from agentic_rag.supervisor.packing import pack_evidence
from agentic_rag.workers.source import resolve_index, retrieve
from graphs.extend import node_metadata

SYSTEM = "baseline"


@timed(Node.RETRIEVE)
def retrieve_node(state: RAGState, config: RunnableConfig) -> dict[str, Any]:
    settings = Settings.from_runnable_config(config)
    index = resolve_index(state, settings)
    started = time.time()  # the question's clock, as the agent's: WALL_TIME_S bounds its LLM call too
    passages = retrieve(index, state["question"], settings)
    return {"passages": [p.to_dict() for p in passages], "started_at": started}


@timed(Node.PACK)
def pack_node(state: RAGState, config: RunnableConfig) -> dict[str, Any]:
    settings = Settings.from_runnable_config(config)
    bundle = pack_evidence(state.get("passages", []), settings.budget.MAX_CONTEXT_TOKENS, lambda t: count_tokens(t, settings))
    return {"bundle": bundle, "decision": {"action": "STOP", "reason": "STOP_SINGLE_PASS"}}


@timed(Node.MEASURE)
def measure_node(state: RAGState, config: RunnableConfig) -> dict[str, Any]:
    """The agent's support signals of the draft, measured and never acted on, so the two systems' figures
    compare question by question; and the question's kind, which the short answer reads."""
    settings = Settings.from_runnable_config(config)
    kind = question_kind(state["question"], propose_anchors(state["question"]))
    if not state.get("draft"):
        return {"kind": kind}
    from agentic_rag.retrieval.embeddings import get_embedder

    signals = collect_signals(state["question"], state["draft"], state.get("bundle") or {}, [], state.get("usage", {}),
                              settings, get_embedder(settings), kind=kind)
    return {"kind": kind, "signals": signals}


def build_graph():
    g = StateGraph(RAGState, context_schema=Settings, input_schema=GraphInput, output_schema=GraphOutput)
    g.add_node(Node.RETRIEVE, retrieve_node, metadata=node_metadata(Node.RETRIEVE))
    g.add_node(Node.PACK, pack_node, metadata=node_metadata(Node.PACK))
    g.add_node(Node.GENERATE, generate_plain_node, metadata=node_metadata(Node.GENERATE))
    g.add_node(Node.MEASURE, measure_node, metadata=node_metadata(Node.MEASURE))
    g.add_node(Node.FINALIZE, make_finalize_node(SYSTEM), metadata=node_metadata(Node.FINALIZE))
    g.add_edge(START, Node.RETRIEVE)
    g.add_edge(Node.RETRIEVE, Node.PACK)
    g.add_edge(Node.PACK, Node.GENERATE)
    g.add_edge(Node.GENERATE, Node.MEASURE)
    g.add_edge(Node.MEASURE, Node.FINALIZE)
    g.add_edge(Node.FINALIZE, END)
    return g.compile(name=SYSTEM)


graph = build_graph()
