"""BAUG's decision table: every action and reason code is reachable, and only through the signals."""

import pytest

from agentic_rag.baug.fitted import FITTED_REASONS
from agentic_rag.baug.policy import ACTIONS, REASONS, Flags, decide
from agentic_rag.configuration import Settings
from testkit import REPO

# COVERAGE_MIN 0.5: the default 0 would leave the coverage routes unreachable; the chain check on (off by default)
S = Settings.load(preset="fast", overrides={"CHAIN_CHECK": True})
GOOD = {"overlap_est": 1.0, "faith_est": 1.0, "anchor_coverage": 1.0, "tokens_left": 2000, "stagnation": False}
WEAK = {**GOOD, "overlap_est": 0.4, "faith_est": 0.2}
UNCOVERED = {**GOOD, "anchor_coverage": 0.0}


def flags(**kw):
    return Flags(**{"has_evidence": True, "has_draft": True, "kind": "other", **kw})


CASES = [
    ("ABSTAIN_NO_EVIDENCE", GOOD, flags(has_evidence=False)),
    ("ABSTAIN_LOW_BUDGET", GOOD, flags(has_draft=False)),
    ("STOP_OVERLAP_OK", GOOD, flags()),
    ("RETRIEVE_MISSING_ANCHORS", UNCOVERED, flags()),
    ("RETRIEVE_MISSING_ANCHORS", GOOD, flags(validators_ok=False)),
    ("STOP_NO_NEW_HITS", UNCOVERED, flags(kind="set", one_shot_done=True, no_new_hits=True)),
    ("ABSTAIN_MISSING_ANCHORS", UNCOVERED, flags(kind="numeric", one_shot_done=True, no_new_hits=True)),
    ("REFLECT_LOW_FAITH", WEAK, flags()),
    ("ABSTAIN_LOW_SUPPORT", WEAK, flags(reflected=True)),
    ("STOP_LOW_BUDGET", UNCOVERED, flags(kind="set", can_generate=False)),
    ("ABSTAIN_MISSING_ANCHORS", UNCOVERED, flags(kind="award", can_generate=False)),
    ("ABSTAIN_MISSING_ANCHORS", {**UNCOVERED, "tokens_left": 100}, flags()),
    ("ABSTAIN_LOW_SUPPORT", {**WEAK, "overlap_est": 0.1}, flags()),
    ("ABSTAIN_LOW_RETRIEVAL_SCORE", GOOD, flags(has_draft=False, gate_reason="scores_too_low")),
    ("ABSTAIN_NO_SCORE_GAP", GOOD, flags(has_draft=False, gate_reason="no_clear_winner")),
    ("ABSTAIN_NO_EVIDENCE", GOOD, flags(has_draft=False, gate_reason="no_relevant_information")),
    ("ABSTAIN_HEDGING", GOOD, flags(hedging=True)),
    ("ABSTAIN_OUT_OF_DOMAIN", GOOD, flags(ood=True, has_evidence=False, has_draft=False)),
    ("ABSTAIN_QUESTION_TOO_LONG", GOOD, flags(too_long=True, ood=True, has_evidence=False, has_draft=False)),
    ("ABSTAIN_INVALID_SELECTION", GOOD, flags(ambiguity="refuse", has_draft=False)),
    ("AMBIGUOUS_OPTIONS", GOOD, flags(ambiguity="ambiguous", has_draft=False)),
    ("ABSTAIN_LOW_SUPPORT", {**GOOD, "nli_entailment": 0.2}, flags(reflected=True)),
    ("ABSTAIN_NOT_ANSWERABLE", {**GOOD, "answerability": 0.05}, flags()),
    ("ABSTAIN_NOT_ANSWERABLE", {**WEAK, "answerability": 0.05}, flags()),  # no reflect: it cannot change the probe
    ("ABSTAIN_NOT_VERIFIED", {**GOOD, "verified_score": 0.1}, flags()),  # no reflect: same quotes, same verdict
    ("ABSTAIN_LLM_UNAVAILABLE", GOOD, flags(has_draft=False, llm_unavailable=True)),
    ("ABSTAIN_LLM_UNAVAILABLE", GOOD, flags(llm_unavailable=True)),  # a supported draft whose check failed
    ("ABSTAIN_LLM_UNAVAILABLE", GOOD, flags(has_draft=False, llm_unavailable=True, gate_reason="scores_too_low")),
    ("ABSTAIN_EMPTY_ANSWER", GOOD, flags(has_draft=False, empty_draft=True)),
    ("RETRIEVE_MISSING_HOP", {**GOOD, "hops_found": 0.5, "chain": [{"role": "bridge", "found": True},
                                                                    {"role": "answer", "found": False}]}, flags()),
    ("ABSTAIN_MISSING_HOP", {**GOOD, "hops_found": 0.5}, flags(one_shot_done=True)),  # not LOW_BUDGET: it was asked
]


