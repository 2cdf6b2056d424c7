"""What the user sees is true (issue #27): answers keep their own quoted words, a heading does not turn
a supported answer into a refusal, a citation says apart whether its quote exists and whether it
states the answer, unusable gold answers are left out of the metrics, the judge reads a gold named
in other words, every metric has a plain name, and shown answers hold no word left dangling."""

from __future__ import annotations

import pytest

from agentic_rag.datasets.crag import CragRecord
from agentic_rag.runner import answer
from agentic_rag.text import strip_markup
from testkit import REPO
from testkit.fakes import ScriptedChat

MAYOR = "In 2019 the mayor of Springfield was Christine Lundberg, who served as mayor from 2011 to 2020."
BRONTE = "Anne Bronte wrote The Tenant of Wildfell Hall in 1848, after her first novel Agnes Grey."
RIVER = "The Mississippi takes its name from an Ojibwe word meaning Great Water."


@pytest.mark.parametrize("draft, shown", [
    # titles, nicknames and quoted phrases the sentence needs are the answer's own words
    ('She wrote "The Tenant of Wildfell Hall" and "Agnes Grey".',
     'She wrote "The Tenant of Wildfell Hall" and "Agnes Grey".'),
    ('She wrote "The Tenant of Wildfell Hall" and "Agnes Grey" [1].',
     'She wrote "The Tenant of Wildfell Hall" and "Agnes Grey".'),
    ("The river's name means \"Great Water\".", "The river's name means \"Great Water\"."),
    ('Bruce Springsteen is nicknamed "The Boss" [2].', 'Bruce Springsteen is nicknamed "The Boss".'),
    ('He called the plan "a bridge too far for the army" in 1944.',
     'He called the plan "a bridge too far for the army" in 1944.'),
    ('The motto is "in God we trust".', 'The motto is "in God we trust".'),
    # evidence: a quote after the answer sentence or a marker, or a source sentence beside its marker
    (f'Christine Lundberg was the mayor in 2019. [1] "{MAYOR[:-1]}"', "Christine Lundberg was the mayor in 2019."),
    (f'Christine Lundberg was the mayor in 2019 [1] "{MAYOR[:-1]}".', "Christine Lundberg was the mayor in 2019."),
    (f'Christine Lundberg was the mayor in 2019 [1]: "{MAYOR}"', "Christine Lundberg was the mayor in 2019"),
    (f'Source 1 says: "{MAYOR}" So the mayor was Christine Lundberg.', "So the mayor was Christine Lundberg."),
    (f'She wrote The Tenant of Wildfell Hall, "{BRONTE[:60]}" [1].', "She wrote The Tenant of Wildfell Hall."),
    (f'The name means Great Water ("{RIVER[:-1]}") [3].', "The name means Great Water."),
    # a run of evidence quotes side by side after the answer sentence goes as a whole
    (f'Christine Lundberg was the mayor in 2019 [1]. "{MAYOR[:-1]}" "{RIVER[:-1]}" "Dear reader, the mayor was her"',
     "Christine Lundberg was the mayor in 2019."),
    # a source sentence beside its marker that the sentence's grammar needs stays (removed, "said" would hang)
    ('He said "we will fight on the beaches" [1].', 'He said "we will fight on the beaches".'),
    # an answer that is only a quote keeps its words
    (f'According to Source 1, "{MAYOR}"', f'"{MAYOR}"'),
])
def test_strip_markup_keeps_the_answers_own_quoted_words(draft, shown):
    assert strip_markup(draft, [MAYOR, BRONTE, RIVER, "We will fight on the beaches."]) == shown


def _springfield(page: str) -> CragRecord:
    return CragRecord(interaction_id="heading", query="who was the mayor of springfield in 2019?", answer="christine lundberg",
                      search_results=[{"page_name": "Springfield", "page_url": "toy://springfield", "page_result": page}])


@pytest.mark.parametrize("heading", ["", "<h1>Springfield</h1>"])
def test_a_heading_does_not_turn_a_supported_answer_into_a_refusal(agent_settings, heading):
    page = f"<html><body><article>{heading}<p>The city lies in Oregon.</p><p>{MAYOR}</p></article></body></html>"
    reply = f'Christine Lundberg was the mayor in 2019. {{cite:Lundberg}} "{MAYOR[:-1]}"'
    result = answer("agent", agent_settings, record=_springfield(page), extra_config={"llm": ScriptedChat(replies=[reply])})
    assert result.status == "ok", result.explanation
    assert result.answer == "Christine Lundberg was the mayor in 2019."
    assert [c.quote for c in result.citations if c.verified] == [MAYOR[:-1]]


def test_support_window_matches_whole_sentences_not_a_heading_inside_the_quote():
    from agentic_rag.baug.signals import claim_in, support_window

    window = support_window(MAYOR[:-1], f"Springfield\nThe city lies in Oregon.\n{MAYOR}")
    assert "2019" in window and window.startswith("The city lies")
    assert claim_in("Ivan", "Ivan reached Category 5") and not claim_in("Ivan", "Ivanka Trump visited")


