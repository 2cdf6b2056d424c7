"""HotpotQA (distractor setting) in CRAG's format: each question with its ten paragraphs as pages, and an
unanswerable twin with one supporting paragraph removed (gold "i don't know").

Multi-hop questions are where a single-passage signal stops transferring: a bridge answer joins two
paragraphs, so removing either one leaves pages that are on topic but cannot answer. That twin is the
usual "insufficient context" construction, and it keeps the answerable and unanswerable rows of a
question in the same split, so a split by question never leaks one half into the other. The same questions
can be laid out in other ways too (one passage of the supporting sentences, HTML pages, search snippets, one
long page: :mod:`agentic_rag.datasets.prepare.layouts`).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Iterator, Literal

from pydantic import ValidationError

from agentic_rag.datasets.crag import IDK, CragRecord, DataError, ReadReport, resolve_dataset
from agentic_rag.datasets.prepare.common import (
    BadLines,
    OnBad,
    Stats,
    check_n,
    error_text,
    iter_json_objects,
    question_rng,
    require_text,
    sample_sorted,
    sha1,
    write_converted,
)
from agentic_rag.datasets.prepare.layouts import (
    DEFAULT_LAYOUT,
    check_layouts,
    layout_pages,
    per_paragraph_support,
    sentence_ids,
    support_spans,
    with_layout,
)
from agentic_rag.telemetry import parse_json

Split = Literal["dev", "test", "all"]
SPLITS = ("dev", "test", "all")
VARIANTS = ("answerable", "unanswerable")


def split_of(question_id: str) -> str:
    """dev or test, from the question's id alone: stable whichever other questions the file holds, and the
    same for both variants of a question."""
    return "dev" if int(question_id[:8], 16) % 2 == 0 else "test"


def question_id(raw: dict[str, Any], question: str) -> str:
    """A question's id: its own (``_id``), or one made from its text (the shared first-100 file has none)."""
    return str(raw.get("_id") or raw.get("id") or sha1(question)[:16])


def in_split(qid: str, split: str) -> bool:
    return split == "all" or split_of(sha1(qid)) == split


def paragraphs_of(raw: dict[str, Any]) -> list[tuple[str, list[str]]]:
    """(title, sentences) per paragraph, from either layout: the original ``[[title, [sentences]], ...]``
    or the column layout ``{title: [...], sentences: [[...], ...]}``."""
    context = raw.get("context")
    if isinstance(context, dict):
        titles, sentences = context.get("title"), context.get("sentences")
        if not isinstance(titles, list) or not isinstance(sentences, list) or len(titles) != len(sentences):
            raise DataError("context.title and context.sentences are not lists of one length")
        pairs = list(zip(titles, sentences))
    elif isinstance(context, list):
        pairs = [tuple(p) if isinstance(p, (list, tuple)) and len(p) == 2 else (None, None) for p in context]
    else:
        raise DataError("context is missing")
    out = []
    for title, sents in pairs:
        if not isinstance(title, str) or not isinstance(sents, list) or not all(isinstance(s, str) for s in sents):
            raise DataError("a context paragraph is not (title, [sentences])")
        out.append((title.strip(), sents))
    if not out:
        raise DataError("context has no paragraphs")
    return out


def supporting_titles(raw: dict[str, Any]) -> list[str]:
    facts = raw.get("supporting_facts")
    if isinstance(facts, dict):
        titles = facts.get("title")
    elif isinstance(facts, list):
        titles = [f[0] for f in facts if isinstance(f, (list, tuple)) and f]
    else:
        titles = None
    if not isinstance(titles, list) or not titles or not all(isinstance(t, str) for t in titles):
        raise DataError("supporting_facts names no paragraph")
    return list(dict.fromkeys(t.strip() for t in titles))


