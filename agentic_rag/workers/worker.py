"""One Retriever-Worker: explore the corpus for a single anchor and report a scored path.

Hop 0 is a hybrid search whose query repeats the anchor so both BM25 and the embedding lean on it.
Pruning is two-stage: *rough* (lexical: the passage holds the anchor, or enough of the question's
content words) then *fine* (semantic: cosine of passage to question >= ``FINE_MIN_SIM``). Hop 1
follows the kept passages' neighbouring sections and in-corpus hyperlinks and prunes again. The path
reports how much of it is new against evidence already held, and why it stopped.

For a bridge question (anchors/hops.py) hop 1 also follows the names the path's best passages give:
the pages of the index whose title they name (``HybridIndex.named_pages``, the in-text twin of its
links). Plain-text pages carry no hyperlinks, and the page a bridge question needs second (the film's
star, the song's writer) is about an entity the question never names: neither the anchor nor the
question's words are on it, so search ranks it low and the rough prune drops it. The mention is its
link to the question, so it passes both prunes on that and takes a place of its own in the path
(``MENTION_PASSAGES``), beside the best-scored passages.
"""

from __future__ import annotations

import time
from typing import Any

import numpy as np

from agentic_rag.anchors.matching import Anchor, anchor_in_text
from agentic_rag.configuration import Settings
from agentic_rag.retrieval.hybrid import HybridIndex, Passage
from agentic_rag.text import tokenize
from agentic_rag.workers.source import retrieve

HOP_DECAY = 0.5  # a hop-1 passage inherits this share of its parent's fused score (fraction)
WORKER_PASSAGES = 4  # passages a worker keeps after pruning (passages); hop 1 starts from these
# Rough prune: the share of the question's content words (fraction, 0-1) a passage must hold when it
# lacks the anchor; low on purpose, the fine prune (FINE_MIN_SIM, a setting) does the real cut.
ROUGH_MIN_OVERLAP = 0.2
MENTION_PASSAGES = 2  # a bridge question's path keeps up to this many pages its passages name (passages)


def path_order(passage: dict[str, Any]) -> tuple[float, str]:
    """Best path score first, ties by chunk id: one order for what a path keeps and for what the
    Supervisor's fallback takes from what it turned down, so "best" means the same in both."""
    return -passage["path_score"], passage["chunk_id"]


def content_overlap(question_tokens: set[str], text: str) -> float:
    if not question_tokens:
        return 0.0
    return len(question_tokens & set(tokenize(text))) / len(question_tokens)


def _named_chunks(index: HybridIndex, parents: list[dict[str, Any]]) -> dict[str, float]:
    """The first chunk of each page the ``parents`` name and do not already hold, with the fused score of
    the first parent naming it."""
    held = {p["page_id"] for p in parents}
    out: dict[str, float] = {}
    for parent in parents:
        for page in index.named_pages(parent["text"], parent["page_id"]):
            chunk = index.chunk(f"{page}:0")
            if page not in held and chunk is not None:
                out.setdefault(chunk.chunk_id, parent["fused_score"])
    return out


def worker_query(question: str, anchor: Anchor | None) -> str:
    if anchor is None or anchor.text.lower() in {"", question.lower()}:
        return question
    return f"{question} {anchor.text}"


