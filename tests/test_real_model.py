"""The agent and the baseline end to end on bundled CRAG questions with the real packaged LLM."""

import json

import pytest

from agentic_rag.datasets.crag import iter_records
from agentic_rag.runner import answer
from agentic_rag.telemetry import read_rows

pytestmark = pytest.mark.model

# 9: DreamWorks owner (answerable from its pages); 6: shortest highway (its pages are about dog breeds)
IDS = (9, 6)


@pytest.fixture(scope="module")
def records():
    recs = list(iter_records("example"))
    return {i: recs[i] for i in IDS}


def _check_contract(result, settings):
    assert result.tokens["total"] <= settings.TOKEN_BUDGET
    assert result.llm_calls <= settings.MAX_LLM_CALLS
    if result.status == "refuse":
        assert result.citations == [] and result.explanation and result.reason.startswith("ABSTAIN_")
    else:
        assert result.answer and result.citations and any(c.verified for c in result.citations)
        for c in result.citations:
            assert c.quote  # every shown quote is exact source text


def test_agent_end_to_end(records, agent_settings):
    for i in IDS:
        result = answer("agent", agent_settings, record=records[i])
        _check_contract(result, agent_settings)
        assert result.trace and result.latency_by_node_ms["anchors"] >= 0
        if result.llm_calls:  # the answer call's own prefill fed the answerability probe
            assert 0.0 <= result.signals["answerability"] <= 1.0
    rows = read_rows(agent_settings.TELEMETRY_PATH)
    assert {r["question_id"] for r in rows} == {records[i].interaction_id for i in IDS}
    # the highway question's pages hold nothing relevant: refused before any LLM call
    highway = [r for r in rows if r["question_id"] == records[6].interaction_id]
    assert highway[-1]["reason"] == "ABSTAIN_NO_EVIDENCE" and highway[-1]["llm_calls"] == 0


def test_baseline_end_to_end_and_same_record_shape(records, agent_settings):
    base = answer("baseline", agent_settings, record=records[9])
    assert base.status == "ok" and base.llm_calls == 1 and base.tokens["by_stage"]["generation"] > 0
    assert base.reason == "STOP_SINGLE_PASS"
    json.dumps(base.model_dump())  # JSON-ready
