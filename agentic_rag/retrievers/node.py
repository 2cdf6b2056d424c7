"""Graph nodes: fan out one Retriever-Worker per selected anchor with ``Send``, and the worker itself."""

from __future__ import annotations

from typing import Any

from langchain_core.runnables import RunnableConfig
from langgraph.types import Send

from agentic_rag.anchors.predictor import Anchor
from agentic_rag.configuration import Settings
from agentic_rag.retrievers.source import resolve_index
from agentic_rag.retrievers.worker import explore
from agentic_rag.state import RAGState, WorkerState
from agentic_rag.timing import part
from agentic_rag.utils import timed

WORKER = "worker"


def dispatch_workers(state: RAGState, config: RunnableConfig) -> list[Send] | str:
    """One worker per selected anchor; a question without anchors gets one worker on the question itself.
    An out-of-domain or too long question is not searched at all: BAUG refuses it."""
    if state.get("ood") or state.get("too_long"):
        return "baug"
    settings = Settings.from_runnable_config(config)
    anchors = state.get("anchors") or [None]
    base = {k: state[k] for k in ("question", "record", "index_dir") if k in state}
    payload = {
        **base,
        "round": state.get("round", 1),
        "held_ids": list(state.get("held_ids", [])),
        "extra_terms": list(state.get("extra_terms", [])),
        "deadline_at": state.get("started_at", 0.0) + settings.WALL_TIME_S,
    }
    return [Send(WORKER, {**payload, "anchor": anchor}) for anchor in anchors[: settings.MAX_WORKERS]]


@timed("worker")
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
        )
    return {"paths": [path]}
