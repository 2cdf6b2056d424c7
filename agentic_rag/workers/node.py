"""Graph node: one Retriever-Worker, sent one per selected anchor (the fan-out is graphs/agent.dispatch_workers)."""

from __future__ import annotations

from typing import Any

from langchain_core.runnables import RunnableConfig

from agentic_rag.anchors.matching import Anchor
from agentic_rag.configuration import Settings
from agentic_rag.nodes import Node, timed
from agentic_rag.state import WorkerState
from agentic_rag.timing import part
from agentic_rag.workers.source import resolve_index
from agentic_rag.workers.worker import explore


@timed(Node.WORKER)
def worker_node(state: WorkerState, config: RunnableConfig) -> dict[str, Any]:
    settings = Settings.from_runnable_config(config)
    index = resolve_index(state, settings)
    anchor = Anchor(**state["anchor"]) if state.get("anchor") else None
    with part("search"):  # the hybrid search, pruning and the hop (embedding is booked apart)
        path = explore(
            anchor,
            state["question"],
            index,
            settings,
            held_ids=frozenset(state.get("held_ids", [])),
            deadline=state.get("deadline_at"),
            round_no=state.get("round", 1),
            extra_terms=state.get("extra_terms") or None,
            hop_query=state.get("hop_query", ""),
            follow_mentions=state.get("follow_mentions", False),
        )
    return {"paths": [path]}
