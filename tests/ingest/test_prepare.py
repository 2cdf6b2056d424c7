"""Behaviour of the dataset converters on the real shared data and on small hand-written files."""

from __future__ import annotations

import bz2
import hashlib
import json
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest

from agentic_rag.datasets.crag import IDK, DataError, ReadReport, SearchResult, iter_records
from agentic_rag.datasets.prepare import (
    normalise_split,
    prepare_crag,
    prepare_hotpotqa,
    prepare_nq,
    prepare_rgb,
    prepare_squad2,
)
from testkit import REPO
from testkit.shared_data import DATA, HOTPOT, needs_data, reread

REPO = REPO
SQUAD = DATA / "squad2" / "squad2_dev_half.jsonl"
RGB = DATA / "rgb" / "rgb_en_fact_100.jsonl"
NQ = DATA / "nq" / "nq_open_oracle.jsonl"
CRAG = DATA / "crag" / "crag_example_10.jsonl.bz2"


def raw_lines(path: Path) -> list[dict]:
    with (bz2.open(path, "rt", encoding="utf-8") if path.suffix == ".bz2" else open(path, encoding="utf-8")) as fh:
        return [json.loads(line) for line in fh if line.strip()]


# ------------------------------------------------------------------------------------------------ SQuAD 2.0


@pytest.fixture(scope="module")
def squad_raw() -> list[dict]:
    if not SQUAD.is_file():
        pytest.skip(f"{SQUAD} not found")
    return raw_lines(SQUAD)


@needs_data
def test_squad_all_questions(tmp_path, squad_raw):
    out, stats = prepare_squad2(SQUAD, tmp_path / "squad.jsonl", seed=0)
    records = reread(out)
    by_id = {r["id"]: r for r in squad_raw}

    assert len(records) == len(squad_raw) == stats["written"] == 6078
    assert stats["bad"] == 0
    assert stats["unanswerable"] == sum(r["is_impossible"] for r in squad_raw) == 3168
    assert stats["articles"] == 16 and stats["paragraphs"] == 646
    gold_positions = Counter()
    for rec in records:
        src = by_id[rec.source_id]
        texts = [p.page_result for p in rec.search_results]
        # the question's own paragraph is always among its pages, plus up to 4 others of the same article
        context = src["context"].strip()  # page text is stripped of surrounding whitespace
        assert context in texts
        assert len(texts) == len(set(texts)) == 5
        assert all(p.page_url.startswith("squad2://") for p in rec.search_results)
        assert rec.domain == "squad2" and rec.static_or_dynamic == "static"
        gold_positions[texts.index(context)] += 1
        if src["is_impossible"]:
            assert rec.answer == IDK and rec.is_unanswerable
            assert rec.question_type == "unanswerable"
            assert rec.gold_page_urls == []
        else:
            assert rec.question_type == "simple"
            assert rec.answer == src["answers"][0]
            assert set(rec.gold_answers) == set(src["answers"])
            assert len(rec.alternative_answers) == len(set(rec.alternative_answers))
            gold = [p for p in rec.search_results if p.page_url in rec.gold_page_urls]
            assert len(gold) == 1 and gold[0].page_result == context
            assert rec.answer in gold[0].page_result
    # shuffled: the gold paragraph is not always first
    assert len(gold_positions) == 5 and max(gold_positions.values()) < 0.3 * len(records)


@needs_data
def test_squad_sample_is_half_unanswerable_and_deterministic(tmp_path, squad_raw):
    out1, stats = prepare_squad2(SQUAD, tmp_path / "a.jsonl", n=200, seed=7)
    out2, _ = prepare_squad2(SQUAD, tmp_path / "b.jsonl", n=200, seed=7)
    out3, _ = prepare_squad2(SQUAD, tmp_path / "c.jsonl", n=200, seed=8)
    records = reread(out1)
    assert len(records) == 200 == stats["written"]
    assert stats["unanswerable"] == 100 == sum(r.is_unanswerable for r in records)
    assert out1.read_bytes() == out2.read_bytes()
    assert out1.read_bytes() != out3.read_bytes()
    # the sample keeps input order
    order = {r["id"]: i for i, r in enumerate(squad_raw)}
    positions = [order[r.source_id] for r in records]
    assert positions == sorted(positions)


