"""The generator as tier 1's relevance grader (``RERANKER_KIND=llm``): no reranker weights ship offline,
so the confidence gate can still read a 0-3 relevance, from the model it already has.

Each packed passage, up to ``GRADE_MAX_PASSAGES`` in rank order, is shown with the question and the
model is asked for one digit (``prompts/grade_*.txt``: 3 = states the answer, 2 = partly, 1 = same
topic, 0 = unrelated). With the in-process backend the grade is the expectation of the model's
first-token split over the four digits (one prefill, no decoding), so grades rank passages instead
of only bucketing them; other backends decode a digit. Each call is checked against the budget
before it is made and booked under the ``grade`` stage; passages the budget cannot pay for are not
graded, and with none graded the gate falls back to tier 2.

It is a tier-1 option for offline users, not a default: it tells answerable from unanswerable
questions less well than the answerability probe, which costs no call (docs/measurements.md).
"""

from __future__ import annotations

from typing import Any

from agentic_rag.budget import can_afford
from agentic_rag.llm.calls import prompt_cost
from agentic_rag.llm.choices import choice_probabilities
from agentic_rag.prompts import messages_for
from agentic_rag.state import merge_usage

GRADE_STAGE = "grade"
GRADES = ("0", "1", "2", "3")  # the 0-3 relevance scale of tier 1, as the digits the model replies with
GRADE_OUTPUT_TOKENS = 1  # one digit (tokens)


def grade_messages(question: str, passage: str) -> list:
    return messages_for("grade", question=question, passage=passage.strip())


def llm_grades(question: str, passages: list[dict[str, Any]], state: dict[str, Any], settings, llm,
               answer_cost: int = 0) -> tuple[list[float], dict[str, Any]]:
    """0-3 grades of the first ``GRADE_MAX_PASSAGES`` passages, and their usage.

    A passage is graded only when the budget (tokens, calls, wall time) can pay for its call *and*
    still for the answer call after it (``answer_cost`` tokens): grading must never be what leaves the
    generator unable to run. Each graded passage is one LLM call, so ``MAX_LLM_CALLS`` must allow for them."""
    grades: list[float] = []
    usage: dict[str, Any] = {}
    capped = settings.replace(MAX_OUTPUT_TOKENS=GRADE_OUTPUT_TOKENS)
    for passage in passages[: settings.confidence_gate.GRADE_MAX_PASSAGES]:
        messages = grade_messages(question, passage["text"])
        cost = prompt_cost(messages, capped)
        after = merge_usage(merge_usage(state.get("usage"), usage), {GRADE_STAGE: {"calls": 1, "total_tokens": cost}})
        if not can_afford({**state, "usage": after}, settings, answer_cost):
            break
        split, call_usage = choice_probabilities(messages, settings, GRADE_STAGE, list(GRADES), llm,
                                                 max_output_tokens=GRADE_OUTPUT_TOKENS)
        grades.append(round(sum(int(g) * p for g, p in split.items()), 4))
        usage = merge_usage(usage, call_usage)
    return grades, usage
