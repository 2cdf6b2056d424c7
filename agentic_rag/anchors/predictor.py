"""Anchor-Predictor: the pieces of a question that the evidence must contain.

An anchor is a span of the question ("U.S. Open", "2017", "best animated feature", "per game",
"Q1 2024", "steve nash") that an answer's evidence has to mention for the answer to be about the
right thing. Anchors drive one retrieval worker each, the anchor boost in ranking, and the type
validators ("the cited text must contain the ceremony year and the category").

Extraction is deterministic and needs no LLM. Sources, strongest first:

1. regexes for periods and numbers (years, seasons, decades, fiscal years, quarters, months, dates,
   money, percentages, numbers with units) and the hand-made lexicon (:mod:`.lexicon`) of units,
   awards, categories, tournaments and leagues, matched case-insensitively on whole phrases; quoted
   titles ("mr. brightside") become ``work`` anchors (:mod:`.candidates`);
2. spaCy NER, on the question as written and on a title-cased copy, and the two sides of "X or Y"
   comparisons (:mod:`.ner`);
3. a fallback over noun chunks and proper-noun tokens for what NER missed (:mod:`.ner`).

A lower source never re-proposes what a higher one covers: its spans are cut around the text the
higher sources already claimed. An anchor contained in a longer one of the same kind is merged into
it. Each type has a prior score; agreement between the two NER passes raises it a little. Matching
an anchor in evidence text is :mod:`.matching`'s business, the question's kind :mod:`.kind`'s.
"""

from __future__ import annotations

import functools

from agentic_rag.anchors.candidates import Candidate, lexicon_candidates, regex_candidates
from agentic_rag.anchors.matching import NAME_TYPES, Anchor, fold_same_length, normalize_text, variant_form
from agentic_rag.anchors.ner import spacy_candidates

_SUB_YEAR = frozenset({"month", "date", "quarter"})  # "december" inside "december 25, 2023" is one anchor


def _resolve_tier0(cands: list[Candidate]) -> list[Candidate]:
    """Lexicon and regex spans: merge contained spans of the same kind; numbers yield to the rest."""
    non_num = [c for c in cands if c.type != "number"]
    nums = [c for c in cands if c.type == "number"]
    out: list[Candidate] = []
    pool = sorted(non_num, key=lambda c: (-c.length, -c.score, c.start)) + sorted(
        nums, key=lambda c: (-c.length, -c.score, c.start)
    )
    for c in pool:
        clash = False
        for a in out:
            overlap = c.start < a.end and a.start < c.end
            if not overlap:
                continue
            same_kind = (
                a.type == c.type
                or (a.type in NAME_TYPES and c.type in NAME_TYPES)
                or (a.type in _SUB_YEAR and c.type in _SUB_YEAR)
            )
            contained = a.start <= c.start and c.end <= a.end
            if c.type == "number" or (same_kind and (contained or c.type in NAME_TYPES)):
                if contained and same_kind:
                    a.score = max(a.score, c.score)
                clash = True
                break
            if a.type in NAME_TYPES and c.type in NAME_TYPES:
                clash = True
                break
        if not clash:
            out.append(c)
    return out


def _dedupe_texts(anchors: list[Anchor]) -> list[Anchor]:
    """One anchor per (lower-cased text, kind), keeping the best score; a name anchor that is only a
    variant of a better one ("grammy" next to "grammy awards") goes too."""
    best: dict[tuple[str, str], Anchor] = {}
    for a in anchors:
        key = (normalize_text(a.text), "name" if a.type in NAME_TYPES else a.type)
        if key not in best or a.score > best[key].score:
            best[key] = a
    kept = [a for a in anchors if best[(normalize_text(a.text), "name" if a.type in NAME_TYPES else a.type)] is a]
    out: list[Anchor] = []
    for a in kept:  # kept is sorted by score, so a better anchor is already in ``out``
        norm = variant_form(a.text)
        if a.type in NAME_TYPES and any(b.type == a.type and norm in b.variants() for b in out):
            continue
        out.append(a)
    return out


@functools.lru_cache(maxsize=4096)
def _propose_cached(question: str) -> tuple[Anchor, ...]:
    q = question
    nq = fold_same_length(q)
    tier0 = _resolve_tier0(lexicon_candidates(nq) + regex_candidates(nq))
    cands = tier0 + spacy_candidates(q, tier0)
    anchors: list[tuple[Anchor, int]] = []
    for c in cands:
        text = q[c.start:c.end].strip()
        if not text:
            continue
        score = round(min(1.0, max(0.0, c.score)), 3)
        anchors.append((Anchor(text=text, type=c.type, score=score), c.start))
    anchors.sort(key=lambda p: (-p[0].score, p[1], p[0].text))
    return tuple(_dedupe_texts([a for a, _ in anchors]))


def propose_anchors(question: str, top_m: int = 6) -> list[Anchor]:
    """Anchors of the question ranked by score (desc, ties by position), deduplicated, at most ``top_m``."""
    if not question or not question.strip() or top_m <= 0:
        return []
    return list(_propose_cached(question)[:top_m])


def select_anchors(anchors: list[Anchor], min_score: float) -> list[Anchor]:
    """The anchors scoring at or above ``min_score``, in their given order."""
    return [a for a in anchors if a.score >= min_score]