# ------------------------------------------------------------------------------------------------ RGB


@pytest.fixture(scope="module")
def rgb_out(tmp_path_factory):
    if not RGB.is_file():
        pytest.skip(f"{RGB} not found")
    out, stats = prepare_rgb(RGB, tmp_path_factory.mktemp("rgb") / "rgb.jsonl", seed=0)
    raw = {}
    for r in raw_lines(RGB):  # snippets as the reader normalises page text (surrounding whitespace stripped)
        for kind in ("positive", "negative", "positive_wrong"):
            r[kind] = [s.strip() for s in r[kind]]
        raw[str(r["id"])] = r
    return out, stats, raw


def _aliases(answer) -> list[str]:
    if isinstance(answer, str):
        return [answer]
    flat = []
    for a in answer:
        flat.extend(a if isinstance(a, list) else [a])
    return flat


@needs_data
def test_rgb_variants(rgb_out):
    out, stats, raw = rgb_out
    records = reread(out)
    assert len(records) == 300 == stats["written"]
    assert stats["variants"] == {"answerable": 100, "negative": 100, "counterfactual": 100}
    assert stats["unanswerable"] == 100
    by_variant = {v: [r for r in records if r.variant == v] for v in stats["variants"]}
    for rec in records:
        src = raw[rec.source_id]
        assert rec.interaction_id == f"rgb-{rec.source_id}-{rec.variant}"
        assert rec.domain == "news" and rec.query == src["query"]
        assert all(p.page_url.startswith(f"rgb://{rec.source_id}/") for p in rec.search_results)
        assert all(p.page_name.startswith("RGB snippet ") for p in rec.search_results)

    for rec in by_variant["answerable"]:
        src = raw[rec.source_id]
        texts = [p.page_result for p in rec.search_results]
        assert rec.question_type == "simple"
        assert set(src["positive"]) <= set(texts)
        assert len(texts) == len(src["positive"]) + min(2, len(src["negative"]))
        assert set(texts) - set(src["positive"]) <= set(src["negative"])
        aliases = _aliases(src["answer"])
        assert rec.answer == aliases[0] and set(rec.gold_answers) == set(aliases)

    for rec in by_variant["negative"]:
        src = raw[rec.source_id]
        texts = {p.page_result for p in rec.search_results}
        assert rec.answer == IDK and rec.question_type == "unanswerable"
        assert texts == set(src["negative"])
        assert not texts & set(src["positive"])
        aliases = _aliases(src["answer"])  # the real answer rides along, apart from the gold
        assert rec.world_answer == aliases[0] and set([rec.world_answer, *rec.world_alternatives]) == set(aliases)

    fake_seen = 0
    for rec in by_variant["counterfactual"]:
        src = raw[rec.source_id]
        texts = [p.page_result for p in rec.search_results]
        assert rec.question_type == "counterfactual"
        assert rec.fake_answer == src["fakeanswer"].strip()
        assert rec.answer == _aliases(src["answer"])[0] and not rec.is_unanswerable
        assert set(texts) == set(src["positive_wrong"])
        assert any(rec.fake_answer in t for t in texts)
        fake_seen += sum(rec.fake_answer in t for t in texts)
    # RGB's planted answer is in nearly every counterfactual snippet (two source snippets lack it)
    assert fake_seen >= 0.95 * sum(len(r.search_results) for r in by_variant["counterfactual"])