@pytest.mark.parametrize("reason,signals,f", CASES, ids=[f"{c[0]}-{i}" for i, c in enumerate(CASES)])
def test_decision_table(reason, signals, f):
    d = decide(signals, f, S)
    assert d.reason == reason and d.action == REASONS[reason]


def test_every_reason_and_action_is_reachable():
    from agentic_rag.extensions import EXTENSION_FAILED

    seen = {decide(sig, f, S).reason for _, sig, f in CASES}
    # the fitted policy's codes: tests/baug/test_decision.py; a failing extension node ends its question itself
    # (tests/graphs/test_extensions.py), never through the policy
    assert seen == set(REASONS) - set(FITTED_REASONS) - {EXTENSION_FAILED}
    assert {REASONS[r] for r in seen} == set(ACTIONS)


def test_one_shot_retrieval_needs_its_budget_and_the_setting():
    assert decide(UNCOVERED, flags(), S.replace(FACTOID_ONE_SHOT_RETRIEVAL=False)).action == "ABSTAIN"
    assert decide({**UNCOVERED, "tokens_left": 299}, flags(), S).action == "ABSTAIN"
    assert decide(UNCOVERED, flags(can_retrieve=False), S).action == "ABSTAIN"
    assert decide({**UNCOVERED, "stagnation": True}, flags(), S).action == "ABSTAIN"


def test_thresholds_are_settings():
    borderline = {**GOOD, "overlap_est": 0.55}
    assert decide(borderline, flags(), S).reason == "STOP_OVERLAP_OK"
    assert decide(borderline, flags(reflected=True), S.replace(OVERLAP_MIN=0.6)).reason == "ABSTAIN_LOW_SUPPORT"


def test_an_off_topic_answer_is_not_supported():
    off_topic = {**GOOD, "answer_relevance": 0.2}
    assert decide(off_topic, flags(), S).reason == "REFLECT_LOW_FAITH"
    assert decide(off_topic, flags(reflected=True), S).reason == "ABSTAIN_LOW_SUPPORT"


def test_layers_can_be_switched_off():
    assert decide(GOOD, flags(hedging=True), S.replace(HEDGING_ENABLED=False)).reason == "STOP_OVERLAP_OK"
    assert decide({**WEAK, "overlap_est": 0.0}, flags(reflected=True), S.replace(GROUNDING_ENABLED=False)).reason == "STOP_OVERLAP_OK"


def test_the_guide_lists_every_reason_code():
    """docs/how-it-works.md is where a user looks a reason code up: a code added to the policy must be there."""
    import re

    from agentic_rag.baug.policy import REASONS
    from agentic_rag.checks import REASON_LIST

    guide = (REPO / "docs" / "how-it-works.md").read_text()
    listed = set(re.findall(r"^\| `([A-Z_]+)` \|", guide, flags=re.M))
    assert listed == {r.code for r in REASON_LIST} and set(REASONS) <= listed  # with the baseline's and the extension runner's
