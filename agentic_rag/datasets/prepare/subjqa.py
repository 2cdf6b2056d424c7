"""SubjQA in CRAG's format: a (mostly subjective) question about one product, hotel or restaurant review,
with that review as its only page; the gold is the annotated span, or "i don't know" where the annotator
found none."""

from __future__ import annotations

import re
from collections import Counter
from pathlib import Path
from typing import Any
from urllib.parse import quote

from agentic_rag.datasets.crag import DataError, ReadReport, resolve_dataset
from agentic_rag.datasets.prepare.common import (
    BadLines,
    OnBad,
    Stats,
    check_n,
    distinct,
    iter_json_objects,
    question_rng,
    require_text,
    sha1,
    write_converted,
)
from agentic_rag.datasets.prepare.onepage import Split, build, check_split, in_split, one_page_record, sample_half_unanswerable

NOT_FOUND = "ANSWERNOTFOUND"
_INDICES = re.compile(r"^\s*\(\s*(\d+)\s*,\s*(\d+)\s*\)\s*$")


def review_text(raw: dict[str, Any]) -> str:
    """The review without the trailing `` ANSWERNOTFOUND`` every SubjQA review carries (the pointer target
    of span models): nothing of the text before it moves, so the annotated indices still point into it."""
    review = require_text(raw, "review")
    return review.removesuffix(NOT_FOUND).rstrip() if review.endswith(NOT_FOUND) else review


def answer_span(raw: dict[str, Any], review: str) -> tuple[str | None, bool]:
    """(the annotated span, whether it ran into the stripped token), or (None, False) for no span.

    The span is cut from the review by ``human_ans_indices``: they count characters of the review as
    distributed (an unanswerable row's point at its `` ANSWERNOTFOUND``), which the stripped review keeps up
    to the token, so the cut is clipped there (a few spans run over it). ``human_ans_spans`` is not used
    as the answer: in some rows it is tokenised (``was n't``) or leaves words out of the range."""
    spans = raw.get("human_ans_spans")
    if not isinstance(spans, str) or not spans.strip():
        raise DataError("human_ans_spans is missing or empty")
    if spans.strip() == NOT_FOUND:
        return None, False
    match = _INDICES.match(str(raw.get("human_ans_indices") or ""))
    if not match:
        raise DataError("human_ans_indices is not (start, end)")
    start, end = int(match[1]), int(match[2])
    span = review[start:end].strip()
    if not span:
        raise DataError(f"human_ans_indices ({start}, {end}) cut no text from the review")
    return span, end > len(review)


def prepare_subjqa(
    input: str | Path,
    out_path: str | Path,
    split: Split = "all",
    n: int | None = None,
    seed: int = 0,
    on_bad: OnBad = "skip",
    report: ReadReport | None = None,
    progress: bool | None = None,
) -> tuple[Path, Stats]:
    """SubjQA rows (its CSV columns as JSON lines: ``question, review, human_ans_spans, human_ans_indices,
    domain, q_review_id, ...``) as CRAG records, one per (question, review) pair.

    The review, without its trailing `` ANSWERNOTFOUND``, is the one page (``subjqa://<domain>/<review_id>``);
    the gold is the span ``human_ans_indices`` cuts from it (``answer_span``), "i don't know" when
    ``human_ans_spans`` is ``ANSWERNOTFOUND``. ``domain`` is SubjQA's (books, electronics, grocery, movies,
    restaurants, tripadvisor); ``question_type`` is ``simple`` or ``unanswerable``; ``subjective`` is the
    question's own label.

    A pair annotated more than once is one record: when every annotator agrees on answerability it is
    kept, the first span the answer and the others' distinct spans alternatives; when they disagree (one
    found a span, another found none) the pair is dropped, as its gold is contested (``repeated_pairs``,
    ``disagreeing_dropped`` in the stats). ``split`` keeps the dev or test half by a hash of the pair's id
    (``q_review_id``); ``n`` samples that half, about half unanswerable."""
    check_n(n)
    check_split(split)
    src = resolve_dataset(input)
    bad = BadLines(src, on_bad, report)

    pairs: dict[tuple[str, str], dict[str, Any]] = {}
    read = clipped = 0
    for lineno, raw in iter_json_objects(src, bad, "SubjQA", progress):
        read += 1
        try:
            question = require_text(raw, "question")
            review = review_text(raw)
            span, over = answer_span(raw, review)
        except DataError as exc:
            bad(lineno, str(exc))
            continue
        bad.good()
        clipped += over
        pair = pairs.setdefault((question, review), {
            "line": lineno, "id": str(raw.get("q_review_id") or sha1(f"{question}\n{review}")[:32]),
            "question": question, "review": review, "domain": str(raw.get("domain") or "subjqa").strip(),
            "review_id": str(raw.get("review_id") or sha1(review)[:32]), "item": str(raw.get("item_id") or ""),
            "subjective": str(raw.get("is_ques_subjective")).lower() == "true", "spans": [], "annotators": 0})
        pair["annotators"] += 1
        pair["spans"].append(span)

    repeated = [p for p in pairs.values() if p["annotators"] > 1]
    disagreeing = [p for p in repeated if len({s is None for s in p["spans"]}) > 1]
    rows = [p for p in pairs.values() if len({s is None for s in p["spans"]}) == 1 and in_split(p["id"], split)]
    chosen = sample_half_unanswerable([p["spans"][0] is None for p in rows], n, question_rng(seed, "subjqa", "sample"))

    def make(p: dict[str, Any]):
        spans = distinct(p["spans"])
        url = f"subjqa://{quote(p['domain'], safe='')}/{quote(p['review_id'], safe='')}"
        return one_page_record(
            "subjqa", p["id"], p["question"], spans[0] if spans else "", unanswerable=not spans,
            alternatives=spans[1:], page_name=f"{p['domain']} review {p['item'] or p['review_id']}".strip(),
            page_url=url, text=p["review"], domain=p["domain"],
            question_type="unanswerable" if not spans else "simple", subjective=p["subjective"],
            annotators=p["annotators"])

    records = build(rows, chosen, bad, make)
    return write_converted(records, out_path, src, read, bad, n, seed, split=split, pairs=len(pairs),
                           repeated_pairs=len(repeated), disagreeing_dropped=len(disagreeing),
                           spans_clipped=clipped, domains=dict(sorted(Counter(r.domain for r in records).items())))