@needs_data
def test_rgb_alias_answers_and_sampling(tmp_path, rgb_out):
    _, _, raw = rgb_out
    out, stats = prepare_rgb(RGB, tmp_path / "rgb.jsonl", variants=("answerable",), n=10, seed=3, noise=0)
    records = reread(out)
    assert len(records) == 10 == stats["questions"]
    for rec in records:
        assert {p.page_result for p in rec.search_results} == set(raw[rec.source_id]["positive"])
    # id 15 has a list-of-lists answer: aliases become alternatives without repeats
    out, _ = prepare_rgb(RGB, tmp_path / "all.jsonl", variants=("answerable",))
    rec = next(r for r in iter_records(out) if r.source_id == "15")
    assert rec.answer == "July 21 2017"
    assert "21 July 2017" in rec.alternative_answers
    assert len(rec.alternative_answers) == len(set(rec.alternative_answers))
    with pytest.raises(ValueError, match="unknown RGB variant"):
        prepare_rgb(RGB, tmp_path / "x.jsonl", variants=("bogus",))


# ------------------------------------------------------------------------------------------------ NQ


@needs_data
def test_nq_sample(tmp_path):
    out, stats = prepare_nq(NQ, tmp_path / "nq.jsonl", n=100, seed=0)
    again, _ = prepare_nq(NQ, tmp_path / "nq2.jsonl", n=100, seed=0)
    assert out.read_bytes() == again.read_bytes()
    records = reread(out)
    assert len(records) == 100 == stats["written"] and stats["read"] == 2655
    raw = raw_lines(NQ)
    for rec in records:
        src = raw[int(rec.source_id) - 1]  # no blank lines in the file: line number = row + 1
        assert rec.interaction_id == f"nq-{rec.source_id}" and rec.domain == "nq"
        assert rec.query == src["question"].strip()
        assert rec.answer == src["answers"][0] and set(rec.gold_answers) == set(src["answers"])
        assert [p.page_result for p in rec.search_results] == [c["text"].strip() for c in src["ctxs"]]
        assert [p.page_name for p in rec.search_results] == [c["title"] for c in src["ctxs"]]
        assert rec.gold_page_urls == [p.page_url for p in rec.search_results]


# ------------------------------------------------------------------------------------------------ CRAG


@needs_data
def test_crag_filters_and_corpus(tmp_path):
    raw = raw_lines(CRAG)
    (questions, corpus), stats = prepare_crag(CRAG, tmp_path / "all")
    records = reread(questions)
    assert [r.interaction_id for r in records] == [r["interaction_id"] for r in raw]
    assert stats["written"] == 10 and stats["bad"] == 0 and stats["pages"] == 50
    assert all(len(r.search_results) == 5 for r in records)  # pages kept: per-question mode reads them

    pages = [json.loads(line) for line in corpus.read_text(encoding="utf-8").splitlines()]
    # the input pages as the CRAG reader normalises them
    raw_pages = {r["interaction_id"]: [SearchResult.model_validate(s) for s in r["search_results"]] for r in raw}
    distinct = {(p.page_url, hashlib.sha1(p.page_result.encode()).hexdigest()) for ps in raw_pages.values() for p in ps}
    assert len(pages) == len(distinct) == stats["distinct_pages"] < 50
    assert len({(p["page_url"], hashlib.sha1(p["page_result"].encode()).hexdigest()) for p in pages}) == len(pages)
    assert len({p["page_id"] for p in pages}) == len(pages)
    for p in pages:
        assert set(p) == {"page_id", "page_name", "page_url", "page_last_modified", "page_snippet", "page_result", "question_ids"}
        expected = [qid for qid, ps in raw_pages.items() if any(
            s.page_url == p["page_url"] and s.page_result == p["page_result"] for s in ps)]
        assert p["question_ids"] == expected
    # every page of every question is in the corpus under its page_id
    ids = {p["page_id"] for p in pages}
    assert all(s.page_id in ids for r in records for s in r.search_results)

    # all 10 example records are split 1 (public test); 4 are static
    (q, _), s = prepare_crag(CRAG, tmp_path / "test", split="public_test")
    assert s["written"] == 10
    (q, c), s = prepare_crag(CRAG, tmp_path / "train", split="train", static_only=True, n=100)
    assert s["written"] == 0 and q.read_text() == "" and c.read_text() == ""
    (q, _), s = prepare_crag(CRAG, tmp_path / "static", split=1, static_only=True)
    static = reread(q)
    assert len(static) == 4 == sum(r["static_or_dynamic"] == "static" for r in raw)
    assert all(r.static_or_dynamic == "static" and r.split == 1 for r in static)

    # sampling: n of the matching records, in input order, deterministic per seed
    (q1, c1), s1 = prepare_crag(CRAG, tmp_path / "n1", static_only=True, n=2, seed=5)
    (q2, c2), _ = prepare_crag(CRAG, tmp_path / "n2", static_only=True, n=2, seed=5)
    assert q1.read_bytes() == q2.read_bytes() and c1.read_bytes() == c2.read_bytes()
    sample = [r.interaction_id for r in reread(q1)]
    order = [r.interaction_id for r in static]
    assert len(sample) == 2 and set(sample) <= set(order)
    assert sorted(sample, key=order.index) == sample
    seeds = {tuple(r.interaction_id for r in reread(prepare_crag(CRAG, tmp_path / f"s{k}", n=3, seed=k)[0][0])) for k in range(3)}
    assert len(seeds) > 1  # the seed matters