GREEK_PAGE = ("<html><body><article><p>The story of heaven and hell draws on writings from the Greek and Roman era.</p>"
              "<p>Its first version was written in ancient Greek by a scribe in Alexandria.</p></article></body></html>")
GREEK_Q = "what language did the story of heaven and hell first come out in?"


def test_a_citation_says_apart_whether_its_quote_exists_and_whether_it_states_the_answer(tmp_path):
    """The quote is real source text but names "Greek" only as an era: in the source, not stating the
    answer, so not verified; the text trace and the HTML page say both."""
    from typer.testing import CliRunner

    from agentic_rag.cli import app
    from agentic_rag.configuration import Settings
    from agentic_rag.datasets.crag import write_records
    from agentic_rag.eval.runner import run_eval
    from agentic_rag.trace.html import render_html
    from agentic_rag.trace.run import load_run

    era = "The story of heaven and hell draws on writings from the Greek and Roman era"
    first = "Its first version was written in ancient Greek by a scribe in Alexandria"
    replies = [f'It first came out in ancient Greek. {{cite:Roman era}} "{era}"',
               f'It first came out in ancient Greek. {{cite:Alexandria}} "{first}"']
    recs = []
    for i in range(2):
        rec = CragRecord(interaction_id=f"greek-{i}", query=GREEK_Q, answer="ancient greek",
                         search_results=[{"page_name": "Heaven and hell", "page_url": "toy://greek", "page_result": GREEK_PAGE}])
        recs.append(rec)
    settings = Settings.load(overrides={"ARTIFACTS_DIR": str(tmp_path / "artifacts")})
    write_records(recs, tmp_path / "greek.jsonl")
    out = tmp_path / "run"
    run_eval(tmp_path / "greek.jsonl", "baseline", settings, out, progress=False,
             extra_config={"llm": ScriptedChat(replies=replies, repeat_last=False)})
    run = load_run(out)
    era_cite, first_cite = (run.row(f"greek-{i}")["citations"] for i in range(2))
    assert [(c["quote"], c["in_source"], c["states_answer"], c["verified"]) for c in era_cite] == [(era, True, False, False)]
    assert [(c["in_source"], c["states_answer"]) for c in first_cite if c["quote"] == first] == [(True, True)]
    res = CliRunner().invoke(app, ["trace", str(out), "--id", "greek-0", "--brief"])
    assert res.exit_code == 0 and "quote in the source, does not state the answer" in " ".join(res.stdout.split())
    page = render_html(run)
    assert "quote in the source, does not state the answer" in page and "c.status" in page


def _row(qid, gold, status, judgement):
    return {"id": qid, "gold": gold, "status": status, "judgement": judgement,
            "judge_rule": "abstained" if status != "ok" else "exact", "em": 0.0, "f1": 0.0, "tokens": {"total": 100},
            "llm_calls": 1, "latency_ms": 10.0, "citations": [], "signals": {}, "reason": ""}


@pytest.mark.parametrize("gold", ["nan", "", "  ", "NaN", "null", None])
def test_a_gold_the_data_cannot_support_is_reported_and_left_out_of_the_metrics(gold):
    from agentic_rag.eval.metrics import summarize

    rows = [_row("a", "paris", "ok", "accurate"), _row("b", gold, "refuse", "missing"), _row("c", "i don't know", "refuse", "missing")]
    s = summarize(rows)
    assert s["unusable_gold"] == 1 and s["unusable_gold_ids"] == ["b"]
    assert s["n"] == 2 and (s["answerable"], s["unanswerable"]) == (1, 1)
    assert s["false_refusal_rate"] == 0.0 and s["accuracy"] == 0.5 and s["missing"] == 0.5
    assert "unusable_gold" not in summarize([rows[0], rows[2]])


def test_every_metric_has_a_plain_name_where_it_is_printed(tmp_path):

    from agentic_rag.eval.compare import SUMMARY_KEYS, to_markdown
    from agentic_rag.eval.metrics import METRICS, metric_label, metrics_markdown, run_summary

    rows = [_row("a", "paris", "ok", "accurate"), _row("b", "nan", "refuse", "missing")]
    summary = run_summary("agent", rows, 0)
    assert set(summary) <= set(METRICS), set(summary) - set(METRICS)
    assert summary["legend"]["a_fu"] == METRICS["a_fu"][0] and set(summary["legend"]) == set(summary) - {"legend"}
    for key in ("a_acc", "a_fu", "u_ref"):
        assert metric_label(key) != key and "Abstain-R1" in metric_label(key)
    md = to_markdown({"runs": [{"name": "agent", "summary": summary, "rows": []}], "paired": [], "common_ids": []})
    assert all(metric_label(k) in md for k in SUMMARY_KEYS)
    docs = REPO / "docs" / "metrics.md"
    assert docs.read_text() == metrics_markdown(), "docs/metrics.md is stale: run scripts/write_metrics_doc.py"


