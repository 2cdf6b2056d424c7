"""HotpotQA's evidence layouts (``prepare hotpotqa --layout``): the same questions on other pages, on the shared
data and on small hand-written files."""

from __future__ import annotations

import hashlib
import html
import json
import re
from collections import defaultdict
from pathlib import Path

import pytest
from typer.testing import CliRunner

from agentic_rag.cli import app
from agentic_rag.datasets.crag import IDK, ReadReport
from agentic_rag.datasets.prepare import prepare_hotpotqa
from agentic_rag.datasets.prepare.layouts import COOKIE_NOTICE, LAYOUTS, ONE_PAGE, SNIPPET_WORDS, snippet
from agentic_rag.ingest.pages import html_to_text, looks_like_html
from agentic_rag.training.sets import base_id
from testkit.shared_data import DATA, HOTPOT, needs_data, reread

MORE = DATA / "hotpotqa" / "hotpot_dev_distractor_more685.jsonl"
# the default output of the first-100 file before layouts were added (bytes, sha1): the default must not move
TODAY = (1868558, "87679207237193abd6e177ca3d8127c99acef662")
FULL_TEXT = ("distractors", "html_pages", "long_page")
FIRST, PER_PART = 40, 25  # the questions the layout fixture prepares from each file (each with its twins)


def words(text: str) -> str:
    """Text as its words alone: what escaping, spacing and format characters leave the same."""
    return " ".join(re.findall(r"\w+", html.unescape(text)))


def layout_of(record) -> str:
    return getattr(record, "layout", "distractors")


def context(src: dict) -> tuple[list[tuple[str, list[str]]], dict[str, list[int]]]:
    """(title, sentences) per paragraph and the supporting sent ids per title, from either file layout."""
    c, f = src["context"], src["supporting_facts"]
    pairs = list(zip(c["title"], c["sentences"])) if isinstance(c, dict) else [(t, s) for t, s in c]
    facts = list(zip(f["title"], f["sent_id"])) if isinstance(f, dict) else [tuple(x) for x in f]
    ids: dict[str, list[int]] = defaultdict(list)
    for title, sid in facts:
        ids[title].append(sid)
    return pairs, {t: sorted(set(v)) for t, v in ids.items()}


@pytest.fixture(scope="module")
def prepared(tmp_path_factory):
    """Every layout of a slice of each file (the first-100 file's first 40 questions; of the other, 25 of the
    original layout and 25 of the IRCoT-format copy, whose support is marked per paragraph only), with a twin
    per supporting page. (The whole first-100 file in every layout is test_the_default_layout_is_todays_output's.)"""
    if not HOTPOT.is_file() or not MORE.is_file():
        pytest.skip(f"shared HotpotQA data not found under {DATA} (see ../shared/data/SOURCES.md)")
    tmp = tmp_path_factory.mktemp("layouts")
    lines = MORE.read_text(encoding="utf-8").splitlines()
    per_paragraph = [i for i, line in enumerate(lines) if json.loads(line).get("note")]
    chosen = [i for i in range(len(lines)) if i not in set(per_paragraph)][:PER_PART] + per_paragraph[:PER_PART]
    more = tmp / "more.jsonl"
    more.write_text("".join(lines[i] + "\n" for i in chosen), encoding="utf-8")
    first = json.loads(HOTPOT.read_text(encoding="utf-8"))[:FIRST]
    first40 = tmp / "first40.json"
    first40.write_text(json.dumps(first), encoding="utf-8")
    raw = {q["question"].strip(): q for q in first}
    raw |= {q["question"].strip(): q for q in map(json.loads, (lines[i] for i in chosen))}
    records, stats = [], {}
    for name, src in (("first", first40), ("more", more)):
        out, stats[name] = prepare_hotpotqa(src, tmp / f"{name}.jsonl", layouts=LAYOUTS, each_removed=True)
        records += reread(out)
    extracted = {p.page_url: html_to_text(p.page_result) for r in records if layout_of(r) == "html_pages"
                 for p in r.search_results}
    return records, raw, stats, extracted


