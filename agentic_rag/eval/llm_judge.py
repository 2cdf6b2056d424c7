"""Optional LLM judge for the answers the rule judge cannot decide (as CRAG's own evaluation does).

Only answers the rules marked ``no_match`` that still share words with a gold (token F1 > 0) go to
it; abstentions, exact, alias, numeric and date matches never do. It runs through the ``openai``
backend on any OpenAI-compatible endpoint named by the ``EVAL_JUDGE_*`` settings, and refuses to be
the system's own model: a 0.5B model grading its own answers is no judge.
"""

from __future__ import annotations

import re
from typing import Any

from agentic_rag.configuration import Settings, SettingsError
from agentic_rag.eval.judge import Judgement, token_f1
from agentic_rag.llm.calls import call_generator
from agentic_rag.prompts import messages_for

JUDGE_OUTPUT_TOKENS = 4  # "accurate" / "incorrect" (tokens)
_ACCURATE = re.compile(r"^\W*accurate\b", re.IGNORECASE)


def judge_settings(settings: Settings) -> Settings:
    """Settings that point the openai backend at the judge endpoint; errors if that is the system itself."""
    if not settings.eval.EVAL_JUDGE_BASE_URL and not settings.eval.EVAL_JUDGE_API_KEY:
        raise SettingsError("EVAL_LLM_JUDGE=True needs EVAL_JUDGE_BASE_URL (or EVAL_JUDGE_API_KEY for OpenAI)")
    same_endpoint = settings.llm.LLM_BACKEND == "openai" and settings.llm.OPENAI_BASE_URL == settings.eval.EVAL_JUDGE_BASE_URL
    if same_endpoint and settings.llm.LLM_MODEL == settings.eval.EVAL_JUDGE_MODEL:
        raise SettingsError("the evaluation judge is the system's own model; name a different EVAL_JUDGE_MODEL")
    key = settings.eval.EVAL_JUDGE_API_KEY.get_secret_value() if settings.eval.EVAL_JUDGE_API_KEY else None
    return settings.replace(
        LLM_BACKEND="openai", LLM_MODEL=settings.eval.EVAL_JUDGE_MODEL, OPENAI_BASE_URL=settings.eval.EVAL_JUDGE_BASE_URL,
        OPENAI_API_KEY=key, MAX_OUTPUT_TOKENS=JUDGE_OUTPUT_TOKENS, TEMPERATURE=0.0, LLM_CACHE_PATH=None,
    )


def undecided(j: Judgement, refused: bool, prediction: str, golds: list[str]) -> bool:
    """No rule matched, yet the answer shares words with a gold: the rules cannot tell."""
    return not refused and j.rule == "no_match" and any(token_f1(prediction, g) > 0 for g in golds)


def llm_judge(question: str, gold: str, alternatives: list[str], prediction: str, settings: Settings) -> tuple[Judgement, dict[str, Any]]:
    golds = "; ".join([gold, *alternatives])
    messages = messages_for("eval_judge", question=question, gold=golds, prediction=prediction)
    text, usage = call_generator(messages, judge_settings(settings), "eval_judge")
    ok = bool(_ACCURATE.match(text))
    return Judgement("accurate" if ok else "incorrect", "llm_judge", 1 if ok else -1, 0.0, 0.0), usage
