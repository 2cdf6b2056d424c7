"""Natural Questions (open, with the gold passage) in CRAG's format."""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any
from urllib.parse import quote

from pydantic import ValidationError

from agentic_rag.datasets.crag import CragRecord, DataError, ReadReport, SearchResult, resolve_dataset
from agentic_rag.datasets.prepare.common import (
    BadLines,
    OnBad,
    Stats,
    check_n,
    distinct,
    error_text,
    iter_json_objects,
    require_list,
    require_text,
    sample_sorted,
    sha1,
    write_converted,
)


def prepare_nq(
    input: str | Path,
    out_path: str | Path,
    n: int | None = None,
    seed: int = 0,
    on_bad: OnBad = "skip",
    report: ReadReport | None = None,
    progress: bool | None = None,
) -> tuple[Path, Stats]:
    """NQ-open lines (``{question, answers[], ctxs[{title, text, isgold?, hasanswer?}]}``) as CRAG records.

    Pages are the gold passages (``isgold``; all ``ctxs`` when none is marked). The record id is
    ``nq-<line number>`` (the file has no ids); page URLs are ``nq://<title>/<content hash>``, so one
    passage has one URL whichever question retrieved it.
    """
    check_n(n)
    src = resolve_dataset(input)
    bad = BadLines(src, on_bad, report)

    rows: list[tuple[int, str, list[str], list[dict[str, Any]]]] = []
    for lineno, raw in iter_json_objects(src, bad, "NQ-open", progress):
        try:
            question = require_text(raw, "question")
            answers = distinct(require_list(raw, "answers"))
            if not answers:
                raise DataError("answers is missing or empty")
            ctxs = [c for c in require_list(raw, "ctxs") if isinstance(c, dict) and str(c.get("text") or "").strip()]
            if any("isgold" in c for c in ctxs):
                ctxs = [c for c in ctxs if c.get("isgold")]
            if not ctxs:
                raise DataError("no gold passage in ctxs")
        except DataError as exc:
            bad(lineno, str(exc))
            continue
        bad.good()
        rows.append((lineno, question, answers, ctxs))

    chosen = sample_sorted(range(len(rows)), n, random.Random(seed))
    records: list[CragRecord] = []
    passages = with_answer = 0
    for i in chosen:
        lineno, question, answers, ctxs = rows[i]
        pages = []
        for c in ctxs:
            title = str(c.get("title") or "").strip()
            text = str(c["text"]).strip()
            pages.append(
                SearchResult(
                    page_name=title,
                    page_url=f"nq://{quote(title, safe='')}/{sha1(text)[:12]}",
                    page_snippet=text[:200],
                    page_result=text,
                )
            )
            passages += 1
            with_answer += any(a.lower() in text.lower() for a in answers)
        try:
            records.append(
                CragRecord(
                    interaction_id=f"nq-{lineno}",
                    query=question,
                    answer=answers[0],
                    alternative_answers=answers[1:],
                    domain="nq",
                    question_type="simple",
                    static_or_dynamic="static",
                    search_results=pages,
                    source="nq",
                    source_id=str(lineno),
                    gold_page_urls=[p.page_url for p in pages],
                )
            )
        except ValidationError as exc:
            bad.withdraw(lineno, error_text(exc))

    return write_converted(records, out_path, src, len(rows), bad, n, seed,
                            passages=passages, passages_with_answer_text=with_answer)
