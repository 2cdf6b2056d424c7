"""The name of every graph node, in one place.

Graphs (graphs/) wire nodes by these names, each node records its latency and trace event under
its own name (``utils.timed``), and the CLI's ``--debug`` and the trace viewer read them back. The
role packages import this module, never graphs/ (which imports them) and never each other's nodes.
A ``StrEnum`` so a name is also the plain string LangGraph, JSON and telemetry see.
"""

from __future__ import annotations

from enum import StrEnum


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
}
EXTENSION_ROLE = "Extensions"
