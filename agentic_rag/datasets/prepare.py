"""Converters from public QA sets to CRAG's JSON-lines format.

Every other command reads one format: a file of :class:`~agentic_rag.datasets.crag.CragRecord` lines. The
functions here turn the CRAG distribution itself (filtered and sampled) and three other evaluation sets
(SQuAD 2.0, RGB, Natural Questions open) into that format. Each returns ``(output path(s), stats)`` where
``stats`` is a small JSON-friendly dict of counts.

* Deterministic: the same input and ``seed`` give byte-identical output. Samples are drawn with
  ``random.Random(seed)`` and every per-question choice (distractor paragraphs, shuffles) uses its own
  generator seeded from ``(seed, source, question id)``, so a question's pages do not depend on which other
  questions were sampled.
* Nothing is dropped silently: a line that is not JSON, or lacks what a record needs, is reported with its
  file and line number as a :class:`~agentic_rag.datasets.crag.BadRecord` in the caller's
  :class:`~agentic_rag.datasets.crag.ReadReport` (``on_bad='skip'``) or raised as
  :class:`~agentic_rag.datasets.crag.DataError` (``on_bad='fail'``). The number of bad lines is in the stats.
* Extra fields (allowed by ``CragRecord``): ``source`` (the data set), ``source_id`` (its own id),
  ``gold_page_urls`` (the ``page_url`` of the pages that answer: SQuAD's own paragraph, NQ's gold passage,
  RGB's positive snippets; empty when nothing answers), RGB's ``variant`` and ``fake_answer``.
"""

from __future__ import annotations

import hashlib
import json
import random
import sys
from collections import Counter
from pathlib import Path
from typing import Any, Callable, Iterable, Iterator, Literal, Sequence
from urllib.parse import quote

from pydantic import ValidationError
from tqdm import tqdm

from agentic_rag.datasets.crag import (
    IDK,
    BadRecord,
    CragRecord,
    DataError,
    ReadReport,
    SearchResult,
    answer_to_str,
    iter_lines,
    iter_records,
    resolve_dataset,
    write_records,
)

OnBad = Literal["skip", "fail"]
Stats = dict[str, Any]

CRAG_QUESTIONS_FILE = "crag_questions.jsonl"
CRAG_CORPUS_FILE = "crag_corpus.jsonl"
RGB_VARIANTS = ("answerable", "negative", "counterfactual")

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


# --------------------------------------------------------------------------------------------------------
# shared helpers


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


def _check_on_bad(on_bad: str) -> None:
    if on_bad not in ("skip", "fail"):
        raise ValueError(f"on_bad must be 'skip' or 'fail', not {on_bad!r}")


def _check_n(n: int | None) -> None:
    if n is not None and n < 0:
        raise ValueError(f"n must be >= 0, not {n}")


def _progress(iterable: Iterable[Any], desc: str, progress: bool | None, total: int | None = None) -> Iterable[Any]:
    """tqdm on stderr; by default only when stderr is a terminal (``progress=None``)."""
    disable = None if progress is None else not progress
    return tqdm(iterable, desc=desc, total=total, unit=" lines", file=sys.stderr, disable=disable, leave=False)


class _BadLines:
    """Collects bad lines of one input file into a ReadReport, or raises."""

    def __init__(self, path: Path, on_bad: OnBad, report: ReadReport | None):
        _check_on_bad(on_bad)
        self.path = str(path)
        self.on_bad = on_bad
        self.report = report if report is not None else ReadReport(self.path)
        self.report.path = self.path

    def __call__(self, lineno: int, reason: str) -> None:
        bad = BadRecord(self.path, lineno, reason)
        if self.on_bad == "fail":
            raise DataError(f"bad record at {bad}")
        self.report.bad.append(bad)

    def good(self) -> None:
        self.report.good += 1

    def ungood(self, lineno: int, reason: str) -> None:
        """A line counted good turned out unusable when its record was built."""
        self.report.good -= 1
        self(lineno, reason)