def page_texts(record, extracted: dict[str, str]) -> list[str]:
    """A record's page texts as a reader gets them: an HTML page's through the project's extraction."""
    return [extracted[p.page_url] if layout_of(record) == "html_pages" else p.page_result for p in record.search_results]


@needs_data
def test_the_default_layout_is_todays_output(tmp_path):
    runner = CliRunner()
    for name, extra in (("plain", []), ("named", ["--layout", "distractors"])):
        res = runner.invoke(app, ["prepare", "hotpotqa", "--input", str(HOTPOT), "--out", str(tmp_path / f"{name}.jsonl"), *extra])
        assert res.exit_code == 0, res.output
    plain = (tmp_path / "plain.jsonl").read_bytes()
    assert plain == (tmp_path / "named.jsonl").read_bytes()
    assert (len(plain), hashlib.sha1(plain).hexdigest()) == TODAY
    # in a file of every layout, the default's records are those lines, unchanged and without a layout field
    out, stats = prepare_hotpotqa(HOTPOT, tmp_path / "all.jsonl", layouts=LAYOUTS)
    lines = out.read_text(encoding="utf-8").splitlines(keepends=True)
    assert "".join(line for line in lines if "layout" not in json.loads(line)).encode() == plain
    assert stats["written"] == 5 * 200 and stats["layouts"] == list(LAYOUTS) and stats["bad"] == 0


@needs_data
def test_every_layout_holds_the_same_records_under_its_own_ids(prepared):
    records, raw, stats, _ = prepared
    assert stats["more"]["per_paragraph_support"] >= PER_PART  # the IRCoT-format questions, and one-sentence support
    by_layout = defaultdict(dict)
    for r in records:
        by_layout[layout_of(r)][r.interaction_id] = r
    base = by_layout["distractors"]
    assert len(base) == 3 * (FIRST + 2 * PER_PART) and not any("@" in i for i in base)
    for layout in LAYOUTS[1:]:
        recs = by_layout[layout]
        assert sorted(recs) == sorted(f"{i}@{layout}" for i in base)
        for rid, r in recs.items():
            twin = base[rid.removesuffix(f"@{layout}")]
            assert r.layout == layout and (r.query, r.answer, r.variant, r.removed_paragraph, r.source_id) == (
                twin.query, twin.answer, twin.variant, twin.removed_paragraph, twin.source_id)
            urls = [p.page_url for p in r.search_results]
            assert len(set(urls)) == len(urls) and all(u.startswith(f"hotpotqa://{layout}/") for u in urls)
            if layout in ONE_PAGE:
                assert len(urls) == 1 and r.gold_page_urls == ([] if r.is_unanswerable else urls)
            else:
                assert [p.page_name for p in r.search_results] == [p.page_name for p in twin.search_results]
                gold = {p.page_name for p in r.search_results if p.page_url in r.gold_page_urls}
                assert gold == {p.page_name for p in twin.search_results if p.page_url in twin.gold_page_urls}
                assert len(r.gold_page_urls) == len(twin.gold_page_urls)
            assert r.is_unanswerable == (r.answer == IDK) == (r.gold_page_urls == [])


@needs_data
def test_the_answerable_pages_keep_the_gold_answers_text(prepared):
    """A yes/no gold (comparison questions) is in no page; every other gold is in the supporting sentences of
    most questions, and a snippet of about 40 words loses it in a few."""
    records, _, _, extracted = prepared
    share = {}
    for layout in LAYOUTS:
        answerable = [r for r in records if layout_of(r) == layout and not r.is_unanswerable and r.answer not in ("yes", "no")]
        held = sum(any(words(r.answer) in words(t) for t in page_texts(r, extracted)) for r in answerable)
        share[layout] = held / len(answerable)
    assert all(share[layout] >= 0.99 for layout in (*FULL_TEXT, "support_only")), share
    assert 0.88 <= share["snippets"] < share["distractors"], share


