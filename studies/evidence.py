"""Whether the pages that answer a question reach the generator: each system's graph run until its
evidence is packed, and stopped there, so no model is called.

A multi-hop answer needs every one of its pages in the context: a draft written from one of two is
mostly wrong, however well the checks after it judge it. Which pages a system packs is settled by
retrieval, pruning and the context budget alone, so it can be measured on hundreds of questions in
minutes, and a change to retrieval judged before any generation is paid for. A record's gold pages
(``gold_page_urls``: HotpotQA's supporting paragraphs) say which pages answer it.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from typing import Any, Callable, Iterable

from agentic_rag.nodes import Node

# the node whose output is the context the generator reads, per system
PACKED: dict[str, str] = {"agent": Node.SUPERVISE, "baseline": Node.PACK}


def packed_evidence(system: str, record: Any, settings: Any) -> dict[str, Any]:
    """The bundle ``system`` packs for ``record`` in its first round; {} where the graph ends before
    packing (an out-of-domain question)."""
    from agentic_rag.runner import graph_input, system_graph

    graph = system_graph(system, settings)
    node = PACKED[system]
    stream = graph.stream(graph_input(record=record), config={"configurable": {"settings": settings}},
                          stream_mode="updates")
    try:
        for update in stream:
            if node in update:
                return (update[node] or {}).get("bundle") or {}
    finally:
        stream.close()  # the nodes after the packing (the model's) never run
    return {}


def gold_pages(record: Any) -> list[str]:
    """The urls of the pages that answer the record (none for an unanswerable one, or a dataset without)."""
    return list(getattr(record, "gold_page_urls", None) or [])


def gold_held(record: Any, bundle: dict[str, Any]) -> tuple[int, int]:
    """(gold pages in the bundle, gold pages of the record)."""
    gold = set(gold_pages(record))
    held = {p.get("page_url") for p in bundle.get("passages", [])}
    return len(gold & held), len(gold)


def evidence_recall(records: Iterable[Any], systems: tuple[str, ...], settings: Any,
                    groups: Callable[[Any], list[str]] = lambda r: [],
                    on_record: Callable[[], None] | None = None) -> dict[str, Any]:
    """Per system, for all answerable records and for each group ``groups`` puts a record in (its question
    type, the agent's hop plan): how many had all of their gold pages packed, some, or none, and the
    context's mean passages and tokens."""
    counts: dict[str, dict[str, Counter]] = {s: defaultdict(Counter) for s in systems}
    for record in records:
        if not gold_pages(record):
            continue
        for system in systems:
            bundle = packed_evidence(system, record, settings)
            held, gold = gold_held(record, bundle)
            for key in ["all", *groups(record)]:
                c = counts[system][key]
                c["records"] += 1
                c["all_gold" if held == gold else "some_gold" if held else "no_gold"] += 1
                c["context_tokens"] += int(bundle.get("context_tokens") or 0)
                c["passages"] += len(bundle.get("passages", []))
        if on_record is not None:
            on_record()
    return {s: {k: {**dict(c), "all_gold_rate": round(c["all_gold"] / c["records"], 4),
                    "context_tokens_mean": round(c["context_tokens"] / c["records"], 1),
                    "passages_mean": round(c["passages"] / c["records"], 2)}
                for k, c in by.items()} for s, by in counts.items()}
