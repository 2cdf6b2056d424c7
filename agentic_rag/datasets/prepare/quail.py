"""QuAIL in CRAG's format: a question on one text (fiction, news, a blog post, a user story) with that text
as its only page; the gold is the correct option's text, "i don't know" for the Unanswerable type."""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any
from urllib.parse import quote

from agentic_rag.datasets.crag import DataError, ReadReport, answer_to_str, resolve_dataset
from agentic_rag.datasets.prepare.common import (
    BadLines,
    OnBad,
    Stats,
    check_n,
    iter_json_objects,
    question_rng,
    require_list,
    require_text,
    sha1,
    write_converted,
)
from agentic_rag.datasets.prepare.onepage import Split, build, check_split, in_split, one_page_record, sample_half_unanswerable

NOT_ENOUGH = "not enough information"
UNANSWERABLE = "Unanswerable"


def correct_option(raw: dict[str, Any], question_type: str) -> str:
    """The correct option's text; "not enough information" is the gold of the Unanswerable type only, so
    a row where it is the gold of another type (or an Unanswerable row where it is not) is bad."""
    options = [answer_to_str(a) for a in require_list(raw, "answers")]
    key = answer_to_str(raw.get("correct_answer_id"))
    if not options or not key.isdigit() or int(key) >= len(options) or not options[int(key)]:
        raise DataError("correct_answer_id names no option of answers")
    gold = options[int(key)]
    if (gold.lower() == NOT_ENOUGH) != (question_type == UNANSWERABLE):
        raise DataError(f"a question of type {question_type} whose correct option is {gold!r}")
    return gold


def prepare_quail(
    input: str | Path,
    out_path: str | Path,
    split: Split = "all",
    n: int | None = None,
    seed: int = 0,
    on_bad: OnBad = "skip",
    report: ReadReport | None = None,
    progress: bool | None = None,
) -> tuple[Path, Stats]:
    """QuAIL questions (``{id, question_type, question, answers[4], correct_answer_id, metadata, domain,
    context_id, context}`` lines) as CRAG records.

    The text (``context``) is the one page (``quail://<context_id>``). For the answerable types the gold is
    the correct option's text (answered freely: the options are not in the record); for ``question_type``
    Unanswerable it is "i don't know", never the "not enough information" option. ``question_type`` and
    ``domain`` are QuAIL's. ``split`` keeps the dev or test half by a hash of the question's ``id``; ``n``
    samples that half, about half unanswerable."""
    check_n(n)
    check_split(split)
    src = resolve_dataset(input)
    bad = BadLines(src, on_bad, report)

    rows: list[dict[str, Any]] = []
    read = 0
    for lineno, raw in iter_json_objects(src, bad, "QuAIL", progress):
        read += 1
        try:
            question = require_text(raw, "question")
            context = require_text(raw, "context")
            question_type = require_text(raw, "question_type")
            gold = correct_option(raw, question_type)
        except DataError as exc:
            bad(lineno, str(exc))
            continue
        bad.good()
        qid = answer_to_str(raw.get("id")) or sha1(f"{question}\n{context}")[:16]
        if not in_split(qid, split):
            continue
        metadata = raw.get("metadata") if isinstance(raw.get("metadata"), dict) else {}
        context_id = answer_to_str(raw.get("context_id")) or sha1(context)[:16]
        rows.append({"line": lineno, "id": qid, "question": question, "context": context, "gold": gold,
                     "type": question_type, "domain": answer_to_str(raw.get("domain")) or "quail",
                     "context_id": context_id, "title": answer_to_str(metadata.get("title")) or context_id})

    chosen = sample_half_unanswerable([r["type"] == UNANSWERABLE for r in rows], n,
                                      question_rng(seed, "quail", "sample"))

    def make(r: dict[str, Any]):
        return one_page_record(
            "quail", r["id"], r["question"], r["gold"], unanswerable=r["type"] == UNANSWERABLE,
            page_name=r["title"], page_url=f"quail://{quote(r['context_id'], safe='')}", text=r["context"],
            domain=r["domain"], question_type=r["type"])

    records = build(rows, chosen, bad, make)
    return write_converted(records, out_path, src, read, bad, n, seed, split=split,
                           texts=len({rows[i]["context_id"] for i in chosen}),
                           question_types=dict(sorted(Counter(r.question_type for r in records).items())))