def test_crag_split_field_missing(tmp_path):
    src = tmp_path / "crag.jsonl"
    lines = [
        {"interaction_id": "a", "query": "q a", "answer": "x", "split": 0, "static_or_dynamic": "static"},
        {"interaction_id": "b", "query": "q b", "answer": "y", "split": 1, "static_or_dynamic": "static"},
        {"interaction_id": "c", "query": "q c", "answer": "z", "static_or_dynamic": "static"},
        {"interaction_id": "d", "query": "q d", "answer": "w", "split": "0", "static_or_dynamic": "real-time"},
    ]
    src.write_text("\n".join(json.dumps(x) for x in lines) + "\n{not json\n", encoding="utf-8")
    ids = lambda q: [r.interaction_id for r in iter_records(q)]  # noqa: E731
    report = ReadReport(str(src))
    (q, _), s = prepare_crag(src, tmp_path / "none", report=report)
    assert ids(q) == ["a", "b", "c", "d"] and s["bad"] == 1 and report.bad[0].line == 5
    (q, _), _ = prepare_crag(src, tmp_path / "dev", split="dev")
    assert ids(q) == ["a", "d"]
    (q, _), _ = prepare_crag(src, tmp_path / "dev_static", split="validation", static_only=True)
    assert ids(q) == ["a"]
    (q, _), _ = prepare_crag(src, tmp_path / "test", split="test")
    assert ids(q) == ["b"]
    with pytest.raises(DataError, match=r"crag\.jsonl:5"):
        prepare_crag(src, tmp_path / "fail", on_bad="fail")


def test_normalise_split():
    assert normalise_split(None) is None
    assert [normalise_split(s) for s in ("train", "validation", "dev", "0", 0)] == [0] * 5
    assert [normalise_split(s) for s in ("test", "public_test", "1", 1)] == [1] * 4
    with pytest.raises(ValueError):
        normalise_split("bogus")


# ------------------------------------------------------------------------------------------------ bad lines


def _write(path: Path, lines: list) -> Path:
    path.write_text("".join((x if isinstance(x, str) else json.dumps(x)) + "\n" for x in lines), encoding="utf-8")
    return path


