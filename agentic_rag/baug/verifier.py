"""LLM yes/no checks of a draft against its sources: the gray-zone judge and the support verifier.

Both ask the generator one yes/no question and read the answer as P(yes). With the in-process
backend that probability comes from one prefill (no decoding): the model's first-token split between
"yes" and "no"; an OpenAI-compatible server gives the same split from its first token's ``top_logprobs``.
A backend that returns no log-probabilities decodes a few tokens, and "yes" reads as 1.0, anything
else as 0.0.

* Gray-zone judge (``JUDGE_POLICY=gray_zone``): when the code signals are undecided (support between
  ``REFLECT_MIN_OVERLAP`` and what STOP needs), its score is averaged into ``faith_est``; it never
  decides alone. At most ``JUDGE_MAX_CALLS_PER_Q`` calls.
* Support verifier (``VERIFIER_ENABLED``, Self-RAG's "is the answer supported" critique): run only on
  a draft every other check would let through, on the sentences the draft quotes. Below
  ``VERIFIER_MIN`` the draft is withheld (``ABSTAIN_NOT_VERIFIED``). Why it exists: the text checks
  only see that the quoted sentence is real and shares the answer's words, not that it says what
  the answer claims ("As of 2021 the player with most wins was Navratilova" does not make her the
  2021 champion); the generator, asked that narrower question, often knows.

Each call is checked against the budget first and booked under its own stage.
"""

from __future__ import annotations

from typing import Any

from agentic_rag.baug.signals import supported_quotes
from agentic_rag.llm.choices import yes_probability
from agentic_rag.prompts import messages_for
from agentic_rag.text import strip_markup

VERIFY_EVIDENCE_CHARS = 1500  # cited text shown to the verifier when the draft quoted no sentence (chars)
VERIFY_STAGE = "verify"


def in_gray_zone(signals: dict[str, Any], settings) -> bool:
    support = min(signals["overlap_est"], signals["faith_est"])
    return settings.baug.REFLECT_MIN_OVERLAP <= support < max(settings.baug.OVERLAP_MIN, settings.baug.FAITH_MIN)


def judge_messages(question: str, answer: str, evidence: str) -> list:
    return messages_for("judge", question=question, answer=strip_markup(answer, [evidence]), evidence=evidence[:3000])


def verify_messages(question: str, answer: str, signals: dict[str, Any], cited_text: str) -> list:
    """The verifier sees the sentences the draft rests on (what it claims to quote), not whole passages,
    so a true sentence elsewhere in a passage cannot vouch for a claim the quote does not make."""
    quotes = supported_quotes(signals.get("sentences", []))
    evidence = "\n".join(dict.fromkeys(quotes)) or cited_text[:VERIFY_EVIDENCE_CHARS]
    return messages_for("verify", question=question, answer=strip_markup(answer, [evidence]), evidence=evidence)


# which readings each VERIFIER_COMBINE mode averages; a reading that is absent (no probe on this
# backend, no verifier call) is left out of the mean
COMBINE_PARTS = {
    "alone": ("support_verdict",),
    "mean_with_probe": ("support_verdict", "answerability"),
    "mean_with_probes": ("support_verdict", "answerability", "quote_answerability"),
    "probes": ("answerability", "quote_answerability"),
}


def needs_verdict(signals: dict[str, Any], settings) -> bool:
    """Whether the verifier call is needed: its mode reads it, or (``probes``) a probe reading is missing,
    so that a backend without hidden states still gets a final check."""
    parts = COMBINE_PARTS[settings.baug.VERIFIER_COMBINE]
    return "support_verdict" in parts or any(signals.get(p) is None for p in parts)


def verified_score(signals: dict[str, Any], settings) -> float | None:
    """What ``VERIFIER_MIN`` is compared with: the mean of the readings ``VERIFIER_COMBINE`` names.

    Why a mean: the probe reads the sources and the question, the verifier the quoted sentence and the
    answer; on the dev split each ranks the shown drafts about as well as the other and their mean
    better, so one cut on the mean refuses more wrong drafts per right one than two cuts. The quote
    probe (the probe on the quoted sentences alone) ranks them better than either: it asks whether
    *those sentences* answer the question, which the full-context probe cannot, since a passage that
    answers a nearby question looks answerable as a whole (figures: docs/measurements.md)."""
    parts = list(combined_readings(signals, settings).values())
    return round(sum(parts) / len(parts), 4) if parts else None


def combined_readings(signals: dict[str, Any], settings) -> dict[str, float]:
    """The readings ``verified_score`` averages: those its mode names that were read, else the verdict
    (the fallback call made when no probe could read)."""
    parts = {p: signals[p] for p in COMBINE_PARTS[settings.baug.VERIFIER_COMBINE] if signals.get(p) is not None}
    if not parts and signals.get("support_verdict") is not None:
        parts = {"support_verdict": signals["support_verdict"]}
    return parts


def run_judge(messages: list, settings, llm=None) -> tuple[float, dict[str, Any]]:
    return yes_probability(messages, settings, "judge", llm)
