"""Graph node: apply the ambiguity policy to the Supervisor's bundle (no LLM)."""

from __future__ import annotations

from typing import Any

from langchain_core.runnables import RunnableConfig

from agentic_rag.anchors.matching import Anchor
from agentic_rag.configuration import Settings
from agentic_rag.nodes import Node, timed
from agentic_rag.state import RAGState
from agentic_rag.supervisor.ambiguity import cluster, options_of, resolve
from agentic_rag.workers.source import resolve_index


def _restrict(bundle: dict[str, Any], passages: list[dict[str, Any]]) -> dict[str, Any]:
    """The bundle cut to one cluster, renumbered so citations stay [1..n] (already under budget)."""
    keep = {p["chunk_id"] for p in passages}
    kept = [{**p, "n": i} for i, p in enumerate((p for p in bundle["passages"] if p["chunk_id"] in keep), start=1)]
    return {**bundle, "passages": kept}


@timed(Node.DISAMBIGUATE)
def disambiguate_node(state: RAGState, config: RunnableConfig) -> dict[str, Any]:
    settings = Settings.from_runnable_config(config)
    bundle = state.get("bundle") or {}
    selected = state.get("selected_option")
    if not bundle.get("passages") or not (settings.agent.AMBIGUITY_ENABLED or selected):
        return {}
    index = resolve_index(state, settings)
    vectors = {p["chunk_id"]: index.vector(p["chunk_id"]) for p in bundle["passages"]}
    clusters = cluster(bundle["passages"], vectors, settings.agent.AMBIGUITY_MERGE_SIM)
    options = options_of(clusters, settings.agent.MAX_OPTIONS)
    if selected:
        chosen = next((c for c in clusters if c["id"] == selected), None)
        if chosen is None:
            return {"ambiguity": {"status": "refuse", "rule": "invalid_selection", "selected": selected, "options": options}}
        return {"bundle": _restrict(bundle, chosen["passages"]), "ambiguity": {"status": "ok", "rule": "selected", "selected": selected}}
    anchors = [Anchor(**a) for a in state.get("anchors", [])]
    qv = index.embedder.embed_each([state["question"]])[0]
    status, chosen, rule = resolve(state["question"], anchors, clusters, qv, vectors, settings)
    if status == "ambiguous":
        return {"ambiguity": {"status": "ambiguous", "rule": rule, "options": options}}
    update: dict[str, Any] = {"ambiguity": {"status": "ok", "rule": rule, "clusters": len(clusters)}}
    if chosen is not None and len(clusters) > 1:
        update["bundle"] = _restrict(bundle, chosen["passages"])
    return update