def _iter_json_objects(
    path: Path, bad: _BadLines, desc: str, progress: bool | None
) -> Iterator[tuple[int, dict[str, Any]]]:
    """(line number, object) for each non-blank line; lines that are not JSON objects go to ``bad``."""
    for lineno, line, undecodable in _progress(iter_lines(path), desc, progress):
        if line is None:
            bad(lineno, undecodable)
            continue
        try:
            raw = json.loads(line)
        except json.JSONDecodeError as exc:
            bad(lineno, f"bad JSON ({exc.msg} at column {exc.colno})")
            continue
        if not isinstance(raw, dict):
            bad(lineno, "line is not a JSON object")
            continue
        yield lineno, raw


def _require_text(raw: dict[str, Any], key: str, what: str | None = None) -> str:
    value = raw.get(key)
    if not isinstance(value, str) or not value.strip():
        raise DataError(f"{what or key} is missing or empty")
    return value.strip()


def _require_list(raw: dict[str, Any], key: str) -> list[Any]:
    value = raw.get(key)
    if value is None:
        return []
    if not isinstance(value, list):
        raise DataError(f"{key} is not a list")
    return value


def _reason(exc: Exception) -> str:
    if isinstance(exc, ValidationError):
        return "; ".join(
            f"{'.'.join(str(x) for x in err['loc']) or 'record'}: {err['msg']}" for err in exc.errors()
        )
    return str(exc)


def _distinct(texts: Iterable[Any]) -> list[str]:
    """Non-empty strings in first-seen order, without repeats."""
    out: list[str] = []
    for t in texts:
        s = answer_to_str(t)
        if s and s not in out:
            out.append(s)
    return out


def _rng(seed: int, *key: Any) -> random.Random:
    """A generator for one question: stable across runs and independent of the other questions sampled."""
    return random.Random("/".join(str(k) for k in (seed, *key)))


def _sample_sorted(indices: Sequence[int], n: int | None, rng: random.Random) -> list[int]:
    if n is None or n >= len(indices):
        return list(indices)
    return sorted(rng.sample(list(indices), n))


def _sha1(text: str) -> str:
    return hashlib.sha1(text.encode("utf-8")).hexdigest()


def _answer_stats(records: Sequence[CragRecord]) -> Stats:
    unanswerable = sum(1 for r in records if r.is_unanswerable)
    return {"answerable": len(records) - unanswerable, "unanswerable": unanswerable}


def _write_converted(
    records: list[CragRecord], out_path: str | Path, src: Path, read: int, bad, n: int | None, seed: int, **extra: Any
) -> tuple[Path, Stats]:
    """Write converted records and the stats every converter reports (read, bad, written, answer kinds)."""
    out = Path(out_path)
    write_records(records, out)
    stats: Stats = {"input": str(src), "read": read, "bad": len(bad.report.bad), "n": n, "seed": seed,
                    **extra, "written": len(records), **_answer_stats(records)}
    return out, stats


# --------------------------------------------------------------------------------------------------------
# CRAG


def page_id(page: SearchResult) -> str:
    """Stable id of a page: its URL and a hash of its content (the same URL fetched twice may differ)."""
    return _sha1(page.page_url + "\n" + _sha1(page.page_result))[:16]


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
    _check_on_bad(on_bad)
    _check_n(n)
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
        for rec in _progress(iter_records(src, on_bad=on_bad, report=rep), "CRAG records", progress):
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


# --------------------------------------------------------------------------------------------------------
# SQuAD 2.0


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
    _check_n(n)
    if other_paragraphs < 0:
        raise ValueError(f"other_paragraphs must be >= 0, not {other_paragraphs}")
    src = resolve_dataset(input)
    bad = _BadLines(src, on_bad, report)

    paragraphs: dict[str, list[str]] = {}  # title -> paragraphs in first-seen order
    paragraph_index: dict[tuple[str, str], int] = {}
    questions: list[dict[str, Any]] = []
    for lineno, raw in _iter_json_objects(src, bad, "SQuAD 2.0", progress):
        try:
            question = _require_text(raw, "question")
            context = _require_text(raw, "context")
            title = str(raw.get("title") or "untitled").strip() or "untitled"
            qid = answer_to_str(raw.get("id")) or f"line{lineno}"
            answers = _distinct(_require_list(raw, "answers"))
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
        r = _rng(seed, "squad2", q["id"])
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
            bad.ungood(q["line"], _reason(exc))

    return _write_converted(records, out_path, src, len(questions), bad, n, seed,
                            articles=len(paragraphs), paragraphs=len(paragraph_index))