BAD_CASES = {
    "squad": (
        prepare_squad2,
        [
            {"id": "s1", "title": "T", "context": "Paris is in France.", "question": "Where is Paris?", "answers": ["France"],
             "is_impossible": False},
            "{bad json",
            {"id": "s2", "title": "T", "context": "Paris is in France.", "answers": [], "is_impossible": True},
            {"id": "s3", "title": "T", "context": "Lyon is in France.", "question": "Who?", "answers": [], "is_impossible": True},
        ],
    ),
    "rgb": (
        prepare_rgb,
        [
            "[1, 2",
            {"id": 1, "answer": "x", "fakeanswer": "y", "positive": ["x"], "positive_wrong": ["y"], "negative": ["n"]},
            {"id": 2, "query": "what?", "answer": "x", "fakeanswer": "y", "positive": ["x is it"], "positive_wrong": ["y is it"],
             "negative": ["n"]},
            {"id": 3, "query": "what?", "answer": "z", "fakeanswer": "w", "positive": ["z"], "positive_wrong": ["w"], "negative": ["m"]},
        ],
    ),
    "nq": (
        prepare_nq,
        [
            {"question": "who?", "answers": ["A"], "ctxs": [{"title": "T", "text": "A did it."}]},
            {"answers": ["B"], "ctxs": [{"title": "T", "text": "B did it."}]},
            "not json at all",
            {"question": "when?", "answers": ["1990"], "ctxs": [{"title": "U", "text": "In 1990.", "isgold": True}]},
        ],
    ),
}


@pytest.mark.parametrize("name", sorted(BAD_CASES))
def test_bad_lines_are_reported_with_file_and_line(tmp_path, name):
    convert, lines = BAD_CASES[name]
    src = _write(tmp_path / f"{name}.jsonl", lines)
    bad_lines = sorted(i for i, x in enumerate(lines, start=1) if isinstance(x, str) or not (x.get("question") or x.get("query")))

    report = ReadReport("")
    out, stats = convert(src, tmp_path / "out.jsonl", report=report)
    assert [b.line for b in report.bad] == bad_lines
    assert all(b.path == str(src) for b in report.bad)
    assert all(f"{name}.jsonl:{b.line}:" in str(b) for b in report.bad)
    assert any("bad JSON" in b.reason for b in report.bad)
    assert any("question" in b.reason or "query" in b.reason for b in report.bad)
    assert stats["bad"] == 2 and report.good == 2
    records = reread(out)
    assert len({r.source_id for r in records}) == 2  # both good questions came through

    with pytest.raises(DataError, match=rf"{name}\.jsonl:{bad_lines[0]}:"):
        convert(src, tmp_path / "fail.jsonl", on_bad="fail")


def test_squad_small_file_pages(tmp_path):
    """A question's own paragraph plus the article's others (at most ``other_paragraphs``); never another article's."""
    lines = [
        {"id": f"q{i}", "title": "A" if i < 6 else "B", "context": f"Paragraph {i} says {i}.", "question": f"What does {i} say?",
         "answers": [str(i)], "is_impossible": False}
        for i in range(8)
    ]
    src = _write(tmp_path / "s.jsonl", lines)
    out, _ = prepare_squad2(src, tmp_path / "o.jsonl", other_paragraphs=2)
    for rec in reread(out):
        i = int(rec.source_id[1:])
        texts = [p.page_result for p in rec.search_results]
        assert f"Paragraph {i} says {i}." in texts
        assert len(texts) == (3 if i < 6 else 2)
        assert all(p.page_name.startswith("A " if i < 6 else "B ") for p in rec.search_results)


# ------------------------------------------------------------------------------------------------ script


@needs_data
@pytest.mark.system  # starts a child process
def test_script_runs_with_brief_arguments(tmp_path):
    result = subprocess.run(
        [sys.executable, str(REPO / "scripts" / "prepare_crag.py"), "--split", "train", "--static-only", "--n", "100",
         "--out", str(tmp_path)],
        capture_output=True, text=True, timeout=60, cwd=tmp_path,
    )
    assert result.returncode == 0, result.stderr
    assert "wrote 0 question record(s)" in result.stdout  # the example records are all public-test
    assert (tmp_path / "crag_questions.jsonl").exists() and (tmp_path / "crag_corpus.jsonl").exists()

    result = subprocess.run(
        [sys.executable, str(REPO / "scripts" / "prepare_crag.py"), "--split", "test", "--static-only", "--n", "3",
         "--out", str(tmp_path / "t")],
        capture_output=True, text=True, timeout=60,
    )
    assert result.returncode == 0, result.stderr
    assert "wrote 3 question record(s)" in result.stdout
    assert len(reread(tmp_path / "t" / "crag_questions.jsonl")) == 3