def explore(
    anchor: Anchor | None,
    question: str,
    index: HybridIndex,
    settings: Settings,
    held_ids: set[str] | frozenset[str] = frozenset(),
    deadline: float | None = None,
    round_no: int = 1,
    extra_terms: list[str] | None = None,
    hop_query: str = "",
    follow_mentions: bool = False,
) -> dict[str, Any]:
    """``follow_mentions``: hop 1 also reaches the pages the best kept passages name (a bridge question)."""
    t0 = time.perf_counter()
    query = hop_query or worker_query(question, anchor)
    if extra_terms and not hop_query:
        query = f"{query} {' '.join(extra_terms)}"
    # a hop worker's passages answer its own query (the bridge entity's page), not the whole question
    asked = hop_query or question
    qv = index.embedder.embed_each([asked])[0]
    q_tokens = set(tokenize(asked))
    candidates = retrieve(index, query, settings, k=max(WORKER_PASSAGES * 3, settings.retrieval.RETRIEVAL_K))
    kept, rejected = _prune(candidates, anchor, q_tokens, qv, index, settings, hop=0)
    pruned = len(rejected)
    terminated_by = "complete"
    if kept and (deadline is None or time.time() < deadline):
        parents = kept[:WORKER_PASSAGES]
        # the pages the path's best passages name: found by search already (kept, however low it ranks them,
        # or turned down by the prune) or reached below, each keeps a place on the mention
        named = _named_chunks(index, sorted(kept, key=path_order)[:WORKER_PASSAGES]) if follow_mentions else {}
        kept = [{**p, "mentioned": True} if p["chunk_id"] in named else p for p in kept]
        kept += [{**{k: v for k, v in r.items() if k != "pruned_by"}, "mentioned": True}
                 for r in rejected if r["chunk_id"] in named]
        pruned -= sum(r["chunk_id"] in named for r in rejected)
        rejected = [r for r in rejected if r["chunk_id"] not in named]
        seen = {p["chunk_id"] for p in kept} | {c.chunk_id for c in candidates}
        reached: list[tuple] = []
        for parent in parents:
            for chunk in index.neighbours(parent["chunk_id"]) + index.linked_chunks(parent["page_id"]):
                if chunk.chunk_id in seen:
                    continue
                seen.add(chunk.chunk_id)
                reached.append((chunk, parent["fused_score"] * HOP_DECAY))
        reached += [(index.chunk(c), score * HOP_DECAY) for c, score in named.items() if c not in seen]
        hop_passages = index.score_chunks(reached, query, qv)
        hop_kept, hop_rejected = _prune(hop_passages, anchor, q_tokens, qv, index, settings, hop=1, linked=set(named))
        kept.extend(hop_kept)
        pruned += len(hop_rejected)
    elif deadline is not None and time.time() >= deadline:
        terminated_by = "time"
    kept.sort(key=path_order)
    named_kept = [p for p in kept if p.get("mentioned")][:MENTION_PASSAGES]
    kept = [p for p in kept if not p.get("mentioned")][:WORKER_PASSAGES] + named_kept
    path_score = max((p["path_score"] for p in kept), default=0.0)
    new = [p for p in kept if p["chunk_id"] not in held_ids]
    new_hits_ratio = len(new) / len(kept) if kept else 0.0
    if not kept or path_score < settings.agent.PATH_MIN_SCORE:
        terminated_by = "low_score"
    elif held_ids and new_hits_ratio < settings.agent.NEW_HITS_EPS:
        terminated_by = "no_novelty"
    turned_down = rejected + ([{**p, "pruned_by": "path_score"} for p in kept] if terminated_by == "low_score" else [])
    return {
        "anchor": anchor.to_dict() if anchor else None,
        "round": round_no,
        "query": query,
        "passages": kept if terminated_by != "low_score" else [],
        # what pruning turned down (hop 0, plus the whole path when its score was too low), best first:
        # the Supervisor's fallback when no path kept a passage
        "pruned_best": sorted(turned_down, key=path_order)[: settings.agent.PRUNE_FALLBACK_K],
        "candidates": len(candidates),
        "pruned_count": pruned,
        "path_score": round(float(path_score), 4),
        "new_hits_ratio": round(new_hits_ratio, 4),
        "terminated_by": terminated_by,
        "latency_ms": round((time.perf_counter() - t0) * 1000.0, 2),
    }


def _prune(
    passages: list[Passage],
    anchor: Anchor | None,
    q_tokens: set[str],
    qv: np.ndarray,
    index: HybridIndex,
    settings: Settings,
    hop: int,
    linked: set[str] | frozenset[str] = frozenset(),
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """Passages kept and passages turned down, each scored the same way (``pruned_by`` says which stage).
    A ``linked`` chunk was reached because a kept passage names its page: that is its lexical evidence."""
    kept: list[dict[str, Any]] = []
    rejected: list[dict[str, Any]] = []
    for passage in passages:
        has_anchor = anchor is not None and anchor_in_text(anchor, passage.text)
        overlap = content_overlap(q_tokens, passage.text)
        sim = float(index.vector(passage.chunk_id) @ qv)
        row = passage.to_dict()
        row.update(
            page_id=passage.chunk.page_id,
            hop=hop,
            anchor_hit=has_anchor,
            question_overlap=round(overlap, 4),
            fine_sim=round(sim, 4),
            # path score blends semantic fit with the lexical evidence of the anchor (both 0-1)
            path_score=round(0.7 * max(sim, 0.0) + 0.3 * (1.0 if has_anchor else overlap), 4),
        )
        if passage.chunk.chunk_id in linked:  # named by a kept passage: its link to the question, however it scores
            kept.append({**row, "mentioned": True})
        elif not has_anchor and overlap < ROUGH_MIN_OVERLAP:
            rejected.append({**row, "pruned_by": "rough"})  # neither the anchor nor enough of the question's words
        elif sim < settings.agent.FINE_MIN_SIM:
            rejected.append({**row, "pruned_by": "fine"})  # semantically off the question
        else:
            kept.append(row)
    return kept, rejected
