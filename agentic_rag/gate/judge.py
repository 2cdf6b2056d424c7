"""Optional gray-zone grounding judge (``JUDGE_POLICY=gray_zone``).

When the code signals are undecided (support between ``REFLECT_MIN_OVERLAP`` and what STOP needs),
one short LLM call asks whether the cited evidence supports the answer. Its yes/no becomes a judge
score that is averaged into ``faith_est``; it never decides alone. At most ``JUDGE_MAX_CALLS_PER_Q``
calls, each checked against the budget first and booked under the stage ``judge``.
"""

from __future__ import annotations

import re
from typing import Any

from agentic_rag.generator.citations import strip_markup
from agentic_rag.generator.generate import call_generator, messages_for, prompt_cost

JUDGE_MAX_OUTPUT_TOKENS = 4  # "yes" / "no" (tokens)
_YES = re.compile(r"^\W*yes\b", re.IGNORECASE)


def in_gray_zone(signals: dict[str, Any], settings) -> bool:
    support = min(signals["overlap_est"], signals["faith_est"])
    return settings.REFLECT_MIN_OVERLAP <= support < max(settings.OVERLAP_MIN, settings.FAITH_MIN)


def judge_messages(question: str, answer: str, evidence: str) -> list:
    return messages_for("judge", question=question, answer=strip_markup(answer), evidence=evidence[:3000])


def judge_cost(messages: list, settings) -> int:
    return prompt_cost(messages, settings) - settings.MAX_OUTPUT_TOKENS + JUDGE_MAX_OUTPUT_TOKENS


def run_judge(messages: list, settings, llm=None) -> tuple[float, dict[str, Any]]:
    capped = settings.replace(MAX_OUTPUT_TOKENS=JUDGE_MAX_OUTPUT_TOKENS)
    text, usage = call_generator(messages, capped, "judge", llm)
    return (1.0 if _YES.match(text) else 0.0), usage