@pytest.mark.parametrize("prediction, gold", [
    ("Ivan formed in early September and reached Category 5 strength", "Hurricane Ivan"),
    ("It was Ivan.", "hurricane ivan"),
    ("The Mississippi is the longest river in the country.", "Mississippi River"),
    ("Landry's, a restaurant chain, bought it.", "Landry's, Inc."),
])
def test_the_judge_reads_a_gold_named_without_its_type_word(prediction, gold):
    from agentic_rag.eval.judge import judge

    j = judge(prediction, prediction, gold, [], False, question="")
    assert (j.label, j.rule) == ("accurate", "type_name")


@pytest.mark.parametrize("prediction, gold", [
    ("Ivanka Trump visited the coast.", "Hurricane Ivan"),
    ("It lies on the plain Vistula terraces.", "Vistula River"),  # an adjective before a noun
    ("He was born in Massillon, Ohio.", "Ohio Company"),  # a place's state
    ("Charles, Prince of Wales, opened it.", "Charles River"),  # an apposition
    ("Prince Charles opened it.", "Charles River"),  # inside a longer name
    ("Brooklyn, New York", "New York University"),  # not a type word whose bare name is the thing
])
def test_the_type_name_rule_refuses_other_things_with_the_same_name(prediction, gold):
    from agentic_rag.eval.judge import judge

    assert judge(prediction, prediction, gold, [], False, question="").label == "incorrect"


def test_rule_rates_count_each_rules_false_positives_and_negatives():
    from agentic_rag.eval.judge import rule_rates

    rows = [{"prediction": "Ivan formed early.", "short_answer": "Ivan formed early", "gold": "Hurricane Ivan", "hand_label": "accurate"},
            {"prediction": "Paris is the capital.", "short_answer": "Paris", "gold": "Paris", "hand_label": "accurate"},
            {"prediction": "Ivanka formed early.", "short_answer": "Ivanka", "gold": "Hurricane Ivan", "hand_label": "incorrect"}]
    rates = {r["rule"]: r for r in rule_rates(rows)}
    assert (rates["type_name"]["true_positives"], rates["type_name"]["false_positives"]) == (1, 0)
    assert rates["contains"]["false_negatives"] == 1 and rates["contains"]["false_negative_rate"] == 0.5
    assert rates["all rules"]["false_negatives"] == 0


@pytest.mark.parametrize("answer, hanging", [
    ("She wrote and.", True),
    ("The river's name means.", True),
    ("She wrote and Agnes Grey.", True),
    ("When imperialism does not impact social norms of a state, it is called.", True),
    ('He said "" and left.', True),
    ("It is made of ().", True),
    ('She wrote "The Tenant of Wildfell Hall" and "Agnes Grey".', False),
    ("Vitamin A.", False),
    ("Yes, it is.", False),
    ("Britain exploited the weakness of the state, and, while military power grew, it ruled.", False),
    ("Manuel Blum developed the so-called, speed-up theorem in 1974.", False),
])
def test_dangling_words_detector(answer, hanging):
    from agentic_rag.text import dangling_words

    assert bool(dangling_words(answer)) is hanging
    if not hanging:  # what strip_markup shows of a whole answer is whole too
        assert not dangling_words(strip_markup(answer))


def test_the_check_reads_committed_answers_from_tables_and_json(tmp_path):
    import gzip
    import json

    from studies.shown import dangling_report

    run = tmp_path / "agent_vs_baseline" / "toy"
    run.mkdir(parents=True)
    (run / "comparison.md").write_text(
        "| metric | agent |\n|---|---|\n| n | 2 |\n\n"
        "| question | gold | baseline: answer | baseline: reason | agent: answer | agent: reason |\n|---|---|---|---|---|---|\n"
        "| who? | x | She wrote and. | STOP | A \\| B were named in the long answer that goes on and … | STOP |\n")
    (tmp_path / "kit.json").write_text(json.dumps({"runs": {"a": {"questions": [
        {"interaction_id": "1", "prediction": "The river's name means."}, {"interaction_id": "2", "prediction": "Paris."}]}}}))
    (tmp_path / "pairs.json").write_text(json.dumps({"pairs": [{"gold": "x", "prediction": "wrote and."}]}))
    rows = [{"id": "q1", "prediction": "It was called."}, {"id": "q2", "prediction": "Agnes Grey."}]
    (run / "agent_results.jsonl.gz").write_bytes(gzip.compress("".join(json.dumps(r) + "\n" for r in rows).encode()))
    report = dangling_report(tmp_path)
    assert report["answers"] == 6
    assert sorted(d["answer"] for d in report["dangling"]) == ["It was called.", "She wrote and.", "The river's name means."]
