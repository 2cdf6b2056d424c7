"""Question sets built for training the answerability probe and for development splits that look like
its test sets: SQuAD 2.0 draws, NQ-open questions with BM25 near-miss passages (answerable: the gold
passage among them; negative: near misses only), answer-removed twins, and web-search snippet views.

`agentic-rag train views` collects the probe's training views on these; scripts/make_nq_dev.py and
scripts/make_year_dev.py draw dev splits from them, leaving out every question a probe was trained on.
"""

from __future__ import annotations

import random
import re
import zipfile
from pathlib import Path

import numpy as np

from agentic_rag.datasets.crag import IDK, CragRecord, DataError, SearchResult, iter_records
from agentic_rag.datasets.prepare import prepare_nq, prepare_squad2
from agentic_rag.text import tokenize


def squad_records(source: Path, n: int, exclude_files: list[Path], seed: int, tmp: Path) -> list[CragRecord]:
    """Half answerable, half unanswerable SQuAD 2.0 questions of ``source`` (raw SQuAD 2.0 JSON lines),
    none of them in ``exclude_files`` (the evaluated splits: training must never see them)."""
    for f in exclude_files:
        if not f.is_file():
            raise FileNotFoundError(f"{f} not found: run scripts/make_squad_splits.py and scripts/make_nq_dev.py first "
                                    "(the training set must exclude it)")
    exclude = {r.interaction_id for f in exclude_files for r in iter_records(f)}
    path, _ = prepare_squad2(source, tmp / "squad_all.jsonl", progress=False)
    rows = [r for r in iter_records(path) if r.interaction_id not in exclude]
    rng = random.Random(seed)
    ans = [r for r in rows if r.answer != IDK]
    una = [r for r in rows if r.answer == IDK]
    return rng.sample(ans, min(n // 2, len(ans))) + rng.sample(una, min(n - n // 2, len(una)))


def base_id(interaction_id: str) -> str:
    """A record's question id without its variant suffix: NQ's "-answerable"/"-negative" (and "-snippets"
    view), HotpotQA's "-answerable"/"-unanswerable", a twin's number ("-unanswerable-1") and an evidence
    layout ("-answerable@snippets")."""
    return _VARIANT.sub("", _LAYOUT.sub("", interaction_id).removesuffix(SNIPPETS_SUFFIX))


_VARIANT = re.compile(r"-(?:answerable|negative|unanswerable(?:-\d+)?)$")
_LAYOUT = re.compile(r"@[a-z_]+$")


SNIPPETS_SUFFIX = "-snippets"


def probe_training_ids(files: list[Path]) -> set[str]:
    """The question ids in probe training files (``collect`` outputs), variant suffixes dropped: what
    a dev split must leave out so that no probe has seen its questions. The ids are strings, read without
    unpickling: an .npz given here may come from anyone, and an object array in it would run code when read."""
    ids: set[str] = set()
    for f in files:
        try:
            with np.load(f, allow_pickle=False) as data:
                ids |= {base_id(str(i)) for i in data["ids"]}
        except (ValueError, KeyError, OSError, zipfile.BadZipFile) as exc:
            raise DataError(f"{f} is not a probe training file whose ids are strings: {exc}") from None
    return ids


def as_snippets(record: CragRecord, words: int = 40) -> CragRecord:
    """The record as a web search shows it (CRAG's and RGB's form): each passage cut to a window of
    about ``words`` words, "..." where it was cut; around the answer in a gold passage, elsewhere
    where it shares most words with the question. The probe otherwise sees only whole Wikipedia
    paragraphs, and short snippets on the topic are where it reads "answerable" most wrongly."""
    answers = [a.lower() for a in [record.answer, *record.alternative_answers] if a and a != IDK]
    asked = set(tokenize(record.query))

    def window(text: str, gold: bool) -> str:
        toks = text.split()
        if len(toks) <= words:
            return text
        starts = range(0, len(toks) - words + 1, max(1, words // 4))

        def rank(i: int) -> tuple[bool, int]:
            piece = " ".join(toks[i : i + words]).lower()
            return (gold and any(a in piece for a in answers), len(asked & set(tokenize(piece))))

        i = max(starts, key=rank)
        return ("... " if i else "") + " ".join(toks[i : i + words]) + (" ..." if i + words < len(toks) else "")

    gold = set(record.gold_page_urls)
    pages = [p.model_copy(update={"page_snippet": (w := window(p.page_result or p.page_snippet, p.page_url in gold)),
                                  "page_result": w}) for p in record.search_results]
    return record.model_copy(update={"interaction_id": record.interaction_id + SNIPPETS_SUFFIX, "search_results": pages})


def nq_records(source: Path, n: int, seed: int, tmp: Path, distractors: int = 4,
               exclude: frozenset[str] = frozenset()) -> list[CragRecord]:
    """Half answerable (gold + near passages), half negative (near passages only, none with an answer),
    drawn from ``source`` (NQ-open with its oracle passage, as JSON lines).

    ``exclude`` holds question ids (without variant suffix) never to draw, e.g. an NQ dev split's."""
    import bm25s

    path, _ = prepare_nq(source, tmp / "nq_all.jsonl", progress=False)
    rows = list(iter_records(path))
    passages = {p.page_url: p for r in rows for p in r.search_results}
    urls = list(passages)
    retriever = bm25s.BM25()
    retriever.index(bm25s.tokenize([passages[u].page_result for u in urls], stopwords="en", show_progress=False),
                    show_progress=False)
    rng = random.Random(seed)
    pool = [r for r in rows if r.interaction_id not in exclude]
    chosen = rng.sample(pool, min(n, len(pool)))
    out = []
    for i, r in enumerate(chosen):
        negative = i % 2 == 1
        answers = [a.lower() for a in [r.answer, *r.alternative_answers]]
        gold = {p.page_url for p in r.search_results}
        hits, _ = retriever.retrieve(bm25s.tokenize([r.query], stopwords="en", show_progress=False),
                                     k=min(40, len(urls)), show_progress=False)
        near = [urls[j] for j in hits[0] if urls[j] not in gold]
        near = [u for u in near if not any(a in passages[u].page_result.lower() for a in answers)]
        pages = [passages[u] for u in near[: distractors + (1 if negative else 0)]]
        if not negative:
            pages = [*r.search_results[:1], *pages]
            rng.shuffle(pages)
        out.append(r.model_copy(update={
            "interaction_id": f"{r.interaction_id}-{'negative' if negative else 'answerable'}",
            "answer": IDK if negative else r.answer,
            "alternative_answers": [] if negative else r.alternative_answers,
            "search_results": [SearchResult.model_validate(p.model_dump()) for p in pages],
            "gold_page_urls": [] if negative else r.gold_page_urls,
        }))
    return out


_SENTENCE_END = re.compile(r"(?<=[.!?])\s+")


def answer_removed(record: CragRecord, min_sentences: int = 2) -> CragRecord | None:
    """The negative twin of an answerable record: every sentence that states an answer string is cut
    from every passage, so the context stays on the question's topic (same article, same entity) but
    no longer answers it; this is the "on topic, answer missing" case that near-miss passages from
    other questions do not teach. None when the gold passage keeps fewer than ``min_sentences``
    sentences, or when an answer string survives anywhere."""
    answers = [a.lower() for a in [record.answer, *record.alternative_answers] if a and a != IDK]
    if not answers or not record.gold_page_urls:
        return None

    def cut(text: str) -> str:
        return " ".join(s for s in _SENTENCE_END.split(text) if not any(a in s.lower() for a in answers))

    pages = [p.model_copy(update={"page_result": cut(p.page_result), "page_snippet": cut(p.page_snippet)})
             for p in record.search_results]
    gold = [p for p in pages if p.page_url in record.gold_page_urls]
    if not gold or any(len(_SENTENCE_END.split(p.page_result)) < min_sentences for p in gold):
        return None
    if any(a in f"{p.page_result} {p.page_snippet}".lower() for p in pages for a in answers):
        return None
    base = record.interaction_id.removesuffix("-answerable")
    return record.model_copy(update={"interaction_id": f"{base}-removed", "answer": IDK, "alternative_answers": [],
                                     "question_type": "unanswerable", "search_results": pages, "gold_page_urls": []})


def source_of(record_id: str, group: str) -> str:
    """Report rows by where they came from; answer-removed twins and snippet views apart, since they are built here."""
    if group.startswith("hotpotqa:"):  # both variants: answerable, and a supporting page removed
        return "hotpotqa"
    source = "squad2" if group.startswith("squad2:") else "nq"
    return f"{source}_removed" if record_id.endswith("-removed") else (
        f"{source}_snippets" if record_id.endswith(SNIPPETS_SUFFIX) else source)


def group_of(record: CragRecord) -> str:
    """Cross-validation group: the SQuAD article (all its paragraphs share questions' topics), the
    HotpotQA question (both its variants), or the NQ id."""
    if getattr(record, "source", None) == "hotpotqa" and getattr(record, "source_id", None):
        return f"hotpotqa:{record.source_id}"
    url = record.search_results[0].page_url if record.search_results else ""
    if url.startswith("squad2://"):
        return "squad2:" + url.split("/")[2]
    return base_id(record.interaction_id)


# The dev pools a calibration or a decision fit draws from (scripts/make_squad_splits.py: SQuAD's seed-1
# draw of 400; scripts/make_nq_dev.py: NQ's seed-11 draw of 400): probe training never takes their
# questions, so a dev split drawn later is unseen by the probe whatever the training set grew to.
SQUAD_DEV_POOL = {"n": 400, "seed": 1}
NQ_DEV_POOL = {"n": 400, "seed": 11}


def held_out_ids(shared: Path, tmp: Path) -> dict[str, frozenset[str]]:
    """The question ids probe training must never draw, by source: every evaluated (test) question and
    every question of the dev pools; HotpotQA's test half is held out by its split (``split_of``)."""
    from agentic_rag.datasets.prepare.benchmarks import benchmark_dataset

    squad = [benchmark_dataset("squad200", tmp, shared),
             str(prepare_squad2(shared / "squad2" / "squad2_dev_half.jsonl", tmp / "squad_dev_pool.jsonl",
                                progress=False, **SQUAD_DEV_POOL)[0])]
    nq = nq_records(shared / "nq" / "nq_open_oracle.jsonl", NQ_DEV_POOL["n"], NQ_DEV_POOL["seed"], tmp)
    return {"squad2": frozenset(r.interaction_id for f in squad for r in iter_records(f)),
            "nq": frozenset(base_id(r.interaction_id) for r in nq)}


def probe_training_records(shared: Path, tmp: Path, squad: int, nq: int, snippets: int, removed: int,
                           hotpot: bool, seed: int) -> list[CragRecord]:
    """The answerability reader's training draws, none of them an evaluated or dev-pool question
    (``held_out_ids``): ``squad`` SQuAD 2.0 questions (half unanswerable), ``nq`` NQ-open questions (half
    with near misses only), of those the first ``snippets`` also as web-search snippets and up to
    ``removed`` answer-removed twins, and with ``hotpot`` HotpotQA's dev half of every shared file, each
    question with a twin per supporting paragraph removed. Multi-hop records come first: a collection
    stopped early holds the rows that are shortest."""
    from agentic_rag.datasets.prepare.hotpotqa import prepare_hotpotqa

    held = held_out_ids(shared, tmp)
    records: list[CragRecord] = []
    if hotpot:
        for k, path in enumerate(sorted((shared / "hotpotqa").glob("hotpot_dev_distractor_*"))):
            out, _ = prepare_hotpotqa(path, tmp / f"hotpot_dev_{k}.jsonl", split="dev", each_removed=True, progress=False)
            records += list(iter_records(out))
    if squad:
        path, _ = prepare_squad2(shared / "squad2" / "squad2_dev_half.jsonl", tmp / "squad_all.jsonl", progress=False)
        rows = [r for r in iter_records(path) if r.interaction_id not in held["squad2"]]
        rng = random.Random(seed)
        ans, una = [r for r in rows if r.answer != IDK], [r for r in rows if r.answer == IDK]
        records += rng.sample(ans, min(squad // 2, len(ans))) + rng.sample(una, min(squad - squad // 2, len(una)))
    drawn = nq_records(shared / "nq" / "nq_open_oracle.jsonl", nq, seed, tmp, exclude=held["nq"]) if nq else []
    records += drawn + [as_snippets(r) for r in drawn[:snippets]]
    records += [t for r in drawn if r.answer != IDK and (t := answer_removed(r)) is not None][:removed]
    return records
