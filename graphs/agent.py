"""The anchor-centric agent with BAUG as the final decision-maker: its shape and its routers.

    START -> anchors -(Send, one per anchor)-> worker* -> supervise -> disambiguate -> confidence_gate -> generate
                                                              |               |                |            |
                                                              |               |                |    read_answerability
                                                              |               |                |            |
                                                              +---------------+----------------+--> collect_signals
    collect_signals -> decide -> finalize (STOP / ABSTAIN) | reflect -> collect_signals (once)
                              | worker* (RETRIEVE_MORE, once) | final_check -> decide (a STOP, verifier on, once)

``read_answerability`` is the reader's step (reader/read.py): free when the generation call's prefill
gave the probe its state, a prefill of the packaged reader otherwise. BAUG is three nodes: ``collect_signals``
reads the draft against its evidence, ``decide`` applies the policy,
``final_check`` makes the verifier's calls on a draft about to be shown. Loops are bounded by
flags set in state (one-shot retrieval, one reflect, one final check), ``MAX_ROUNDS`` and the token /
call / wall-time caps checked before each LLM call; LangGraph's recursion limit is never what stops it.

Extensions named in the ``EXTENSIONS`` setting are inserted on this shape's edges and checked before
it compiles (graphs/extend.py, docs/extending.md).
"""

from __future__ import annotations

import json
from functools import lru_cache
from typing import Literal

from langchain_core.runnables import RunnableConfig
from langgraph.graph import END
from langgraph.types import Send

from agentic_rag.anchors.node import predict_anchors_node
from agentic_rag.baug.node import collect_signals_node, decide_node, final_check_node
from agentic_rag.baug.policy import ABSTAIN, REFLECT, RETRIEVE_MORE, STOP
from agentic_rag.budget import can_afford
from agentic_rag.configuration import Settings
from agentic_rag.extensions import Extension, load_extensions
from agentic_rag.generator.finalize import make_finalize_node
from agentic_rag.generator.node import generate_node, reflect_node
from agentic_rag.nodes import BUDGET_CHECKED, Node
from agentic_rag.reader.node import read_answerability_node
from agentic_rag.state import GraphInput, GraphOutput, RAGState
from agentic_rag.supervisor.ambiguity_node import disambiguate_node
from agentic_rag.supervisor.confidence_gate_node import confidence_gate_node
from agentic_rag.supervisor.node import supervise_node
from agentic_rag.workers.node import worker_node
from graphs.extend import Route, Shape

SYSTEM = "agent"


# -- routers -------------------------------------------------------------------------------------
def dispatch_workers(state: RAGState, config: RunnableConfig) -> list[Send] | Literal[Node.COLLECT_SIGNALS]:
    """One worker per selected anchor; a question without anchors gets one worker on the question itself.
    An out-of-domain or too long question is not searched at all: BAUG refuses it."""
    if state.get("ood") or state.get("too_long"):
        return Node.COLLECT_SIGNALS
    return worker_sends(state, config)


def worker_sends(state: RAGState, config: RunnableConfig) -> list[Send]:
    settings = Settings.from_runnable_config(config)
    anchors = state.get("anchors") or [None]
    base = {k: state[k] for k in ("question", "record", "index_dir") if k in state}
    payload = {
        **base,
        "round": state.get("round", 1),
        "held_ids": list(state.get("held_ids", [])),
        "extra_terms": list(state.get("extra_terms", [])),
        "deadline_at": state.get("started_at", 0.0) + settings.budget.WALL_TIME_S,
        "follow_mentions": (state.get("hop_plan") or {}).get("shape") == "bridge",
    }
    sends = [Send(str(Node.WORKER), {**payload, "anchor": anchor}) for anchor in anchors[: settings.agent.MAX_WORKERS]]
    if state.get("hop_query"):  # a bridge entity's own page: a query of its own, the question's words would drown it
        sends.append(Send(str(Node.WORKER), {**payload, "anchor": None, "hop_query": state["hop_query"]}))
    return sends


def route_after_supervise(state: RAGState, config: RunnableConfig) -> Literal[Node.DISAMBIGUATE, Node.COLLECT_SIGNALS]:
    """With evidence, the ambiguity policy and then the confidence gate look at it; without, BAUG abstains."""
    return Node.DISAMBIGUATE if (state.get("bundle") or {}).get("passages") else Node.COLLECT_SIGNALS


def route_after_disambiguate(state: RAGState, config: RunnableConfig) -> Literal[Node.CONFIDENCE_GATE, Node.COLLECT_SIGNALS]:
    """An ambiguous or refused selection goes to BAUG (no LLM call); a resolved bundle to the gate."""
    if (state.get("ambiguity") or {}).get("status") in ("ambiguous", "refuse"):
        return Node.COLLECT_SIGNALS
    return Node.CONFIDENCE_GATE


