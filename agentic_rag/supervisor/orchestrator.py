"""The Supervisor: merge the workers' paths into one evidence bundle under the context budget.

Passages found by several workers are merged (their anchors united, the best scores kept). Each is
ranked by its utility: the fused retrieval score plus ``ANCHOR_BONUS`` scaled by the share of the
selected anchors it holds (the anchor boost, which keeps "faithful to the wrong anchor" passages from
winning), with the worker's path score breaking ties. The bundle records per-anchor statistics so
BAUG and the refusal message can say which anchor the evidence lacks.
"""

from __future__ import annotations

from typing import Any, Callable

from agentic_rag.anchors.matching import Anchor, anchor_in_text
from agentic_rag.supervisor.packing import pack_evidence
from agentic_rag.workers.worker import path_order


def merge_paths(paths: list[dict[str, Any]]) -> list[dict[str, Any]]:
    merged: dict[str, dict[str, Any]] = {}
    for path in paths:
        anchor_text = (path.get("anchor") or {}).get("text")
        for passage in path.get("passages", []):
            cur = merged.get(passage["chunk_id"])
            if cur is None:
                cur = {**passage, "found_by": []}
                merged[passage["chunk_id"]] = cur
            else:
                for key in ("fused_score", "path_score", "fine_sim", "vector_score", "bm25_score"):
                    cur[key] = max(cur.get(key, 0.0), passage.get(key, 0.0))
            if anchor_text and anchor_text not in cur["found_by"]:
                cur["found_by"].append(anchor_text)
    return list(merged.values())


def fallback_path(paths: list[dict[str, Any]], k: int) -> dict[str, Any] | None:
    """When pruning left every path empty: the ``k`` best passages it turned down, as one more path.

    Why: the workers' prune thresholds are fixed lexical and cosine cut-offs, while "is there evidence
    at all" is the calibrated confidence gate's question (and after it the answer layers'). A question
    whose wording misses its passage (a misspelt name, a paraphrase) then reaches the gate instead of
    being refused as having no evidence. None when some path kept a passage or nothing was turned down.
    """
    if k <= 0 or any(p.get("passages") for p in paths):
        return None
    best: dict[str, dict[str, Any]] = {}
    for path in paths:
        for passage in path.get("pruned_best", []):
            if passage["path_score"] > best.get(passage["chunk_id"], {}).get("path_score", -1.0):
                best[passage["chunk_id"]] = passage
    chosen = sorted(best.values(), key=path_order)[:k]
    if not chosen:
        return None
    return {"anchor": None, "round": max((p.get("round", 1) for p in paths), default=1), "passages": chosen,
            "terminated_by": "prune_fallback", "path_score": chosen[0]["path_score"], "new_hits_ratio": 1.0}


def rank_passages(passages: list[dict[str, Any]], anchors: list[Anchor], anchor_bonus: float) -> list[dict[str, Any]]:
    for p in passages:
        held = [a.text for a in anchors if anchor_in_text(a, p["text"])]
        coverage = len(held) / len(anchors) if anchors else 0.0
        p["anchors_held"] = held
        p["anchor_coverage"] = round(coverage, 4)
        p["utility"] = round(p.get("fused_score", 0.0) + anchor_bonus * coverage, 6)
    return sorted(passages, key=lambda p: (-p["utility"], -p.get("path_score", 0.0), p["chunk_id"]))


def compose(
    paths: list[dict[str, Any]],
    anchors: list[Anchor],
    max_context_tokens: int,
    anchor_bonus: float,
    count_tokens: Callable[[str], int],
) -> dict[str, Any]:
    ranked = rank_passages(merge_paths(paths), anchors, anchor_bonus)
    bundle = pack_evidence(ranked, max_context_tokens, count_tokens)
    for p in bundle["passages"]:
        p["utility_per_token"] = round(p["utility"] / max(1, count_tokens(p["text"])), 8)
    packed_text = "\n".join(p["text"] for p in bundle["passages"])
    bundle["anchor_stats"] = {
        a.text: {
            "type": a.type,
            "passages": sum(a.text in p.get("anchors_held", []) for p in bundle["passages"]),
            "in_bundle": anchor_in_text(a, packed_text),
        }
        for a in anchors
    }
    bundle["path_count"] = len(paths)
    return bundle
