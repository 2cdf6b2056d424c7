"""Ambiguity policy: ok / refuse / ambiguous, decided before the LLM sees mixed evidence.

(An out-of-domain question never gets this far: anchors/inputs.py refuses it before retrieval.)

1. Evidence is grouped by a tag signature from page metadata: the page's host (web pages), its folder
   (local files) or, failing both, the page itself; groups whose centroid embeddings are closer than
   ``AMBIGUITY_MERGE_SIM`` are one topic and merge, so five sites about one film stay one cluster.
2. With two or more clusters left, resolve in order: single group -> ok; an overview-style question
   without an entity anchor -> ambiguous; entity anchors held by exactly one group -> that group;
   best-group score gap >= ``MIN_GROUP_GAP`` -> that group; query-to-centroid similarity gap >=
   ``MIN_GROUP_GAP`` -> that group; otherwise ambiguous with up to ``MAX_OPTIONS`` options.
3. ``selected_option`` answers from one option; an unknown id is a refusal (``invalid_selection``).
"""

from __future__ import annotations

import hashlib
import re
from typing import Any
from urllib.parse import urlparse

import numpy as np

from agentic_rag.anchors.matching import Anchor, anchor_in_text

OVERVIEW = re.compile(
    r"^\s*(?:tell me about|give (?:me )?an? (?:overview|summary)|(?:what is|what's) the (?:overall|general)|"
    r"overview of|summari[sz]e|describe)\b|\b(?:overview|overall|architecture|in general)\b",
    re.IGNORECASE,
)
ENTITY_TYPES = {"entity", "person", "org", "place", "work", "event", "award", "tournament", "category"}


def signature(passage: dict[str, Any]) -> str:
    url = passage.get("page_url") or ""
    parsed = urlparse(url)
    if parsed.scheme in ("http", "https") and parsed.netloc:
        return parsed.netloc.lower().removeprefix("www.")
    if parsed.scheme == "file":
        parts = parsed.path.rstrip("/").split("/")
        return "__folder__:" + (parts[-2] if len(parts) >= 2 else parts[-1])
    return "__page__:" + (passage.get("page_name") or passage.get("page_id") or passage["chunk_id"])


def option_id(members: list[str]) -> str:
    return "opt-" + hashlib.sha1("|".join(sorted(members)).encode()).hexdigest()[:8]


def cluster(passages: list[dict[str, Any]], vectors: dict[str, np.ndarray], merge_sim: float) -> list[dict[str, Any]]:
    groups: dict[str, list[dict[str, Any]]] = {}
    for p in passages:
        groups.setdefault(signature(p), []).append(p)
    clusters = [{"signatures": [sig], "passages": ps} for sig, ps in groups.items()]
    merged = True
    while merged and len(clusters) > 1:  # greedy agglomeration of near-identical topics
        merged = False
        cents = [_centroid(c["passages"], vectors) for c in clusters]
        best, pair = merge_sim, None
        for i in range(len(clusters)):
            for j in range(i + 1, len(clusters)):
                sim = float(cents[i] @ cents[j])
                if sim >= best:
                    best, pair = sim, (i, j)
        if pair:
            i, j = pair
            clusters[i] = {"signatures": clusters[i]["signatures"] + clusters[j]["signatures"],
                           "passages": clusters[i]["passages"] + clusters[j]["passages"]}
            del clusters[j]
            merged = True
    for c in clusters:
        c["score"] = max(p.get("utility", p.get("fused_score", 0.0)) for p in c["passages"])
        c["id"] = option_id(c["signatures"])
    return sorted(clusters, key=lambda c: -c["score"])


def _centroid(passages: list[dict[str, Any]], vectors: dict[str, np.ndarray]) -> np.ndarray:
    v = np.mean([vectors[p["chunk_id"]] for p in passages], axis=0)
    return v / (np.linalg.norm(v) or 1.0)


def resolve(
    question: str, anchors: list[Anchor], clusters: list[dict[str, Any]], query_vector: np.ndarray,
    vectors: dict[str, np.ndarray], settings,
) -> tuple[str, dict[str, Any] | None, str]:
    """(status, chosen cluster or None, the rule that decided)."""
    if len(clusters) <= 1:
        return "ok", (clusters[0] if clusters else None), "single_group"
    entities = [a for a in anchors if a.type in ENTITY_TYPES]
    if OVERVIEW.search(question) and not entities:
        return "ambiguous", None, "overview_query"
    if entities:
        hits = [sum(any(anchor_in_text(a, p["text"]) for p in c["passages"]) for a in entities) for c in clusters]
        top = max(hits)
        if top > 0 and hits.count(top) == 1:
            return "ok", clusters[hits.index(top)], "entity_match"
    if clusters[0]["score"] - clusters[1]["score"] >= settings.agent.MIN_GROUP_GAP:
        return "ok", clusters[0], "score_gap"
    sims = sorted(((float(_centroid(c["passages"], vectors) @ query_vector), i) for i, c in enumerate(clusters)), reverse=True)
    if sims[0][0] - sims[1][0] >= settings.agent.MIN_GROUP_GAP:
        return "ok", clusters[sims[0][1]], "query_similarity"
    return "ambiguous", None, "unresolved"


def options_of(clusters: list[dict[str, Any]], max_options: int) -> list[dict[str, Any]]:
    out = []
    for c in clusters[:max_options]:
        anchor = max(c["passages"], key=lambda p: p.get("utility", p.get("fused_score", 0.0)))
        sources = list(dict.fromkeys((p.get("page_name", ""), p.get("page_url", "")) for p in c["passages"]))
        out.append({
            "id": c["id"],
            "signature": ", ".join(c["signatures"]),
            "anchor_passage": {"chunk_id": anchor["chunk_id"], "page_name": anchor.get("page_name", ""),
                               "text": anchor["text"][:300]},
            "sources": [{"page_name": n, "page_url": u} for n, u in sources],
            "best_score": round(c["score"], 4),
        })
    return out
