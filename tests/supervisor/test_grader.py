"""Tier 1 with the generator as relevance grader (RERANKER_KIND=llm), with a scripted model: routing and
the budget it leaves for the answer. The packaged model's real grading is tested in test_llm.py."""

from __future__ import annotations

from agentic_rag.configuration import Settings
from agentic_rag.supervisor.grader import GRADE_STAGE
from testkit.records import QUOTE_2004
from testkit.scripted_runs import run

LLM_TIER_1 = {"USE_RERANKER": True, "RERANKER_KIND": "llm", "MAX_LLM_CALLS": 8}


def test_low_grades_refuse_before_the_generator_is_called(agent_settings):
    result, fake, rows = run(agent_settings, ["0"], **LLM_TIER_1)
    graded = [c for c in fake.calls if "How well does the passage answer the question?" in c["prompt"]]
    assert graded and len(graded) == len(fake.calls)  # every call was a grade: the generator never ran
    assert result.status == "refuse" and result.reason == "ABSTAIN_LOW_RETRIEVAL_SCORE"
    assert "The best passage's relevance is 0.0 of 3 (needed 2.0)." in result.explanation  # the registry's wording
    assert result.tokens["detail"][GRADE_STAGE]["calls"] == len(graded) and "generation" not in result.tokens["detail"]
    assert result.tokens_saved > 0 and result.llm_calls == len(graded)
    assert all(c["max_tokens"] == 1 for c in graded)


def test_a_passage_graded_relevant_lets_the_answer_through(agent_settings):
    answer = f'Finding Nemo won. {{cite:76th academy}} "{QUOTE_2004}"'
    result, fake, _ = run(agent_settings, ["3", answer], GRADE_MAX_PASSAGES=1, **LLM_TIER_1)
    assert [c["reply"] for c in fake.calls][0] == "3" and len(fake.calls) == 2
    assert result.status == "ok" and "Finding Nemo" in result.answer
    assert result.tokens["detail"][GRADE_STAGE]["calls"] == 1 and result.tokens["detail"]["generation"]["calls"] == 1


def test_grading_leaves_the_answer_call_within_the_call_cap(agent_settings):
    # three calls allowed: two grades, and the third is kept for the generator
    answer = f'Finding Nemo won. {{cite:76th academy}} "{QUOTE_2004}"'
    result, fake, _ = run(agent_settings, ["3", "3", answer], **{**LLM_TIER_1, "MAX_LLM_CALLS": 3})
    assert result.tokens["detail"][GRADE_STAGE]["calls"] == 2
    assert result.tokens["detail"]["generation"]["calls"] == 1 and result.status == "ok"


def test_with_no_room_to_grade_tier_2_decides(agent_settings):
    answer = f'Finding Nemo won. {{cite:76th academy}} "{QUOTE_2004}"'
    result, fake, _ = run(agent_settings, [answer], **{**LLM_TIER_1, "MAX_LLM_CALLS": 1})
    assert len(fake.calls) == 1 and GRADE_STAGE not in result.tokens["detail"] and result.status == "ok"


def test_an_llm_grader_needs_no_model_folder():
    assert Settings.load(overrides=LLM_TIER_1).confidence_gate.RERANKER_MODEL is None
