"""The check and reason-code registry (agentic_rag/checks.py) and what is derived from it: refusal wording,
the trace's check rows, telemetry and the docs; and explanations that do not contradict themselves."""


import pytest

from agentic_rag.baug.policy import Decision, Flags, decide
from agentic_rag.baug.refusal import EXPLANATIONS, INPUT_EXPLANATIONS, explain_refusal
from agentic_rag.checks import ABSTAIN, CHECKS, DRAFT_CHECKS, REASON_LIST, reasons_markdown
from agentic_rag.configuration import FIELD_SECTIONS, SECTIONS, Settings, unit_of
from agentic_rag.generator.finalize import build_record
from testkit import REPO

# the defaults whatever AGENTIC_RAG_PRESET says (COVERAGE_MIN 0), under the thresholds' policy these checks belong to
S = Settings.load(preset="default", overrides={"GATE_POLICY": "thresholds"})
REFUSALS = [r for r in REASON_LIST if r.action == ABSTAIN]
GOOD = {"overlap_est": 1.0, "faith_est": 1.0, "answer_relevance": 0.8, "anchor_coverage": 1.0, "missing_anchors": [],
        "tokens_left": 2000, "stagnation": False}


def test_every_refusal_code_and_every_check_has_its_wording():
    worded = set(EXPLANATIONS) | set(INPUT_EXPLANATIONS)
    assert {r.code for r in REFUSALS} <= worded, "a refusal code without wording"
    for c in CHECKS:
        unit = unit_of(SECTIONS[FIELD_SECTIONS[c.setting]].model_fields[c.setting])
        counted = unit == "words"  # a count is shown whole, a share or a score with its decimals
        said = c.sentence(3.0 if counted else 0.25, S)
        shown = ("3 ",) if counted else ("25%", "0.25", "0.2")
        assert said and "{" not in said and any(x in said for x in shown), (c.signal, said)
        assert c.setting in FIELD_SECTIONS and (not c.switch or c.switch in FIELD_SECTIONS), c.signal
        assert any(r.code == c.reason for r in REFUSALS), c.reason


def test_each_check_names_a_place_in_the_package_that_computes_its_reading():
    """``computed_by`` is what the docs and the trace point a reader to: it must name a module or a function
    of one that exists."""
    import importlib
    import importlib.util

    for check in CHECKS:
        dotted = check.computed_by.split(":")[0].split(" ")[0]
        module, _, name = dotted.rpartition(".")
        found = importlib.util.find_spec(f"agentic_rag.{dotted}") is not None if not hasattr(
            importlib.import_module(f"agentic_rag.{module}"), name) else True
        assert found, f"{check.signal}: {dotted} does not exist"


def test_an_unregistered_refusal_code_is_an_error_not_the_low_support_wording():
    with pytest.raises(KeyError, match="ABSTAIN_SOMETHING_NEW"):
        explain_refusal("ABSTAIN_SOMETHING_NEW", {"overlap_est": 0.0, "faith_est": 0.0}, {}, S)


@pytest.mark.parametrize("code", [r.code for r in REFUSALS])
def test_each_refusal_record_carries_its_registered_layer_and_an_explanation(code):
    state = {"question": "who won the 2013 masters tournament?", "decision": {"action": ABSTAIN, "reason": code},
             "signals": {"missing_anchors": [], "anchor_coverage": 0.0, "overlap_est": 0.0, "faith_est": 0.0,
                         "answerability": 0.1, "verified_score": 0.1, "sentences": []},
             "validation": {"name": "tournament", "ok": False, "missing": ["2013"]},
             "ambiguity": {"options": [{"id": "A", "signature": "a"}], "rule": "none", "selected": "Z"},
             "ood": "asks for medical advice", "too_long": "has 2000 characters",
             "llm_error": {"url": "http://x", "attempts": 3, "elapsed_s": 1.0, "last_error": "refused"}}
    rec = build_record(state, "agent", S, {"total": 0}, 1)
    layer = next(r.layer for r in REFUSALS if r.code == code)
    assert rec.explanation and rec.abstention_layer == layer and rec.status in ("refuse", "ambiguous")


