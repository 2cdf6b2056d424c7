"""The one-page families (SubjQA, QuAIL, PubMedQA) on real slices of the shared data and on small
hand-written files: gold answers, pages, the dev/test halves and bad lines."""

from __future__ import annotations

import ast
import json
from collections import defaultdict
from pathlib import Path

import pytest
from typer.testing import CliRunner

from agentic_rag.cli import app
from agentic_rag.datasets.crag import IDK, DataError, ReadReport
from agentic_rag.datasets.prepare import prepare_pubmedqa, prepare_quail, prepare_subjqa
from testkit import REPO
from testkit.shared_data import reread

DATA = REPO.parent / "shared" / "data"
SUBJQA = DATA / "subjqa" / "subjqa_dev_1557.jsonl"
QUAIL = DATA / "quail" / "quail_dev_2164.jsonl"
PUBMEDQA = DATA / "pubmedqa" / "pubmedqa_pqal_1000.jsonl"
CONVERTERS = {"subjqa": (prepare_subjqa, SUBJQA), "quail": (prepare_quail, QUAIL), "pubmedqa": (prepare_pubmedqa, PUBMEDQA)}
TOKEN = " ANSWERNOTFOUND"


def shared_lines(path: Path) -> list[str]:
    if not path.is_file():
        pytest.skip(f"{path} not found: shared evaluation data (see ../shared/data/SOURCES.md)")
    return [line for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def write_slice(path: Path, lines: list[str]) -> Path:
    path.write_text("".join(line + "\n" for line in lines), encoding="utf-8")
    return path


def pair_key(row: dict) -> tuple[str, str]:
    return row["question"].strip(), row["review"]


@pytest.fixture(scope="module")
def subjqa_slice(tmp_path_factory):
    """The first 150 rows, every row of a (question, review) pair annotated twice, every span that runs into
    the token: the file's hard cases, in file order."""
    lines = shared_lines(SUBJQA)
    rows = [json.loads(line) for line in lines]
    pairs = defaultdict(list)
    for i, r in enumerate(rows):
        pairs[pair_key(r)].append(i)
    repeated = {i for ids in pairs.values() if len(ids) > 1 for i in ids}
    into_token = {i for i, r in enumerate(rows) if r["human_ans_spans"] != "ANSWERNOTFOUND"
                  and ast.literal_eval(r["human_ans_indices"])[1] > len(r["review"]) - len(TOKEN)}
    keep = sorted(set(range(150)) | repeated | into_token)
    src = write_slice(tmp_path_factory.mktemp("subjqa") / "subjqa.jsonl", [lines[i] for i in keep])
    return src, [rows[i] for i in keep]


def test_subjqa_gold_is_the_span_its_indices_cut_from_the_review(tmp_path, subjqa_slice):
    src, rows = subjqa_slice
    out, stats = prepare_subjqa(src, tmp_path / "out.jsonl")
    records = reread(out)
    by_pair = defaultdict(list)
    for r in rows:
        by_pair[pair_key(r)].append(r)
    # the indices count characters of the review as distributed, token included: every unanswerable row's
    # indices point at its ANSWERNOTFOUND, and every review ends with it
    assert all(r["review"].endswith(TOKEN) for r in rows)
    assert all(r["review"][slice(*ast.literal_eval(r["human_ans_indices"]))] == "ANSWERNOTFOUND"
               for r in rows if r["human_ans_spans"] == "ANSWERNOTFOUND")
    disagreeing = [k for k, rs in by_pair.items() if len({r["human_ans_spans"] == "ANSWERNOTFOUND" for r in rs}) > 1]
    assert stats["bad"] == 0 and stats["read"] == len(rows) and stats["pairs"] == len(by_pair)
    assert stats["repeated_pairs"] == sum(len(rs) > 1 for rs in by_pair.values()) == 70
    assert stats["disagreeing_dropped"] == len(disagreeing) == 27
    assert stats["spans_clipped"] == 6 and stats["written"] == len(records) == len(by_pair) - 27
    assert {(r.query, r.search_results[0].page_result + TOKEN) for r in records} == set(by_pair) - set(disagreeing)

    tokenised = 0
    for rec in records:
        group = by_pair[(rec.query, rec.search_results[0].page_result + TOKEN)]
        page = rec.search_results[0]
        assert len(rec.search_results) == 1 and not page.page_result.endswith("ANSWERNOTFOUND")
        assert rec.interaction_id == f"subjqa-{group[0]['q_review_id']}" and rec.source_id == group[0]["q_review_id"]
        assert rec.domain == group[0]["domain"] and rec.source == "subjqa" and rec.annotators == len(group)
        assert page.page_url == f"subjqa://{group[0]['domain']}/{group[0]['review_id']}"
        if group[0]["human_ans_spans"] == "ANSWERNOTFOUND":
            assert rec.answer == IDK and rec.question_type == "unanswerable" and rec.gold_page_urls == []
            continue
        assert rec.question_type == "simple" and rec.gold_page_urls == [page.page_url]
        review = page.page_result
        cuts = []
        for r in group:
            start, end = ast.literal_eval(r["human_ans_indices"])
            cuts.append(review[start:min(end, len(review))].strip())
            tokenised += cuts[-1] != r["human_ans_spans"]
        assert rec.answer == cuts[0] and set(rec.gold_answers) == set(cuts)
        assert all(gold in review for gold in rec.gold_answers)  # each gold is the review's own text
    assert tokenised > 0  # the annotated span text differs from the review's in some rows; the gold never does
    # a tokenised span ("O'Reilly 's book") is the review's own spelling in the gold
    rec = next(r for r in records if r.answer.startswith("I was fascinated by Bill O'Reilly's book"))
    assert "O'Reilly 's" not in rec.answer


def test_subjqa_sample_is_half_unanswerable_and_deterministic(tmp_path, subjqa_slice):
    src, _ = subjqa_slice
    a, stats = prepare_subjqa(src, tmp_path / "a.jsonl", n=40, seed=3)
    b, _ = prepare_subjqa(src, tmp_path / "b.jsonl", n=40, seed=3)
    c, _ = prepare_subjqa(src, tmp_path / "c.jsonl", n=40, seed=4)
    assert a.read_bytes() == b.read_bytes() != c.read_bytes()
    assert stats["written"] == 40 and stats["unanswerable"] == 20 == sum(r.is_unanswerable for r in reread(a))


def test_quail_gold_is_the_correct_option_and_unanswerable_is_i_dont_know(tmp_path):
    lines = shared_lines(QUAIL)[:300]
    rows = {r["id"]: r for r in map(json.loads, lines)}
    out, stats = prepare_quail(write_slice(tmp_path / "quail.jsonl", lines), tmp_path / "out.jsonl")
    records = reread(out)
    assert stats["bad"] == 0 and len(records) == 300 == stats["written"]
    unanswerable = [r for r in records if r.question_type == "Unanswerable"]
    assert unanswerable and stats["unanswerable"] == len(unanswerable) == sum(
        r["question_type"] == "Unanswerable" for r in rows.values())
    for rec in records:
        src = rows[rec.source_id]
        page = rec.search_results[0]
        assert len(rec.search_results) == 1 and page.page_result == src["context"].strip()
        assert rec.question_type == src["question_type"] and rec.domain == src["domain"]
        assert page.page_url == f"quail://{src['context_id']}" and page.page_name == src["metadata"]["title"]
        assert rec.alternative_answers == []
        if rec.question_type == "Unanswerable":
            assert rec.answer == IDK and rec.gold_page_urls == []
        else:
            assert rec.answer == src["answers"][int(src["correct_answer_id"])].strip()
            assert rec.answer.lower() != "not enough information" and rec.gold_page_urls == [page.page_url]


def test_pubmedqa_pages_hold_the_abstract_and_never_the_long_answer(tmp_path):
    lines = shared_lines(PUBMEDQA)[:150]
    rows = {r["pubid"]: r for r in map(json.loads, lines)}
    src = write_slice(tmp_path / "pubmedqa.jsonl", lines)
    out, stats = prepare_pubmedqa(src, tmp_path / "out.jsonl")
    records = reread(out)
    maybe = sum(r["final_decision"] == "maybe" for r in rows.values())
    assert maybe and stats["maybe_dropped"] == maybe and stats["maybe"] == 0
    assert len(records) == 150 - maybe and stats["unanswerable"] == 0
    for rec in records:
        raw = rows[rec.source_id]
        page = rec.search_results[0]
        assert len(rec.search_results) == 1 and rec.question_type == "yes_no" and rec.domain == "pubmedqa"
        assert rec.answer == raw["final_decision"] in ("yes", "no") and rec.query == raw["QUESTION"]
        assert raw["LONG_ANSWER"] not in page.page_result and raw["LONG_ANSWER"][:60] not in page.page_result
        assert all(f"{label}: {text.strip()}" in page.page_result for label, text in zip(raw["LABELS"], raw["CONTEXTS"]))
        assert rec.gold_page_urls == [page.page_url] == [f"pubmedqa://{rec.source_id}"]
    kept, stats = prepare_pubmedqa(src, tmp_path / "maybe.jsonl", keep_maybe=True)
    with_maybe = reread(kept)
    assert len(with_maybe) == 150 and stats["maybe"] == maybe and stats["maybe_dropped"] == 0
    assert all(r.answer == "maybe" and not r.is_unanswerable for r in with_maybe if rows[r.source_id]["final_decision"] == "maybe")


@pytest.mark.parametrize("name", sorted(CONVERTERS))
def test_dev_and_test_halves_are_disjoint_and_stable_whichever_rows_the_file_holds(tmp_path, name):
    convert, path = CONVERTERS[name]
    lines = shared_lines(path)[:400]
    full = write_slice(tmp_path / "full.jsonl", lines)
    part = write_slice(tmp_path / "part.jsonl", lines[1::3])  # other rows: each question's half stays
    halves = {split: reread(convert(full, tmp_path / f"{split}.jsonl", split=split)[0]) for split in ("dev", "test", "all")}
    dev, test = ({r.interaction_id for r in halves[s]} for s in ("dev", "test"))
    assert dev and test and not dev & test and dev | test == {r.interaction_id for r in halves["all"]}
    assert 0.35 < len(dev) / (len(dev) + len(test)) < 0.65
    for split, ids, other in (("dev", dev, test), ("test", test, dev)):
        again = (tmp_path / f"{split}.jsonl").read_bytes()
        assert convert(full, tmp_path / "again.jsonl", split=split)[0].read_bytes() == again
        records = {r.interaction_id: r for r in halves[split]}
        fewer = reread(convert(part, tmp_path / f"part_{split}.jsonl", split=split)[0])
        assert fewer and not {r.interaction_id for r in fewer} & other
        for rec in fewer:  # the same record (a SubjQA pair may have lost an annotator, or its disagreement)
            if name != "subjqa":
                assert rec == records[rec.interaction_id]
            elif rec.interaction_id in ids:
                assert rec.search_results == records[rec.interaction_id].search_results
    with pytest.raises(ValueError, match="split must be"):
        convert(full, tmp_path / "x.jsonl", split="train")


SUBJ = {"question": "Is it good?", "review": "It is very good. ANSWERNOTFOUND", "human_ans_spans": "very good",
        "human_ans_indices": "(6, 15)", "domain": "books", "q_review_id": "a1", "review_id": "r1"}
QUAIL_ROW = {"id": "q1", "question_type": "Factual", "question": "Who ran?", "answers": ["Ann", "Bo", "not enough information", "Cy"],
             "correct_answer_id": "0", "domain": "news", "context_id": "c1", "context": "Ann ran home."}
PUBMED_ROW = {"pubid": "1", "QUESTION": "Does it work?", "CONTEXTS": ["It was tried.", "It worked."],
              "LABELS": ["METHODS", "RESULTS"], "final_decision": "yes", "LONG_ANSWER": "It works."}
BAD_CASES = {  # each: the converter, its lines (a str is written as it is), the bad lines' reasons
    "subjqa": (prepare_subjqa, [
        SUBJ, "{not json", {**SUBJ, "question": "", "q_review_id": "a2"},
        {**SUBJ, "question": "Is it bad?", "human_ans_indices": "6-15"},
        {**SUBJ, "question": "Is it cheap?", "human_ans_indices": "(40, 60)"},
        {**SUBJ, "question": "Is it long?", "human_ans_spans": "ANSWERNOTFOUND", "q_review_id": "a3"},
    ], {2: "bad JSON", 3: "question", 4: "human_ans_indices is not", 5: "cut no text"}),
    "quail": (prepare_quail, [
        QUAIL_ROW, {**QUAIL_ROW, "id": "q2", "correct_answer_id": "2"}, "[1,",
        {**QUAIL_ROW, "id": "q3", "question_type": "Unanswerable", "correct_answer_id": "2"},
        {**QUAIL_ROW, "id": "q4", "question_type": "Unanswerable"}, {**QUAIL_ROW, "id": "q5", "correct_answer_id": "7"},
        {**QUAIL_ROW, "id": "q6", "question": None},
    ], {2: "correct option is 'not enough information'", 3: "bad JSON", 5: "of type Unanswerable", 6: "names no option",
        7: "question"}),
    "pubmedqa": (prepare_pubmedqa, [
        PUBMED_ROW, {**PUBMED_ROW, "pubid": "2", "final_decision": "perhaps"}, {**PUBMED_ROW, "pubid": "3", "LABELS": ["X"]},
        "nope", {**PUBMED_ROW, "pubid": "4", "QUESTION": " "}, {**PUBMED_ROW, "pubid": ""},
        {**PUBMED_ROW, "pubid": "5", "final_decision": "NO", "LABELS": []},
    ], {2: "final_decision is perhaps", 3: "LABELS names 1 sections", 4: "bad JSON", 5: "QUESTION", 6: "pubid"}),
}


@pytest.mark.parametrize("name", sorted(BAD_CASES))
def test_bad_lines_are_reported_with_their_line_numbers(tmp_path, name):
    convert, lines, reasons = BAD_CASES[name]
    src = tmp_path / f"{name}.jsonl"
    src.write_text("".join((x if isinstance(x, str) else json.dumps(x)) + "\n" for x in lines), encoding="utf-8")
    report = ReadReport("")
    out, stats = convert(src, tmp_path / "out.jsonl", report=report)
    assert [b.line for b in report.bad] == sorted(reasons) and stats["bad"] == len(reasons)
    for b in report.bad:
        assert reasons[b.line] in b.reason and str(b).startswith(f"{src}:{b.line}: ")
    records = reread(out)
    assert report.good == len(lines) - len(reasons) == len(records) == stats["written"]
    with pytest.raises(DataError, match=rf"{name}\.jsonl:{min(reasons)}:"):
        convert(src, tmp_path / "fail.jsonl", on_bad="fail")
    if name == "subjqa":  # the token is gone from the page, the gold is the review's own text
        assert [(r.answer, r.search_results[0].page_result) for r in records] == [
            ("very good", "It is very good."), (IDK, "It is very good.")]
    if name == "pubmedqa":  # sections in order after their labels; no labels, no prefix; the decision lower-cased
        assert [(r.answer, r.search_results[0].page_result) for r in records] == [
            ("yes", "METHODS: It was tried.\n\nRESULTS: It worked."), ("no", "It was tried.\n\nIt worked.")]


@pytest.mark.parametrize("name", sorted(CONVERTERS))
def test_prepare_a_missing_input_is_one_line_exit_2(tmp_path, name):
    res = CliRunner().invoke(app, ["prepare", name, "--input", str(tmp_path / "missing.jsonl"),
                                   "--out", str(tmp_path / "out.jsonl")])
    message = res.stderr.strip()
    assert res.exit_code == 2 and message.startswith("error: dataset ") and "\n" not in message, res.output
    assert "missing.jsonl does not exist" in message and not (tmp_path / "out.jsonl").exists()


@pytest.mark.parametrize("family", sorted(CONVERTERS))
def test_the_named_benchmark_halves(tmp_path, family):
    from agentic_rag.datasets.prepare.benchmarks import BENCHMARK_DATASETS, benchmark_dataset

    shared_lines(CONVERTERS[family][1])
    halves = {}
    for half in ("dev", "test"):
        name = f"{family}_{half}"
        assert name in BENCHMARK_DATASETS
        halves[half] = reread(Path(benchmark_dataset(name, tmp_path, DATA)))
        assert len(halves[half]) == 200
        assert sum(r.is_unanswerable for r in halves[half]) == (0 if family == "pubmedqa" else 100)
    assert not {r.source_id for r in halves["dev"]} & {r.source_id for r in halves["test"]}
