"""Graph node: the Supervisor merges all paths so far into the evidence bundle."""

from __future__ import annotations

from typing import Any

from langchain_core.runnables import RunnableConfig

from agentic_rag.anchors.matching import Anchor
from agentic_rag.configuration import Settings
from agentic_rag.llm.calls import prompt_cost
from agentic_rag.llm.factory import count_tokens
from agentic_rag.nodes import Node, timed
from agentic_rag.prompts import answer_messages
from agentic_rag.state import RAGState
from agentic_rag.supervisor.orchestrator import compose, fallback_path


@timed(Node.SUPERVISE)
def supervise_node(state: RAGState, config: RunnableConfig) -> dict[str, Any]:
    settings = Settings.from_runnable_config(config)
    anchors = [Anchor(**a) for a in state.get("anchors", [])]
    paths = state.get("paths", [])
    fallback = fallback_path(paths, settings.agent.PRUNE_FALLBACK_K)
    bundle = compose(
        paths + ([fallback] if fallback else []), anchors, settings.budget.MAX_CONTEXT_TOKENS, settings.agent.ANCHOR_BONUS,
        lambda t: count_tokens(t, settings),
    )
    if fallback:
        bundle["prune_fallback"] = [p["chunk_id"] for p in fallback["passages"]]
    held = set(state.get("held_ids", []))
    round_no = state.get("round", 1)
    round_ids = {p["chunk_id"] for path in paths if path["round"] == round_no for p in path["passages"]}
    new_ids = round_ids - held
    if bundle["passages"]:
        bundle["generation_cost"] = prompt_cost(
            answer_messages(state["question"], bundle, state.get("query_time", "")), settings
        )
    return {
        "bundle": bundle,
        "held_ids": sorted(held | round_ids),
        "no_new_hits": round_no > 1 and not new_ids,
    }
