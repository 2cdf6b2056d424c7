"""The name of every graph node, in one place.

Graphs (graphs/) wire nodes by these names, each node records its latency and trace event under
its own name (``timed``, below), and the CLI's ``--debug`` and the trace viewer read them back. The
role packages import this module, never graphs/ (which imports them) and never each other's nodes.
A ``StrEnum`` so a name is also the plain string LangGraph, JSON and telemetry see.
"""

from __future__ import annotations

import functools
import time
from enum import StrEnum
from typing import Any, Callable

from langchain_core.runnables import RunnableConfig

from agentic_rag.configuration import Settings
from agentic_rag.events import node_event
from agentic_rag.timing import node_clock


class Node(StrEnum):
    # the agent
    ANCHORS = "anchors"
    WORKER = "worker"
    SUPERVISE = "supervise"
    DISAMBIGUATE = "disambiguate"
    CONFIDENCE_GATE = "confidence_gate"
    GENERATE = "generate"
    READ = "read_answerability"  # the answerability reader, where the generation call could not be read
    COLLECT_SIGNALS = "collect_signals"  # BAUG, step 1: support, gray-zone judge, NLI, validators, flags
    FINAL_CHECK = "final_check"  # BAUG, step 2 (a STOP with the verifier on): quote probe and verifier calls
    DECIDE = "decide"  # BAUG, step 3: the policy, telemetry and the next round's bookkeeping
    REFLECT = "reflect"
    FINALIZE = "finalize"
    # the baseline
    RETRIEVE = "retrieve"
    PACK = "pack"
    MEASURE = "measure"  # the agent's signals of the baseline's draft, never acted on


# Every loop of the agent graph passes through a node in this set: its policy checks the rounds,
# calls, tokens and wall time left before anything loops back. The builder refuses an extension
# that would close a loop around none of them (graphs/extend.py).
BUDGET_CHECKED = frozenset({Node.DECIDE})


# The role each node plays in the design (README, docs/how-it-works.md), so a drawing groups the
# nodes as a reader of the design looks for them. The graphs put it on each node's metadata
# (``role``); every drawing (`agentic-rag graph`, the trace page) reads it from there. The confidence
# gate is the Supervisor's check of its bundle before any LLM call; the Reader reads the draft's prompt;
# BAUG is the three nodes after it. A node not listed (an extension) is drawn under EXTENSION_ROLE.
ROLE: dict[str, str] = {
    Node.ANCHORS: "Anchor-Predictor",
    Node.WORKER: "Retriever-Workers",
    Node.SUPERVISE: "Supervisor",
    Node.DISAMBIGUATE: "Supervisor",
    Node.CONFIDENCE_GATE: "Supervisor",
    Node.GENERATE: "Generator",
    Node.REFLECT: "Generator",
    Node.FINALIZE: "Generator",
    Node.READ: "Reader",
    Node.COLLECT_SIGNALS: "BAUG",
    Node.FINAL_CHECK: "BAUG",
    Node.DECIDE: "BAUG",
    Node.RETRIEVE: "Retriever",
    Node.PACK: "Supervisor",
    Node.MEASURE: "BAUG",
}
EXTENSION_ROLE = "Extensions"

NodeFn = Callable[..., dict[str, Any]]  # a node: (state, config) -> its update


def _event(name: str, state: dict, update: dict, started: float, ms: float, config: RunnableConfig) -> dict[str, Any]:
    limit = Settings.from_runnable_config(config).eval.TRACE_TEXT_CHARS
    return node_event(name, state, update, started, ms, limit)


def timed(name: str) -> Callable[[NodeFn], NodeFn]:
    """Record a node's wall time under ``latency_ms[name]``, its own thread's CPU time under
    ``cpu_ms[name]`` and the time its LLM calls took under ``llm_ms[name]`` (each summed over rounds by
    the state reducer), and one trace event under ``events`` (agentic_rag/events.py) that also
    holds the node's named parts (agentic_rag/timing.py), whatever the node is.

    The wrapper declares ``config: RunnableConfig`` itself (and hides ``__wrapped__``) so LangGraph
    recognises the config parameter whatever annotation style the node module uses.
    """

    name = str(name)  # a ``Node`` member is recorded as its plain name

    def wrap(fn: NodeFn) -> NodeFn:
        def inner(state: dict, config: RunnableConfig) -> Any:
            started, t0, c0 = time.time(), time.perf_counter(), time.thread_time()
            with node_clock() as clock:
                update = fn(state, config)
            ms = (time.perf_counter() - t0) * 1000.0
            cpu_ms, llm_ms = round((time.thread_time() - c0) * 1000.0, 3), round(clock.llm_ms, 3)
            written = update if isinstance(update, dict) else getattr(update, "update", None)
            if isinstance(written, dict):
                event = {**_event(name, state, written, started, ms, config), "cpu_ms": cpu_ms, "llm_ms": llm_ms}
                if clock.parts:
                    event["parts_ms"] = clock.parts
                if clock.calls:
                    event["llm"] = clock.calls
                extra = {"latency_ms": {name: round(ms, 3)}, "cpu_ms": {name: cpu_ms}, "llm_ms": {name: llm_ms},
                         "events": [event]}
                if isinstance(update, dict):
                    update = {**update, **extra}
                else:
                    written.update(extra)  # a Command
            return update

        functools.update_wrapper(inner, fn, updated=())
        del inner.__wrapped__
        inner.__annotations__ = {"state": dict, "config": RunnableConfig, "return": Any}
        return inner

    return wrap
