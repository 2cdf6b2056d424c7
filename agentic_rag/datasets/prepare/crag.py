"""CRAG itself, filtered and sampled: a question file with each question's pages, and a corpus of
the distinct pages."""

from __future__ import annotations

import json
import random
from collections import Counter
from pathlib import Path
from typing import Any, Callable, Iterator

from agentic_rag.datasets.crag import (
    CragRecord,
    ReadReport,
    SearchResult,
    iter_records,
    resolve_dataset,
    write_records,
)
from agentic_rag.datasets.prepare.common import OnBad, Stats, check_n, check_on_bad, progress_bar, sha1

CRAG_QUESTIONS_FILE = "crag_questions.jsonl"
CRAG_CORPUS_FILE = "crag_corpus.jsonl"

_SPLIT_NAMES = {
    "train": 0,
    "validation": 0,
    "valid": 0,
    "val": 0,
    "dev": 0,
    "test": 1,
    "public_test": 1,
    "public-test": 1,
}


def normalise_split(split: str | int | None) -> int | None:
    """CRAG's split number: 0 = validation (also 'train', 'dev'), 1 = public test; ``None`` = any split."""
    if split is None:
        return None
    if isinstance(split, bool):
        raise ValueError(f"unknown CRAG split {split!r}")
    if isinstance(split, int):
        return split
    text = str(split).strip().lower()
    if text in _SPLIT_NAMES:
        return _SPLIT_NAMES[text]
    try:
        return int(text)
    except ValueError:
        pass
    names = ", ".join(sorted(_SPLIT_NAMES))
    raise ValueError(f"unknown CRAG split {split!r}: give 0, 1 or one of {names}")


def _record_split(value: Any) -> int | None:
    """A record's own ``split`` field as a number (``None`` when absent or unreadable)."""
    if value is None or value == "":
        return None
    try:
        return normalise_split(value)
    except ValueError:
        return None


def page_id(page: SearchResult) -> str:
    """Stable id of a page: its URL and a hash of its content (the same URL fetched twice may differ)."""
    return sha1(page.page_url + "\n" + sha1(page.page_result))[:16]


def prepare_crag(
    input: str | Path,
    out_dir: str | Path,
    split: str | int | None = None,
    static_only: bool = False,
    n: int | None = None,
    seed: int = 0,
    on_bad: OnBad = "skip",
    report: ReadReport | None = None,
    progress: bool | None = None,
) -> tuple[tuple[Path, Path], Stats]:
    """Filter and sample a CRAG file into ``out_dir/crag_questions.jsonl`` and ``out_dir/crag_corpus.jsonl``.

    The input is streamed (plain or ``.bz2``); with ``n`` a reservoir of ``n`` records is kept (memory is
    ``n`` records, pages included) and written in input order. Records whose ``split`` differs from
    ``split`` are left out; records without a ``split`` field are kept only when ``split`` is None.

    The questions file holds the full records (each search result gains a ``page_id``); the corpus file has
    one JSON line per distinct page (same URL and same content) across the kept records, with the ids of
    the questions that retrieved it.
    """
    check_on_bad(on_bad)
    check_n(n)
    want = normalise_split(split)
    src = resolve_dataset(input)
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    questions_path = out / CRAG_QUESTIONS_FILE
    corpus_path = out / CRAG_CORPUS_FILE
    rep = report if report is not None else ReadReport(str(src))

    splits_seen: Counter[str] = Counter()
    counts = {"after_split": 0, "after_static": 0}

    def matching() -> Iterator[CragRecord]:
        for rec in progress_bar(iter_records(src, on_bad=on_bad, report=rep), "CRAG records", progress):
            raw_split = (rec.model_extra or {}).get("split")
            rec_split = _record_split(raw_split)
            splits_seen["none" if raw_split is None else str(raw_split)] += 1
            if want is not None and rec_split != want:
                continue
            counts["after_split"] += 1
            if static_only and rec.static_or_dynamic.strip().lower() != "static":
                continue
            counts["after_static"] += 1
            for page in rec.search_results:
                setattr(page, "page_id", page_id(page))
            yield rec

    kept: list[CragRecord] | None
    if n is None:
        kept = None
        written = write_records(matching(), questions_path)
    else:
        rng = random.Random(seed)
        reservoir: list[tuple[int, CragRecord]] = []
        for i, rec in enumerate(matching()):
            if len(reservoir) < n:
                reservoir.append((i, rec))
            else:
                j = rng.randrange(i + 1)
                if j < n:
                    reservoir[j] = (i, rec)
        kept = [rec for _, rec in sorted(reservoir, key=lambda t: t[0])]
        written = write_records(kept, questions_path)

    def written_records() -> Iterator[CragRecord]:
        return iter(kept) if kept is not None else iter_records(questions_path, on_bad="fail")

    pages, distinct_pages = _write_crag_corpus(written_records, corpus_path)

    types: Counter[str] = Counter()
    answers = Counter()
    static = 0
    for rec in written_records():
        types[rec.question_type or "unknown"] += 1
        answers["false_premise" if rec.is_false_premise else "unanswerable" if rec.is_unanswerable else "answerable"] += 1
        static += rec.static_or_dynamic.strip().lower() == "static"

    stats: Stats = {
        "input": str(src),
        "read": rep.good,
        "bad": len(rep.bad),
        "splits_seen": dict(sorted(splits_seen.items())),
        "split": want,
        "static_only": static_only,
        "after_split": counts["after_split"],
        "after_static": counts["after_static"],
        "n": n,
        "seed": seed,
        "written": written,
        "answerable": answers["answerable"],
        "unanswerable": answers["unanswerable"],
        "false_premise": answers["false_premise"],
        "static": static,
        "question_types": dict(sorted(types.items())),
        "pages": pages,
        "distinct_pages": distinct_pages,
    }
    return (questions_path, corpus_path), stats


def _write_crag_corpus(records: Callable[[], Iterator[CragRecord]], path: Path) -> tuple[int, int]:
    """Two passes over the kept records: who retrieved which page, then each distinct page once."""
    question_ids: dict[str, list[str]] = {}
    pages = 0
    for rec in records():
        for page in rec.search_results:
            pages += 1
            ids = question_ids.setdefault(page_id(page), [])
            if rec.interaction_id not in ids:
                ids.append(rec.interaction_id)
    done: set[str] = set()
    with open(path, "w", encoding="utf-8") as fh:
        for rec in records():
            for page in rec.search_results:
                pid = page_id(page)
                if pid in done:
                    continue
                done.add(pid)
                line = {
                    "page_id": pid,
                    "page_name": page.page_name,
                    "page_url": page.page_url,
                    "page_last_modified": page.page_last_modified,
                    "page_snippet": page.page_snippet,
                    "page_result": page.page_result,
                    "question_ids": question_ids[pid],
                }
                fh.write(json.dumps(line, ensure_ascii=False) + "\n")
    return pages, len(done)