@needs_data
def test_a_twin_lacks_the_removed_paragraphs_text_in_every_layout(prepared):
    """The words from the removed paragraph's first supporting sentence on (its supporting sentences alone in
    support_only) are in the answerable record's pages and in none of the twin's, unless another paragraph of
    the question carries them too (HotpotQA repeats a few: "Tara Strong" and "Tara Strong filmography")."""
    records, raw, _, extracted = prepared
    answerable = {(r.source_id, layout_of(r)): r for r in records if not r.is_unanswerable}
    twins = [r for r in records if r.is_unanswerable]
    repeated = 0
    for r in twins:
        layout = layout_of(r)
        pairs, ids = context(raw[r.query])
        sentences = dict(pairs)[r.removed_paragraph]
        marked = [i for i in ids[r.removed_paragraph] if i < len(sentences)]
        text = " ".join(sentences[i] for i in marked) if layout == "support_only" else " ".join(sentences[marked[0]:])
        lead = " ".join(words(text).split()[:12])
        assert any(lead in words(t) for t in page_texts(answerable[r.source_id, layout], extracted))
        if any(lead in words("".join(s)) for t, s in pairs if t != r.removed_paragraph):
            repeated += 1
            continue
        assert not any(lead in words(t) for t in page_texts(r, extracted)), (r.interaction_id, lead)
        assert r.removed_paragraph not in [p.page_name for p in r.search_results]
    assert repeated <= 0.02 * len(twins)


@needs_data
def test_html_pages_extract_to_their_paragraph_without_the_boilerplate(prepared):
    records, raw, _, extracted = prepared
    pages = {p.page_url: (r, p) for r in records if layout_of(r) == "html_pages" for p in r.search_results}
    menu_kept = 0
    for url, (r, p) in pages.items():
        paragraph = "".join(dict(context(raw[r.query])[0])[p.page_name])
        assert p.page_result.startswith("<!DOCTYPE html>") and looks_like_html(p.page_result)
        assert html.escape(paragraph.strip(), quote=False) in p.page_result
        text = extracted[url]
        assert words(paragraph) in words(text), url
        assert COOKIE_NOTICE not in text and "Accept all" not in text and "Terms of use" not in text, url
        menu_kept += "Random article" in text
    # a one-sentence paragraph is too little main text for the extractor, which then keeps the header and menu
    assert menu_kept <= 0.02 * len(pages)


@needs_data
def test_support_only_snippets_and_the_long_page_cut_as_they_say(prepared):
    records, raw, _, _ = prepared
    for r in records:
        pairs, ids = context(raw[r.query])
        sentences = dict(pairs)
        support = list(dict.fromkeys(ids))
        kept = [t for t in support if t != r.removed_paragraph]
        per_paragraph = all(len(sentences[t]) <= 1 and ids[t] == [0] for t in support)
        if layout_of(r) == "support_only":  # the supporting sentences (the whole paragraph where none is marked)
            [page] = r.search_results
            parts = [s.strip() for t in kept for i, s in enumerate(sentences[t]) if per_paragraph or i in ids[t]]
            assert page.page_result == " ".join(p for p in parts if p) and page.page_name == "; ".join(kept)
        elif layout_of(r) == "snippets":
            for p in r.search_results:
                cut = p.page_result.removeprefix("... ").removesuffix(" ...").split()
                assert len(cut) <= SNIPPET_WORDS and " ".join(cut) in " ".join(" ".join(sentences[p.page_name]).split())
                if p.page_name in support and not per_paragraph:  # the window starts at or before the support
                    first = sentences[p.page_name][ids[p.page_name][0]].split()
                    assert " ".join(first[:min(len(first), SNIPPET_WORDS)]) in " ".join(cut)
                elif p.page_name not in support:
                    assert not p.page_result.startswith("... ")
        elif layout_of(r) == "long_page":
            [page] = r.search_results
            titles = re.findall(r"^## (.+)$", page.page_result, flags=re.MULTILINE)
            names = [t for t, _ in pairs if t != r.removed_paragraph]
            distractors = [t for t in names if t not in support]
            assert sorted(titles) == sorted(names) and page.page_name == "; ".join(titles)
            assert [t for t in titles if t not in support] == distractors
            first = titles.index(kept[0])
            assert titles[first:first + len(kept)] == kept and first == len(distractors) - len(distractors) // 4


