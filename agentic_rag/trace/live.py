"""What `agentic-rag ask` prints while a graph runs: one line per node as it finishes (LangGraph's
update stream) and, with --debug, the part of each node's own output worth reading."""

from __future__ import annotations

import json
from typing import Callable

from rich.console import Console

from agentic_rag.configuration import Settings
from agentic_rag.nodes import Node
from agentic_rag.trace.run import describe
from agentic_rag.trace.text import event_line

DEBUG_FIELDS = {
    Node.ANCHORS: ("anchors_proposed", "anchors", "kind"),
    Node.WORKER: ("paths",),
    Node.SUPERVISE: ("bundle", "no_new_hits"),
    Node.RETRIEVE: ("passages",),
    Node.PACK: ("bundle",),
    Node.MEASURE: ("kind", "signals"),
    Node.GENERATE: ("draft",),
    Node.REFLECT: ("draft",),
    Node.COLLECT_SIGNALS: ("signals", "validation", "flags"),
    Node.FINAL_CHECK: ("signals",),
    Node.DECIDE: ("decision",),
    Node.DISAMBIGUATE: ("ambiguity",),
    Node.CONFIDENCE_GATE: ("confidence",),
    Node.FINALIZE: (),  # its result is printed below
}
# what every node's update carries besides its own keys (accounting and the trace)
_BOOKKEEPING = ("usage", "latency_ms", "events")


def node_printer(console: Console, err: Console, settings: Settings, debug: bool) -> Callable[[str, dict], None]:
    """``on_update`` for the runner: a line per node as it finishes on ``console`` and, with ``debug``,
    the node's raw output on ``err``."""
    thresholds = settings.public_dump()

    def show(node: str, update: dict) -> None:
        for event in update.get("events") or [{"node": node}]:
            summary, _ = describe(event, thresholds)
            console.print(event_line({**event, "summary": summary}))
        if debug:
            print_update(err, node, update)

    return show


def print_update(err: Console, node: str, update: dict) -> None:
    """--debug: each node's decision and signals as the graph runs (long texts trimmed)."""
    shown = {}
    # an extension node shows what it wrote
    keys = DEBUG_FIELDS[node] if node in DEBUG_FIELDS else [k for k in update if k not in _BOOKKEEPING]
    for key in keys:
        if key not in update:
            continue
        value = update[key]
        if key == "paths":
            value = [{k: p[k] for k in ("anchor", "round", "path_score", "new_hits_ratio", "pruned_count", "terminated_by")}
                     | {"passages": len(p["passages"])} for p in value]
        elif key in ("bundle",):
            value = {k: value.get(k) for k in ("context_tokens", "dropped", "path_count", "anchor_stats", "generation_cost")} | {
                "passages": [p["chunk_id"] for p in value.get("passages", [])]}
        elif key == "passages":
            value = [(p["chunk_id"], p["fused_score"]) for p in value]
        elif key == "signals":
            value = {k: v for k, v in value.items() if k not in ("sentences",)}
        shown[key] = value
    err.rule(f"[bold cyan]{node}")
    err.print_json(data=json.loads(json.dumps(shown, default=str)))
