"""The anchor-centric agent with BAUG as the final decision-maker.

    START -> anchors -(Send, one per anchor)-> worker* -> supervise -> disambiguate -> confidence_gate -> generate -> baug
                                                              |               |                         |
                                                              +---------------+------> baug <-----------+
    baug -> finalize (STOP / ABSTAIN) | reflect -> baug (once) | worker* (RETRIEVE_MORE, once)

Loops are bounded by flags set in state (one-shot retrieval, one reflect), ``MAX_ROUNDS`` and the
token / call / wall-time caps checked before each LLM call; LangGraph's recursion limit is never
what stops it.
"""

from __future__ import annotations

from langgraph.graph import END, START, StateGraph

from agentic_rag.anchors.node import predict_anchors_node
from agentic_rag.gate.confidence_node import confidence_gate_node, route_after_gate
from agentic_rag.gate.node import FINALIZE, REFLECT_NODE, baug_node, route_after_baug
from agentic_rag.generator.finalize import make_finalize_node
from agentic_rag.generator.node import generate_node, reflect_node
from agentic_rag.retrievers.node import WORKER, dispatch_workers, worker_node
from agentic_rag.state import GraphInput, RAGState
from agentic_rag.supervisor.ambiguity_node import disambiguate_node
from agentic_rag.supervisor.node import (
    CONFIDENCE,
    DISAMBIGUATE,
    GATE,
    GENERATE,
    route_after_disambiguate,
    route_after_supervise,
    supervise_node,
)

SYSTEM = "agent"


def build_graph():
    g = StateGraph(RAGState, input_schema=GraphInput)
    g.add_node("anchors", predict_anchors_node)
    g.add_node(WORKER, worker_node)
    g.add_node("supervise", supervise_node)
    g.add_node(DISAMBIGUATE, disambiguate_node)
    g.add_node(CONFIDENCE, confidence_gate_node)
    g.add_node(GENERATE, generate_node)
    g.add_node(GATE, baug_node)
    g.add_node(REFLECT_NODE, reflect_node)
    g.add_node(FINALIZE, make_finalize_node(SYSTEM))
    g.add_edge(START, "anchors")
    g.add_conditional_edges("anchors", dispatch_workers, [WORKER, GATE])
    g.add_edge(WORKER, "supervise")
    g.add_conditional_edges("supervise", route_after_supervise, [DISAMBIGUATE, GATE])
    g.add_conditional_edges(DISAMBIGUATE, route_after_disambiguate, [CONFIDENCE, GATE])
    g.add_conditional_edges(CONFIDENCE, route_after_gate, [GENERATE, GATE])
    g.add_edge(GENERATE, GATE)
    g.add_conditional_edges(GATE, route_after_baug, [WORKER, REFLECT_NODE, FINALIZE])
    g.add_edge(REFLECT_NODE, GATE)
    g.add_edge(FINALIZE, END)
    return g.compile(name=SYSTEM)


graph = build_graph()