def _objects(src: Path, bad: BadLines, progress: bool | None) -> Iterator[tuple[int, dict[str, Any]]]:
    """The distribution is one JSON array; JSON lines are read too. Array items are numbered from 1."""
    with src.open("rb") as fh:
        head = fh.read(64).lstrip()
    if not head.startswith(b"["):
        yield from iter_json_objects(src, bad, "HotpotQA", progress)
        return
    try:
        items = parse_json(src.read_text(encoding="utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise DataError(f"{src} is not a JSON array of questions ({exc})") from None
    for i, item in enumerate(items, start=1):
        if isinstance(item, dict):
            yield i, item
        else:
            bad(i, "item is not a JSON object")


def prepare_hotpotqa(
    input: str | Path,
    out_path: str | Path,
    split: Split = "all",
    variants: tuple[str, ...] = VARIANTS,
    n: int | None = None,
    seed: int = 0,
    on_bad: OnBad = "skip",
    report: ReadReport | None = None,
    progress: bool | None = None,
    each_removed: bool = False,
    layouts: tuple[str, ...] = (DEFAULT_LAYOUT,),
) -> tuple[Path, Stats]:
    """HotpotQA questions (distractor setting) as CRAG records, two per question: ``answerable`` (all ten
    paragraphs) and ``unanswerable`` (one supporting paragraph removed, chosen per question; gold "i don't
    know"). ``split`` keeps the dev or test half, split by question (``split_of``); ``n`` samples questions,
    not records, so both variants of a question stay together. ``each_removed`` adds a twin for every other
    supporting paragraph too (``-unanswerable-K``, K its place among them): the probe's training rows
    see each hop missing, not only the one drawn. ``layouts`` lays each question's evidence out in those
    ways (``layouts.LAYOUTS``), a question's records of every layout together: the default ``distractors``
    is the ten plain pages; another's records carry it in a ``layout`` field and as an id suffix
    (``-answerable@snippets``), their ``gold_page_urls`` the pages that hold the support."""
    check_n(n)
    check_layouts(layouts)
    if split not in SPLITS:
        raise ValueError(f"split must be one of {', '.join(SPLITS)}, not {split!r}")
    unknown = [v for v in variants if v not in VARIANTS]
    if unknown or not variants:
        raise ValueError(f"variants must be among {', '.join(VARIANTS)}, not {list(variants)!r}")
    src = resolve_dataset(input)
    bad = BadLines(src, on_bad, report)

    questions: list[dict[str, Any]] = []
    read = 0
    for lineno, raw in _objects(src, bad, progress):
        read += 1
        try:
            question = require_text(raw, "question")
            answer = require_text(raw, "answer")
            paragraphs = paragraphs_of(raw)
            support = supporting_titles(raw)
            titles = [t for t, _ in paragraphs]
            if not all(t in titles for t in support):
                raise DataError("a supporting paragraph is not in the context")
        except DataError as exc:
            bad(lineno, str(exc))
            continue
        bad.good()
        qid = question_id(raw, question)
        if not in_split(qid, split):
            continue
        ids = sentence_ids(raw)
        questions.append({"line": lineno, "id": qid, "question": question, "answer": answer,
                          "type": str(raw.get("type") or "bridge"), "level": str(raw.get("level") or ""),
                          "paragraphs": paragraphs, "support": support, "spans": support_spans(paragraphs, support, ids),
                          "per_paragraph": per_paragraph_support(paragraphs, support, ids)})

    chosen = sample_sorted(range(len(questions)), n, question_rng(seed, "hotpotqa", "sample"))

    records: list[CragRecord] = []
    for i in chosen:
        q = questions[i]
        r = question_rng(seed, "hotpotqa", q["id"])
        drawn = r.choice(q["support"])
        twins = [(k, t) for k, t in enumerate(q["support"]) if each_removed or t == drawn]
        versions = [(variant, None, "") for variant in variants if variant == "answerable"] + [
            ("unanswerable", t, "" if t == drawn else f"-{k}") for k, t in twins if "unanswerable" in variants]
        built: list[CragRecord] = []
        try:
            for layout in layouts:
                tag = {} if layout == DEFAULT_LAYOUT else {"layout": layout}
                for variant, removed, suffix in versions:
                    pages, gold = layout_pages(layout, q["id"], q["paragraphs"], q["support"], q["spans"], removed)
                    unanswerable = variant == "unanswerable"
                    built.append(CragRecord(
                        interaction_id=with_layout(f"hotpotqa-{q['id']}-{variant}{suffix}", layout),
                        query=q["question"],
                        answer=IDK if unanswerable else q["answer"],
                        alternative_answers=[],
                        domain="hotpotqa",
                        question_type=q["type"],
                        static_or_dynamic="static",
                        search_results=pages,
                        source="hotpotqa",
                        source_id=q["id"],
                        variant=variant,
                        removed_paragraph=removed if unanswerable else None,
                        gold_page_urls=gold,
                        **tag,
                    ))
        except ValidationError as exc:
            bad.withdraw(q["line"], error_text(exc))
            continue
        records += built
    return write_converted(records, out_path, src, read, bad, n, seed, split=split, questions=len(chosen),
                           bridge=sum(questions[i]["type"] == "bridge" for i in chosen),
                           comparison=sum(questions[i]["type"] == "comparison" for i in chosen), layouts=list(layouts),
                           per_paragraph_support=sum(questions[i]["per_paragraph"] for i in chosen))
