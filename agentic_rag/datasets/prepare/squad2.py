"""SQuAD 2.0 in CRAG's format: each question with its own paragraph and other paragraphs of its
article as pages; an unanswerable question's gold is "i don't know"."""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any
from urllib.parse import quote

from pydantic import ValidationError

from agentic_rag.datasets.crag import (
    IDK,
    CragRecord,
    DataError,
    ReadReport,
    SearchResult,
    answer_to_str,
    resolve_dataset,
)
from agentic_rag.datasets.prepare.common import (
    BadLines,
    OnBad,
    Stats,
    check_n,
    distinct,
    error_text,
    iter_json_objects,
    question_rng,
    require_list,
    require_text,
    write_converted,
)


def prepare_squad2(
    input: str | Path,
    out_path: str | Path,
    n: int | None = None,
    seed: int = 0,
    other_paragraphs: int = 4,
    on_bad: OnBad = "skip",
    report: ReadReport | None = None,
    progress: bool | None = None,
) -> tuple[Path, Stats]:
    """SQuAD 2.0 questions (``{id, title, context, question, answers[], is_impossible}`` lines) as CRAG records.

    Each question's pages are its own paragraph plus up to ``other_paragraphs`` other paragraphs of the same
    article, in a per-question shuffled order. Unanswerable questions get the gold answer "i don't know".
    With ``n``, about half of the sample is unanswerable when both kinds exist.
    """
    check_n(n)
    if other_paragraphs < 0:
        raise ValueError(f"other_paragraphs must be >= 0, not {other_paragraphs}")
    src = resolve_dataset(input)
    bad = BadLines(src, on_bad, report)

    paragraphs: dict[str, list[str]] = {}  # title -> paragraphs in first-seen order
    paragraph_index: dict[tuple[str, str], int] = {}
    questions: list[dict[str, Any]] = []
    for lineno, raw in iter_json_objects(src, bad, "SQuAD 2.0", progress):
        try:
            question = require_text(raw, "question")
            context = require_text(raw, "context")
            title = str(raw.get("title") or "untitled").strip() or "untitled"
            qid = answer_to_str(raw.get("id")) or f"line{lineno}"
            answers = distinct(require_list(raw, "answers"))
            impossible = raw.get("is_impossible")
            impossible = (not answers) if impossible is None else bool(impossible)
            if not impossible and not answers:
                raise DataError("answerable question (is_impossible false) has no answers")
        except DataError as exc:
            bad(lineno, str(exc))
            continue
        bad.good()
        key = (title, context)
        if key not in paragraph_index:
            paragraph_index[key] = len(paragraphs.setdefault(title, []))
            paragraphs[title].append(context)
        questions.append(
            {"line": lineno, "id": qid, "title": title, "question": question, "context": context,
             "answers": answers, "impossible": impossible}
        )

    rng = random.Random(seed)
    unanswerable = [i for i, q in enumerate(questions) if q["impossible"]]
    answerable = [i for i, q in enumerate(questions) if not q["impossible"]]
    if n is None or n >= len(questions):
        chosen = list(range(len(questions)))
    elif unanswerable and answerable:
        n_un = min((n + 1) // 2, len(unanswerable))
        n_an = min(n - n_un, len(answerable))
        n_un = min(n - n_an, len(unanswerable))
        chosen = sorted(rng.sample(unanswerable, n_un) + rng.sample(answerable, n_an))
    else:
        chosen = sorted(rng.sample(range(len(questions)), n))

    def url(title: str, idx: int) -> str:
        return f"squad2://{quote(title, safe='')}/{idx}"

    def page(title: str, idx: int) -> SearchResult:
        text = paragraphs[title][idx]
        return SearchResult(
            page_name=f"{title.replace('_', ' ')} (paragraph {idx})",
            page_url=url(title, idx),
            page_snippet=text[:200],
            page_result=text,
        )

    records: list[CragRecord] = []
    for i in chosen:
        q = questions[i]
        title, own = q["title"], paragraph_index[(q["title"], q["context"])]
        r = question_rng(seed, "squad2", q["id"])
        others = [j for j in range(len(paragraphs[title])) if j != own]
        idxs = [own, *r.sample(others, min(other_paragraphs, len(others)))]
        r.shuffle(idxs)
        try:
            records.append(
                CragRecord(
                    interaction_id=f"squad2-{q['id']}",
                    query=q["question"],
                    answer=IDK if q["impossible"] else q["answers"][0],
                    alternative_answers=[] if q["impossible"] else q["answers"][1:],
                    domain="squad2",
                    question_type="unanswerable" if q["impossible"] else "simple",
                    static_or_dynamic="static",
                    search_results=[page(title, j) for j in idxs],
                    source="squad2",
                    source_id=q["id"],
                    gold_page_urls=[] if q["impossible"] else [url(title, own)],
                )
            )
        except ValidationError as exc:
            bad.withdraw(q["line"], error_text(exc))

    return write_converted(records, out_path, src, len(questions), bad, n, seed,
                            articles=len(paragraphs), paragraphs=len(paragraph_index))