def test_the_guide_tables_are_the_registry():
    root = REPO
    assert reasons_markdown() in (root / "docs" / "how-it-works.md").read_text(), \
        "docs/how-it-works.md: paste checks.reasons_markdown() over its reason-code table"


def test_telemetry_records_every_draft_check():
    from agentic_rag.baug.node import _telemetry

    row = _telemetry({}, S, {**GOOD, "new_hits_ratio": 1.0}, Decision("STOP", "STOP_OVERLAP_OK"), {})
    assert {c.signal for c in DRAFT_CHECKS} <= set(row)


# -- issue 27: explanations that contradict themselves -------------------------------------------
def test_a_refusal_by_the_type_validator_does_not_quote_a_coverage_that_passed():
    # coverage 50% against COVERAGE_MIN 0 passed; the tournament validator is what failed
    text, missing = explain_refusal(
        "ABSTAIN_MISSING_ANCHORS", {"missing_anchors": ["masters tournament"], "anchor_coverage": 0.5},
        {"name": "tournament", "ok": False, "missing": ["masters tournament"]}, S,
        question="who won the masters tournament in 2013?")
    assert "anchor coverage" not in text and "needed 0%" not in text
    assert 'the tournament type validator requires "masters tournament"' in text and missing == ["masters tournament"]
    # when coverage is what failed, its figure and threshold are given
    text, _ = explain_refusal(
        "ABSTAIN_MISSING_ANCHORS", {"missing_anchors": ["masters tournament"], "anchor_coverage": 0.5},
        {"name": "tournament", "ok": True, "missing": []}, S.replace(COVERAGE_MIN=0.6),
        question="who won the masters tournament in 2013?")
    assert "(anchor coverage 50%, needed 60%)" in text and "validator" not in text


def test_a_low_support_refusal_quotes_no_check_that_does_not_apply():
    # grounding off: the support checks do not apply, so none of their figures is given as a failure
    off = S.replace(GROUNDING_ENABLED=False)
    text, _ = explain_refusal("ABSTAIN_LOW_SUPPORT", {"overlap_est": 0.0, "faith_est": 0.0}, {}, off)
    assert "needed" not in text


def _answered_events(reason="STOP_NO_NEW_HITS"):
    signals = {**GOOD, "anchor_coverage": 0.5, "answer_relevance": 0.2, "sentences": [{"sentence": "x", "supported": True}]}
    return [
        {"node": "collect_signals", "round": 2, "signals": signals,
         "validation": {"name": "period", "ok": False, "missing": ["2013"]}},
        {"node": "decide", "round": 2, "decision": {"action": "STOP", "reason": reason}},
    ]


def test_an_answered_question_shows_the_checks_it_did_not_need_as_advisory_not_failed():
    from agentic_rag.trace.run import verdict
    from agentic_rag.trace.text import verdict_line

    settings = {**S.public_dump(), "COVERAGE_MIN": 0.6}
    v = verdict(_answered_events(), settings)
    assert v["failed"] == [] and v["invalid"] == ""
    assert {c["signal"] for c in v["advisory"]} == {"anchor_coverage", "answer_relevance"}
    assert all(c["status"] == "advisory" and c["passed"] is None for c in v["advisory"])
    assert v["advisory_invalid"] == "type validator period (missing 2013)"
    line = verdict_line(v).plain
    assert "failed" not in line and "below threshold" not in line and "advisory" in line
    # the same readings on a refusal are failures
    events = _answered_events()
    events[-1]["decision"] = {"action": "ABSTAIN", "reason": "ABSTAIN_MISSING_ANCHORS"}
    v = verdict(events, settings)
    assert v["invalid"] == "type validator period (missing 2013)" and v["advisory"] == []
    assert {c["signal"] for c in v["failed"]} == {"anchor_coverage", "answer_relevance"}


def test_a_check_switched_off_is_shown_off_not_failed():
    from agentic_rag.trace.run import signal_checks

    rows = signal_checks({"overlap_est": 0.1, "anchor_coverage": 0.0}, {**S.public_dump(), "GROUNDING_ENABLED": False})
    assert {r["signal"]: r["status"] for r in rows} == {"overlap_est": "off", "anchor_coverage": "pass"}