# --------------------------------------------------------------------------------------------------------
# RGB


def _rgb_answer(value: Any) -> tuple[str, list[str], list[list[str]] | None]:
    """RGB answers: a string, a list of aliases, or a list of parts each a list of aliases.

    Returns (answer, alternative answers, parts). A single part is a list of aliases; several parts (every
    one needed) become one answer joined with ", " and are kept whole in ``answer_parts``.
    """
    if isinstance(value, list):
        if value and all(isinstance(v, list) for v in value):
            parts = [_distinct(v) for v in value]
            parts = [p for p in parts if p]
            if len(parts) == 1:
                return parts[0][0], parts[0][1:], None
            if parts:
                return ", ".join(p[0] for p in parts), [], parts
            return "", [], None
        aliases = _distinct(v for v in value if not isinstance(v, (list, dict)))
        return (aliases[0], aliases[1:], None) if aliases else ("", [], None)
    return answer_to_str(value), [], None


def prepare_rgb(
    input: str | Path,
    out_path: str | Path,
    variants: Sequence[str] = RGB_VARIANTS,
    n: int | None = None,
    seed: int = 0,
    noise: int = 2,
    on_bad: OnBad = "skip",
    report: ReadReport | None = None,
    progress: bool | None = None,
) -> tuple[Path, Stats]:
    """RGB questions (``{id, query, answer, fakeanswer, positive[], positive_wrong[], negative[]}``) as CRAG records.

    Per question and variant, a record ``rgb-<id>-<variant>``:

    * ``answerable``: the positive snippets plus ``noise`` negative ones, shuffled; gold = the answer.
    * ``negative``: only the negative snippets; gold = "i don't know" (RGB's negative rejection);
      the real answer in the extra fields ``world_answer`` / ``world_alternatives``.
    * ``counterfactual``: the ``positive_wrong`` snippets, which state ``fakeanswer``; gold = the true
      answer, the planted one in the extra field ``fake_answer``.

    A variant a question has no snippets for is skipped and counted in ``stats['skipped']``.
    """
    _check_n(n)
    if noise < 0:
        raise ValueError(f"noise must be >= 0, not {noise}")
    variants = tuple(variants)
    unknown = [v for v in variants if v not in RGB_VARIANTS]
    if unknown or not variants:
        raise ValueError(f"unknown RGB variant(s) {unknown}: choose from {', '.join(RGB_VARIANTS)}")
    src = resolve_dataset(input)
    bad = _BadLines(src, on_bad, report)

    rows: list[tuple[int, dict[str, Any]]] = []
    for lineno, raw in _iter_json_objects(src, bad, "RGB", progress):
        try:
            _require_text(raw, "query")
            rid = answer_to_str(raw.get("id"))
            if not rid:
                raise DataError("id is missing")
            answer, _, _ = _rgb_answer(raw.get("answer"))
            if not answer:
                raise DataError("answer is missing or empty")
            for key in ("positive", "negative", "positive_wrong"):
                _require_list(raw, key)
        except DataError as exc:
            bad(lineno, str(exc))
            continue
        bad.good()
        rows.append((lineno, raw))

    chosen = _sample_sorted(range(len(rows)), n, random.Random(seed))
    records: list[CragRecord] = []
    per_variant: Counter[str] = Counter()
    skipped: Counter[str] = Counter()
    for i in chosen:
        lineno, raw = rows[i]
        rid = answer_to_str(raw["id"])
        answer, alternatives, parts = _rgb_answer(raw["answer"])
        fake, _, _ = _rgb_answer(raw.get("fakeanswer"))
        snippets = {k: [str(s) for s in raw.get(k) or [] if str(s).strip()] for k in ("positive", "negative", "positive_wrong")}

        def pages(chosen_snippets: list[tuple[str, int]], r: random.Random) -> list[SearchResult]:
            r.shuffle(chosen_snippets)
            return [
                SearchResult(
                    page_name=f"RGB snippet {pos}",
                    page_url=f"rgb://{rid}/{kind}/{k}",
                    page_snippet=snippets[kind][k],
                    page_result=snippets[kind][k],
                )
                for pos, (kind, k) in enumerate(chosen_snippets, start=1)
            ]

        for variant in variants:
            r = _rng(seed, "rgb", rid, variant)
            extra: dict[str, Any] = {}
            if variant == "answerable":
                if not snippets["positive"]:
                    skipped[variant] += 1
                    continue
                negatives = list(range(len(snippets["negative"])))
                noisy = sorted(r.sample(negatives, min(noise, len(negatives))))
                chosen_snippets = [("positive", k) for k in range(len(snippets["positive"]))]
                chosen_snippets += [("negative", k) for k in noisy]
                gold, alts, qtype = answer, alternatives, "simple"
                extra["gold_page_urls"] = [f"rgb://{rid}/positive/{k}" for k in range(len(snippets["positive"]))]
                if parts:
                    extra["answer_parts"] = parts
            elif variant == "negative":
                if not snippets["negative"]:
                    skipped[variant] += 1
                    continue
                chosen_snippets = [("negative", k) for k in range(len(snippets["negative"]))]
                gold, alts, qtype = IDK, [], "unanswerable"
                extra["gold_page_urls"] = []
                # the real answer, kept apart from the gold: an answer that matches it came from a
                # "negative" snippet that leaked it, which the report counts separately
                extra["world_answer"] = answer
                extra["world_alternatives"] = alternatives
            else:
                if not snippets["positive_wrong"] or not fake:
                    skipped[variant] += 1
                    continue
                chosen_snippets = [("positive_wrong", k) for k in range(len(snippets["positive_wrong"]))]
                gold, alts, qtype = answer, alternatives, "counterfactual"
                extra["fake_answer"] = fake
                extra["gold_page_urls"] = []
                if parts:
                    extra["answer_parts"] = parts
            try:
                records.append(
                    CragRecord(
                        interaction_id=f"rgb-{rid}-{variant}",
                        query=raw["query"],
                        answer=gold,
                        alternative_answers=alts,
                        domain="news",
                        question_type=qtype,
                        static_or_dynamic="static",
                        search_results=pages(chosen_snippets, r),
                        source="rgb",
                        source_id=rid,
                        variant=variant,
                        **extra,
                    )
                )
            except ValidationError as exc:
                bad(lineno, f"{variant}: {_reason(exc)}")
                continue
            per_variant[variant] += 1

    return _write_converted(
        records, out_path, src, len(rows), bad, n, seed, noise=noise, questions=len(chosen),
        variants={v: per_variant[v] for v in variants}, skipped={v: skipped[v] for v in variants if skipped[v]},
    )


