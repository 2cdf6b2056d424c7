"""The agent and the baseline end to end with the real packaged LLM, on bundled CRAG questions.

On a CPU a decoded token costs about a second, a prompt token a few milliseconds: tests that need a
real draft rather than a real CRAG prompt (the final check, the optional 1.5B) run on the small
hand-written Oscars record, whose draft the 0.5B writes in 17 tokens and which passes every text check.
"""

import json

import pytest

from agentic_rag.datasets.crag import iter_records
from agentic_rag.runner import answer
from agentic_rag.telemetry import read_rows
from testkit.records import record as oscars_record

pytestmark = pytest.mark.model

# 9: DreamWorks owner (answerable from its pages); 6: shortest highway (its pages are about dog breeds)
IDS = (9, 6)


@pytest.fixture(scope="module")
def records():
    recs = list(iter_records("example"))
    return {i: recs[i] for i in IDS}


def _check_contract(result, settings):
    assert result.tokens["total"] <= settings.budget.TOKEN_BUDGET
    assert result.llm_calls <= settings.budget.MAX_LLM_CALLS
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
    rows = read_rows(agent_settings.paths.TELEMETRY_PATH)
    assert {r["question_id"] for r in rows} == {records[i].interaction_id for i in IDS}
    # the highway question's pages hold nothing relevant: refused before any LLM call
    highway = [r for r in rows if r["question_id"] == records[6].interaction_id]
    assert highway[-1]["reason"] == "ABSTAIN_NO_EVIDENCE" and highway[-1]["llm_calls"] == 0


def test_baseline_end_to_end_and_same_record_shape(records, agent_settings):
    # the baseline never abstains, so a short answer shows all it does
    base = answer("baseline", agent_settings.replace(MAX_OUTPUT_TOKENS=8), record=records[9])
    assert base.status == "ok" and base.llm_calls == 1 and base.tokens["by_stage"]["generation"] > 0
    assert base.reason == "STOP_SINGLE_PASS"
    json.dumps(base.model_dump())  # JSON-ready


def test_final_check_reads_the_quote_probe_and_skips_the_verifier_only_when_its_mode_allows(agent_settings, tmp_path):
    """The quote probe on a real draft: one more call under 'verify', and the cut value is the mean of
    what the mode names; 'probes' reads both probes and makes no verifier call. The second run replays
    the draft and the quote probe from the LLM cache (greedy decoding: a replay is exact, usage included),
    so the two runs differ only in what the mode asks for."""
    base = agent_settings.replace(VERIFIER_ENABLED=True, VERIFIER_MIN=0.0, LLM_CACHE_PATH=str(tmp_path / "llm.sqlite"))
    three = answer("agent", base.replace(VERIFIER_COMBINE="mean_with_probes"), record=oscars_record())
    s = three.signals
    assert three.reason == "STOP_OVERLAP_OK" and 0.0 <= s["quote_answerability"] <= 1.0
    assert s["verified_score"] == pytest.approx((s["support_verdict"] + s["answerability"] + s["quote_answerability"]) / 3, abs=1e-3)
    assert three.tokens["detail"]["verify"]["calls"] == 2
    probes = answer("agent", base.replace(VERIFIER_COMBINE="probes"), record=oscars_record())
    assert probes.tokens["detail"]["verify"]["calls"] == 1 and "support_verdict" not in probes.signals
    assert probes.signals["verified_score"] == pytest.approx((s["answerability"] + s["quote_answerability"]) / 2, abs=1e-3)
    assert probes.tokens["total"] < three.tokens["total"]
    _check_contract(probes, agent_settings)


def test_default_1_5b_generator_runs_the_agent_with_its_own_probe(agent_settings):
    """The default generator (the rest of the suite runs preset `fast`): assembled from its PyPI parts,
    verified, converted, and read by its own probe (a 1536-wide state at layer 18; the 0.5B probe would
    refuse it) on the answer call's prompt, so one short call shows it."""
    from agentic_rag.configuration import Settings
    from agentic_rag.llm.packaged import PACKAGED_MODELS, resolve_local_model
    from agentic_rag.reader.probe import load_probe, packaged_probe_for

    settings = Settings.load(
        preset="default",  # the field defaults, not the suite's AGENTIC_RAG_PRESET
        overrides={"ARTIFACTS_DIR": str(agent_settings.paths.ARTIFACTS_DIR), "TELEMETRY_PATH": str(agent_settings.paths.TELEMETRY_PATH),
                   "MAX_OUTPUT_TOKENS": 8, "MAX_LLM_CALLS": 1},
    )
    folder = resolve_local_model(settings)
    assert folder.name == PACKAGED_MODELS["packaged-1.5b"].converted_dir
    probe = load_probe(packaged_probe_for(str(folder)))
    assert probe.hidden_size == 1536 and probe.model_key == PACKAGED_MODELS["packaged-1.5b"].sha256
    result = answer("agent", settings, record=oscars_record())
    _check_contract(result, settings)
    assert result.llm_calls == 1 and 0.0 <= result.signals["answerability"] <= 1.0