def test_the_html_page_marks_an_answered_questions_unneeded_checks_advisory(tmp_path):
    import json

    from agentic_rag.trace.html import render_html
    from agentic_rag.trace.run import load_run

    run = tmp_path / "run"
    run.mkdir()
    row = {"id": "q1", "query": "who won in 2013?", "gold": "x", "prediction": "X won.", "status": "ok",
           "reason": "STOP_NO_NEW_HITS", "judgement": "accurate", "events": _answered_events(), "signals": {}}
    (run / "results.jsonl").write_text(json.dumps(row) + "\n")
    (run / "config.json").write_text(json.dumps({"system": "agent", "settings": {**S.public_dump(), "COVERAGE_MIN": 0.6}}))
    page = render_html(load_run(run))
    data = json.loads(page.split('<script type="application/json" id="run-data">', 1)[1].split("</script>", 1)[0])
    v = data["questions"][0]["verdict"]
    assert v["invalid"] == "" and v["failed"] == [] and v["advisory_invalid"].startswith("type validator period")
    statuses = {c["signal"]: c["status"] for r in data["questions"][0]["rounds"] for c in r["checks"]}
    assert statuses["anchor_coverage"] == "advisory" and statuses["overlap_est"] == "pass"
    step = data["questions"][0]["timeline"][0]  # collect_signals: its readings led to the answer shown
    assert "failed" not in step["summary"] and "validator period advisory" in step["summary"]
    assert {c["signal"]: c["status"] for c in step["blocks"][0]["rows"]}["anchor_coverage"] == "advisory"


# -- the check added through the registry alone: an answer that restates the question ------------
def test_an_answer_that_only_restates_the_question_is_not_shown():
    from agentic_rag.checks import Draft, answer_new_words

    assert answer_new_words(Draft("Who will play Billy Batson in Shazam?", "Billy Batson will play in Shazam.")) == 0.0
    assert (answer_new_words(Draft("Who will play Billy Batson in Shazam?", "Zachary Levi plays Billy Batson."))
            >= S.baug.ANSWER_NEW_WORDS_MIN)
    # a long restatement that adds the one word asked for answers it (two right SQuAD answers were refused
    # when the check read a share of the answer's words)
    restated = Draft("The integer factorization problem essentially seeks to determine if the value of of an input "
                     "is less than what variable?", "The integer factorization problem essentially seeks to determine "
                     "if the value of an input is less than k.")
    assert answer_new_words(restated) == 1.0 >= S.baug.ANSWER_NEW_WORDS_MIN
    # a question that offers the options is answered by repeating one of them
    assert answer_new_words(Draft("Is it Kerber or Williams who won?", "Kerber won.")) is None
    echo = {**GOOD, "answer_new_words": 0.0}
    assert decide(GOOD, Flags(has_evidence=True, has_draft=True), S).reason == "STOP_OVERLAP_OK"
    assert decide(echo, Flags(has_evidence=True, has_draft=True, reflected=True), S).reason == "ABSTAIN_LOW_SUPPORT"
    text, _ = explain_refusal("ABSTAIN_LOW_SUPPORT", echo, {}, S)
    assert "restates the question" in text and "matched a cited source" not in text


def test_a_trace_bar_spans_its_checks_own_range():
    """A count (words added) or a 0-3 grade is not a share: each check says the reading a full bar shows,
    so the trace does not draw 3 added words, or a 2.5 grade, as a full bar against a tick at its end."""
    from agentic_rag.trace.run import gate_checks, signal_checks

    flat = S.public_dump()
    row = next(r for r in signal_checks({"answer_new_words": 3.0}, flat) if r["signal"] == "answer_new_words")
    assert row["full"] == 5.0 and row["status"] == "pass" and row["threshold"] == S.baug.ANSWER_NEW_WORDS_MIN
    graded = gate_checks({"tier": "reranker", "scores": [2.5]}, flat)[0]
    assert graded["full"] == 3.0 and signal_checks({"overlap_est": 0.5}, flat)[0]["full"] == 1.0
