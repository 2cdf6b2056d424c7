"""The LLM judge (``eval --judge llm``): CRAG's grading protocol against any OpenAI-compatible endpoint.

The rule judge reads claims with rules a person audited (``benchmarks/judge_agreement/``); a user with a
strong model can have every answer graded the way CRAG's own evaluation grades it instead
(facebookresearch/CRAG, ``local_evaluation.py``):

1. a refusal is missing, and an answer to a question whose gold is "i don't know" is incorrect;
2. the prediction is cut to its first ``PREDICTION_WORDS`` words (CRAG cuts it at 75 tokens);
3. a prediction that is one of the golds, in any case, is accurate;
4. a false premise (gold "invalid question") is the rule judge's reading: CRAG decides it by a word,
   without its judge;
5. otherwise each gold in turn goes to the judge with the grading prompt (``prompts/eval_judge_*.txt``: CRAG's
   rules in the project's words, with a rule for choices), which replies ``{"score": 1 or 0, ...}``; the first
   1 is accurate, else incorrect.

A judge that does not answer, or whose reply holds no score, leaves the answer ``unjudged``: counted apart
in the summary, never accurate. The rule judge's verdict is kept beside the LLM's in every row. The judge
may not be the system's own model: a small model grading its own answers is no judge.
"""

from __future__ import annotations

import re
from typing import Any

from agentic_rag.configuration import Settings, SettingsError
from agentic_rag.eval.judge import Judgement
from agentic_rag.llm.calls import call_generator
from agentic_rag.llm.usage import LLMUnavailableError
from agentic_rag.prompts import messages_for
from agentic_rag.state import merge_usage

JUDGE_OUTPUT_TOKENS = 48  # the reply: {"score": 1, "explanation": "a few words"} (tokens)
PREDICTION_WORDS = 60  # a prediction is graded on its first words, as CRAG grades its first 75 tokens
UNJUDGED = "unjudged"  # the judgement of an answer the judge did not grade
_SCORE = re.compile(r'"score"\s*:\s*"?([01])\b')


def judge_settings(settings: Settings) -> Settings:
    """Settings that point the openai backend at the judge endpoint; errors if that is the system itself."""
    if not settings.eval.EVAL_JUDGE_BASE_URL and not settings.eval.EVAL_JUDGE_API_KEY:
        raise SettingsError("EVAL_JUDGE=llm needs EVAL_JUDGE_BASE_URL (or EVAL_JUDGE_API_KEY for OpenAI)")
    same_endpoint = settings.llm.LLM_BACKEND == "openai" and settings.llm.OPENAI_BASE_URL == settings.eval.EVAL_JUDGE_BASE_URL
    if same_endpoint and settings.llm.LLM_MODEL == settings.eval.EVAL_JUDGE_MODEL:
        raise SettingsError("the evaluation judge is the system's own model; name a different EVAL_JUDGE_MODEL")
    key = settings.eval.EVAL_JUDGE_API_KEY.get_secret_value() if settings.eval.EVAL_JUDGE_API_KEY else None
    return settings.replace(
        LLM_BACKEND="openai", LLM_MODEL=settings.eval.EVAL_JUDGE_MODEL, OPENAI_BASE_URL=settings.eval.EVAL_JUDGE_BASE_URL,
        OPENAI_API_KEY=key, MAX_OUTPUT_TOKENS=JUDGE_OUTPUT_TOKENS, TEMPERATURE=0.0, LLM_CACHE_PATH=None,
    )


def reply_score(text: str) -> int | None:
    """The 0 or 1 a judge's reply gives (the last ``"score"`` in it, as CRAG reads a reply that corrects
    itself), or None when it gives none."""
    found = _SCORE.findall(text or "")
    return int(found[-1]) if found else None


# the rule judge's verdicts that CRAG's protocol also reaches without its judge (steps 1 and 4)
DECIDED_BY_RULE = frozenset({"abstained", "gold_idk", "false_premise", "false_premise_missed"})


def llm_judge(question: str, gold: str, alternatives: list[str], prediction: str, ruled: Judgement,
              settings: Settings) -> tuple[Judgement, dict[str, Any]]:
    """The judgement of one answer by CRAG's protocol (the module's steps), given the rule judge's
    verdict ``ruled`` (whose EM and F1 it keeps: they read the short answer), and the judge's usage."""
    if ruled.rule in DECIDED_BY_RULE:
        return ruled, {}
    cut = " ".join(str(prediction).split()[:PREDICTION_WORDS])
    golds = [g for g in (gold, *alternatives) if str(g).strip()]
    if any(cut.strip().lower() == str(g).strip().lower() for g in golds):
        return Judgement("accurate", "exact", 1, ruled.em, ruled.f1), {}
    usage: dict[str, Any] = {}
    scores = []
    for g in golds:
        try:
            text, call_usage = call_generator(messages_for("eval_judge", question=question, gold=str(g), prediction=cut),
                                              judge_settings(settings), "eval_judge")
        except LLMUnavailableError:
            scores.append(None)
            continue
        usage = merge_usage(usage, call_usage)
        scores.append(reply_score(text))
        if scores[-1] == 1:
            return Judgement("accurate", "llm_judge", 1, ruled.em, ruled.f1), usage
    if 0 in scores:
        return Judgement("incorrect", "llm_judge", -1, ruled.em, ruled.f1), usage
    return Judgement(UNJUDGED, "llm_unjudged", 0, ruled.em, ruled.f1), usage