# --------------------------------------------------------------------------------------------------------
# Natural Questions (open, with the gold passage)


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
    _check_n(n)
    src = resolve_dataset(input)
    bad = _BadLines(src, on_bad, report)

    rows: list[tuple[int, str, list[str], list[dict[str, Any]]]] = []
    for lineno, raw in _iter_json_objects(src, bad, "NQ-open", progress):
        try:
            question = _require_text(raw, "question")
            answers = _distinct(_require_list(raw, "answers"))
            if not answers:
                raise DataError("answers is missing or empty")
            ctxs = [c for c in _require_list(raw, "ctxs") if isinstance(c, dict) and str(c.get("text") or "").strip()]
            if any("isgold" in c for c in ctxs):
                ctxs = [c for c in ctxs if c.get("isgold")]
            if not ctxs:
                raise DataError("no gold passage in ctxs")
        except DataError as exc:
            bad(lineno, str(exc))
            continue
        bad.good()
        rows.append((lineno, question, answers, ctxs))

    chosen = _sample_sorted(range(len(rows)), n, random.Random(seed))
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
                    page_url=f"nq://{quote(title, safe='')}/{_sha1(text)[:12]}",
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
            bad.ungood(lineno, _reason(exc))

    return _write_converted(records, out_path, src, len(rows), bad, n, seed,
                            passages=passages, passages_with_answer_text=with_answer)


__all__ = [
    "CRAG_CORPUS_FILE",
    "CRAG_QUESTIONS_FILE",
    "RGB_VARIANTS",
    "normalise_split",
    "page_id",
    "prepare_crag",
    "prepare_nq",
    "prepare_rgb",
    "prepare_squad2",
]