# ------------------------------------------------------------------------------------------------ HotpotQA


@needs_data
def test_hotpotqa_twins_split_by_question(tmp_path):
    halves = {}
    for split in ("dev", "test"):
        out, stats = prepare_hotpotqa(HOTPOT, tmp_path / f"{split}.jsonl", split=split)
        halves[split] = reread(out)
        assert stats["bad"] == 0 and stats["written"] == 2 * stats["questions"]
        assert stats["answerable"] == stats["unanswerable"] == stats["questions"]
    dev_ids = {r.source_id for r in halves["dev"]}
    test_ids = {r.source_id for r in halves["test"]}
    assert not dev_ids & test_ids and len(dev_ids) + len(test_ids) == 100
    assert 35 <= len(test_ids) <= 65  # a split by hash of the question, about half each
    raw = {q["question"].strip(): q for q in json.loads(HOTPOT.read_text())}
    for rec in halves["test"]:
        src = raw[rec.query]
        names = [p.page_name for p in rec.search_results]
        support = set(src["supporting_facts"]["title"])
        n_paragraphs = len(src["context"]["title"])  # ten, or fewer in a few questions
        assert rec.question_type == src["type"] and rec.domain == "hotpotqa"
        if rec.variant == "answerable":
            assert len(names) == n_paragraphs and support <= set(names) and rec.answer == src["answer"]
            gold_names = {p.page_name for p in rec.search_results if p.page_url in rec.gold_page_urls}
            assert gold_names == support and len(rec.gold_page_urls) == len(support)
        else:  # exactly one supporting paragraph gone, nothing else
            assert rec.answer == IDK and len(names) == n_paragraphs - 1 and rec.removed_paragraph in support
            assert rec.removed_paragraph not in names and rec.gold_page_urls == []
    again, _ = prepare_hotpotqa(HOTPOT, tmp_path / "again.jsonl", split="test")
    assert again.read_bytes() == (tmp_path / "test.jsonl").read_bytes()


def test_hotpotqa_reads_both_layouts_and_reports_bad_items(tmp_path):
    good = {"question": "Which city?", "answer": "Paris", "type": "bridge",
            "supporting_facts": [["A", 0], ["B", 0]], "context": [["A", ["A is in B."]], ["B", [" B is Paris."]]]}
    columns = {**good, "question": "Which town?", "supporting_facts": {"title": ["A"], "sent_id": [0]},
               "context": {"title": ["A", "C"], "sentences": [["A is a town."], ["C."]]}}
    bad_support = {**good, "question": "Bad?", "supporting_facts": [["Z", 0]]}
    src = tmp_path / "hotpot.json"
    src.write_text(json.dumps([good, columns, bad_support, 7]))
    report = ReadReport(str(src))
    out, stats = prepare_hotpotqa(src, tmp_path / "out.jsonl", report=report)
    records = reread(out)
    assert [(r.query, r.variant) for r in records] == [
        ("Which city?", "answerable"), ("Which city?", "unanswerable"),
        ("Which town?", "answerable"), ("Which town?", "unanswerable")]
    assert records[0].search_results[1].page_result == "B is Paris."
    assert sorted((b.line, b.reason) for b in report.bad) == [
        (3, "a supporting paragraph is not in the context"), (4, "item is not a JSON object")]
    with pytest.raises(ValueError, match="split must be"):
        prepare_hotpotqa(src, tmp_path / "x.jsonl", split="train")
