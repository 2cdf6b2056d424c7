"""Confidence gate: refuse before the generator is called when the packed evidence is weak.

Tier 1 (``USE_RERANKER``): relevance on a 0-3 scale, from a cross-encoder (``RERANKER_KIND=cross_encoder``,
supervisor/cross_encoder.py) or from the generator asked for a grade per passage (``llm``, supervisor/grader.py);
the top passage needs ``RELEVANCE_THRESHOLD``.
Tier 2 (otherwise): retrieval scores normalised to [0, 1] so one threshold means the same thing for
every score source (``GATE_SCORE_SOURCE``):

- ``vector``: cosine of passage and question, clipped at 0 (unit vectors, so 1 = same meaning);
- ``bm25``:   s / (s + ``BM25_HALF_SCORE``), which is 0.5 when the raw BM25 score equals that constant
  (a fixed scale, not a setting: ``vector`` is the source the thresholds were calibrated on);
- ``fused``:  the reciprocal-rank fusion score, already scaled so 1 = first in every ranking.

The top passage needs ``RETRIEVAL_MIN_SCORE``, and top-1 / top-2 must reach ``RETRIEVAL_MIN_RATIO``
(1.0 switches the clear-winner rule off). A refusal carries a reason code and a sentence with the figures.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

from agentic_rag.checks import GATE_REASONS, PRE_GENERATION_CHECKS, failed, gate_readings

BM25_HALF_SCORE = 5.0  # the raw BM25 score that normalises to 0.5 (BM25 score units)

# the sentence each of the gate's reasons opens its message with (codes and wording: agentic_rag/checks.py)
REASONS = {gate_reason: text for gate_reason, (_, text) in GATE_REASONS.items()}
GATE_REASON_OF = {code: gate_reason for gate_reason, (code, _) in GATE_REASONS.items()}


@dataclass
class GateResult:
    passed: bool
    tier: str  # "reranker" | "retrieval" | "off"
    reason: str = ""
    message: str = ""
    scores: list[float] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def normalised_score(passage: dict[str, Any], source: str, bm25_half: float = BM25_HALF_SCORE) -> float:
    if source == "vector":
        return max(0.0, float(passage.get("fine_sim", passage.get("vector_score", 0.0))))
    if source == "bm25":
        s = max(0.0, float(passage.get("bm25_score", 0.0)))
        return s / (s + bm25_half)
    return max(0.0, min(1.0, float(passage.get("fused_score", 0.0))))


def _refuse(reason: str, tier: str, detail: str, scores: list[float]) -> GateResult:
    return GateResult(False, tier, reason, f"{REASONS[reason]} {detail}".strip(), scores)


def confidence_gate(passages: list[dict[str, Any]], settings, rerank: list[float] | None = None) -> GateResult:
    """Whether the packed evidence may go to the generator: the registry's pre-generation checks on
    this tier's readings, the first that fails giving the refusal's code and sentence."""
    if not settings.confidence_gate.GATE_ENABLED:
        return GateResult(True, "off")
    if not passages:
        return _refuse("no_relevant_information", "retrieval", "No passage was retrieved.", [])
    tier = "reranker" if rerank is not None else "retrieval"
    scores = sorted(rerank if rerank is not None else
                    (normalised_score(p, settings.confidence_gate.GATE_SCORE_SOURCE) for p in passages), reverse=True)
    values = gate_readings(scores, tier)
    for check in failed(tuple(c for c in PRE_GENERATION_CHECKS if c.signal in values), values, settings):
        said = check.sentence(values[check.signal], settings)
        return _refuse(GATE_REASON_OF[check.reason], tier, said[0].upper() + said[1:] + ".", scores)
    return GateResult(True, tier, scores=scores)
