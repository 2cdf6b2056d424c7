"""What the one-page families share (SubjQA, QuAIL, PubMedQA): each question comes with the one text that
answers it or not (a review, a story, an abstract) as its only page, a dev/test half by a hash of the
question's own id (``hotpotqa.split_of``), and a sample that is about half unanswerable where the family
has unanswerable questions."""

from __future__ import annotations

import random
from typing import Any, Callable, Sequence

from pydantic import ValidationError

from agentic_rag.datasets.crag import IDK, CragRecord, SearchResult
from agentic_rag.datasets.prepare.common import BadLines, error_text, sample_sorted
from agentic_rag.datasets.prepare.hotpotqa import SPLITS, Split, in_split

__all__ = ["SPLITS", "Split", "in_split", "check_split", "sample_half_unanswerable", "one_page_record", "build"]


def check_split(split: str) -> None:
    if split not in SPLITS:
        raise ValueError(f"split must be one of {', '.join(SPLITS)}, not {split!r}")


def sample_half_unanswerable(unanswerable: Sequence[bool], n: int | None, rng: random.Random) -> list[int]:
    """Indices of ``n`` rows in input order, about half of them unanswerable when both kinds exist (as
    ``prepare_squad2`` samples); all rows without ``n``."""
    if n is None or n >= len(unanswerable):
        return list(range(len(unanswerable)))
    un = [i for i, u in enumerate(unanswerable) if u]
    an = [i for i, u in enumerate(unanswerable) if not u]
    if not un or not an:
        return sample_sorted(range(len(unanswerable)), n, rng)
    n_un = min((n + 1) // 2, len(un))
    n_an = min(n - n_un, len(an))
    n_un = min(n - n_an, len(un))
    return sorted(rng.sample(un, n_un) + rng.sample(an, n_an))


def one_page_record(
    source: str, qid: str, question: str, answer: str, *, unanswerable: bool, page_name: str, page_url: str,
    text: str, domain: str, question_type: str, alternatives: Sequence[str] = (), **extra: Any,
) -> CragRecord:
    """A question with its one page; gold "i don't know" and no gold page when it is unanswerable."""
    page = SearchResult(page_name=page_name, page_url=page_url, page_snippet=text[:200], page_result=text)
    return CragRecord(
        interaction_id=f"{source}-{qid}",
        query=question,
        answer=IDK if unanswerable else answer,
        alternative_answers=[] if unanswerable else list(alternatives),
        domain=domain,
        question_type=question_type,
        static_or_dynamic="static",
        search_results=[page],
        source=source,
        source_id=qid,
        gold_page_urls=[] if unanswerable else [page_url],
        **extra,
    )


def build(rows: Sequence[dict[str, Any]], chosen: Sequence[int], bad: BadLines,
          make: Callable[[dict[str, Any]], CragRecord]) -> list[CragRecord]:
    """The chosen rows' records; a row whose record does not validate goes to ``bad`` by its ``line``."""
    records: list[CragRecord] = []
    for i in chosen:
        try:
            records.append(make(rows[i]))
        except ValidationError as exc:
            bad.withdraw(rows[i]["line"], error_text(exc))
    return records
