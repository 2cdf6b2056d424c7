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