def route_after_gate(state: RAGState, config: RunnableConfig) -> Literal[Node.GENERATE, Node.COLLECT_SIGNALS]:
    """Generate only past the gate, with something new to say, a model to ask, and within every cap;
    else BAUG decides."""
    settings = Settings.from_runnable_config(config)
    bundle = state.get("bundle") or {}
    if not (state.get("confidence") or {}).get("passed", True) or state.get("no_new_hits") or state.get("llm_error"):
        return Node.COLLECT_SIGNALS
    if not can_afford(state, settings, bundle.get("generation_cost", 0)):
        return Node.COLLECT_SIGNALS
    return Node.GENERATE


def route_after_decide(state: RAGState, config: RunnableConfig) -> list[Send] | Literal[Node.FINAL_CHECK, Node.REFLECT, Node.FINALIZE]:
    """BAUG's action: more retrieval (once), the verifier's final check, a reflection, or the answer record."""
    decision = state.get("decision") or {}
    if decision.get("final_check"):
        return Node.FINAL_CHECK
    action = decision.get("action", ABSTAIN)
    if action == RETRIEVE_MORE:  # a question refused before search never gets here: its decision is ABSTAIN
        return worker_sends(state, config)
    if action == REFLECT:
        return Node.REFLECT
    return Node.FINALIZE


# -- the graph -----------------------------------------------------------------------------------
def agent_shape() -> Shape:
    shape = Shape(start=Node.ANCHORS, budget_checked=BUDGET_CHECKED)
    shape.add(Node.ANCHORS, predict_anchors_node,
              Route(dispatch_workers, sends=frozenset({Node.WORKER}),
                    labels={Node.WORKER: "one per anchor", Node.COLLECT_SIGNALS: "out of domain / too long"}))
    shape.add(Node.WORKER, worker_node, Node.SUPERVISE)
    shape.add(Node.SUPERVISE, supervise_node, Route(route_after_supervise,
                                                    labels={Node.DISAMBIGUATE: "evidence", Node.COLLECT_SIGNALS: "no evidence"}))
    shape.add(Node.DISAMBIGUATE, disambiguate_node,
              Route(route_after_disambiguate,
                    labels={Node.CONFIDENCE_GATE: "resolved", Node.COLLECT_SIGNALS: "ambiguous / refused"}))
    shape.add(Node.CONFIDENCE_GATE, confidence_gate_node, Route(route_after_gate,
                                                                labels={Node.GENERATE: "passed, affordable",
                                                                        Node.COLLECT_SIGNALS: "refused / nothing new / no budget"}))
    shape.add(Node.GENERATE, generate_node, Node.READ)
    shape.add(Node.READ, read_answerability_node, Node.COLLECT_SIGNALS)
    shape.add(Node.COLLECT_SIGNALS, collect_signals_node, Node.DECIDE)
    shape.add(Node.DECIDE, decide_node, Route(route_after_decide, sends=frozenset({Node.WORKER}),
                                              labels={Node.WORKER: RETRIEVE_MORE, Node.FINAL_CHECK: f"{STOP} (verifier on)",
                                                      Node.REFLECT: REFLECT, Node.FINALIZE: f"{STOP} / {ABSTAIN}"}))
    shape.add(Node.FINAL_CHECK, final_check_node, Node.DECIDE)
    shape.add(Node.REFLECT, reflect_node, Node.COLLECT_SIGNALS)
    shape.add(Node.FINALIZE, make_finalize_node(SYSTEM), END)
    return shape


def build_graph(extensions: list[Extension] | tuple[Extension, ...] = ()):
    """The compiled agent, with ``extensions`` inserted in order (ExtensionError if one does not fit)."""
    shape = agent_shape()
    for ext in extensions:
        shape.insert(ext)
    shape.check_loops()
    return shape.compile(RAGState, GraphInput, SYSTEM, output_schema=GraphOutput, context_schema=Settings)


@lru_cache(maxsize=8)
def _built(specs: tuple[str, ...], options: str):
    settings = Settings.load(overrides={"EXTENSIONS": list(specs), "EXTENSION_SETTINGS": json.loads(options)})
    return build_graph(load_extensions(settings))


def graph_for(settings: Settings):
    """The agent for a run's settings: the plain graph, or one built (once) with its extensions."""
    return _built(tuple(settings.agent.EXTENSIONS), json.dumps(settings.agent.EXTENSION_SETTINGS, sort_keys=True))


# langgraph.json's graph: extensions come from the environment (AGENTIC_RAG_EXTENSIONS)
graph = graph_for(Settings.load())