@needs_data
def test_the_named_layouts_benchmark(tmp_path):
    from agentic_rag.datasets.prepare.benchmarks import BENCHMARK_DATASETS, benchmark_dataset

    assert "hotpot_dev_layouts" in BENCHMARK_DATASETS
    records = reread(Path(benchmark_dataset("hotpot_dev_layouts", tmp_path, DATA)))
    dev = reread(Path(benchmark_dataset("hotpot_dev", tmp_path, DATA)))
    questions = list(dict.fromkeys(r.source_id for r in records))
    assert questions == list(dict.fromkeys(r.source_id for r in dev))[:50]
    assert len(records) == 50 * 2 * len(LAYOUTS)
    assert [layout_of(r) for r in records[:10]] == [layout for layout in LAYOUTS for _ in range(2)]


def test_an_unknown_layout_is_one_line_exit_2(tmp_path):
    src = tmp_path / "hotpot.json"
    src.write_text(json.dumps([{"question": "Q?", "answer": "A", "supporting_facts": [["T", 0]], "context": [["T", ["A."]]]}]))
    res = CliRunner().invoke(app, ["prepare", "hotpotqa", "--input", str(src), "--out", str(tmp_path / "out.jsonl"),
                                   "--layout", "snippets,bogus"])
    message = res.stderr.strip()
    assert res.exit_code == 2 and message.startswith("error: layout must be among distractors,") and "\n" not in message
    assert "bogus" in message and not (tmp_path / "out.jsonl").exists()


def test_layouts_of_a_small_file(tmp_path):
    """Sent ids pick the supporting sentences; one past the paragraph's end is left out, and a paragraph none
    of whose ids name a sentence is supported whole; bad items are still reported, once."""
    sentences = ["Alpha is a town.", " It lies on the river Beta.", " It has a mill."]
    good = {"_id": "a1", "question": "Which river?", "answer": "Beta", "type": "bridge",
            "supporting_facts": [["Alpha", 1], ["Gamma", 9]],
            "context": [["Delta", ["Delta is far away from everything, " + "very " * 60 + "far."]], ["Alpha", sentences],
                        ["Gamma", ["Gamma knows Alpha.", " Gamma is old."]]]}
    src = tmp_path / "hotpot.json"
    src.write_text(json.dumps([good, {"question": "No context?", "answer": "x", "supporting_facts": [["Z", 0]]}]))
    report = ReadReport(str(src))
    out, stats = prepare_hotpotqa(src, tmp_path / "out.jsonl", layouts=("support_only", "snippets", "long_page"),
                                  variants=("answerable",), report=report)
    support_only, snippets, long = reread(out)
    assert [b.line for b in report.bad] == [2] and stats["bad"] == 1 and stats["written"] == 3
    assert support_only.search_results[0].page_result == "It lies on the river Beta. Gamma knows Alpha. Gamma is old."
    assert support_only.interaction_id == "hotpotqa-a1-answerable@support_only"
    assert base_id(support_only.interaction_id) == base_id("hotpotqa-a1-unanswerable-1@long_page") == "hotpotqa-a1"
    delta, alpha, gamma = (p.page_result for p in snippets.search_results)
    assert delta.endswith(" ...") and len(delta.split()) == SNIPPET_WORDS + 1 and alpha == " ".join("".join(sentences).split())
    assert gamma == "Gamma knows Alpha. Gamma is old."
    assert long.search_results[0].page_result.startswith("## Delta\n\n") and "## Alpha" in long.search_results[0].page_result
    assert snippet(["one two three four five six"], [0], words=4) == "one two three four ..."
    assert snippet(["a b c.", " d e f.", " g h i."], [2], words=4) == "... f. g h i."
