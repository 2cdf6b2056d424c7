"""What a BAUG decision is and what it is made from: the Decision, the run's Flags, and the two rules
both policies share (whether the extra retrieval round is on offer, which extension asked for a code).

Its own module, below both policies: the thresholds (baug/policy.py) and the fitted decision
(baug/fitted.py) each read these, and neither imports the other's module to get them.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, fields
from typing import Any

from agentic_rag.checks import GATE_REASONS as _GATE_REASONS
from agentic_rag.checks import REASON_LIST

# the codes with their actions, layers and wording are defined once, in agentic_rag/checks.py
REASONS = {r.code: r.action for r in REASON_LIST if r.policy}
GATE_REASONS = {gate_reason: code for gate_reason, (code, _) in _GATE_REASONS.items()}


@dataclass(frozen=True)
class Decision:
    action: str
    reason: str

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class Flags:
    """What the graph has already done and can still afford (from state and caps, not from the model)."""

    has_evidence: bool
    has_draft: bool
    kind: str = "other"
    validators_ok: bool = True
    one_shot_done: bool = False
    reflected: bool = False
    no_new_hits: bool = False
    can_generate: bool = True  # budget, call cap and wall time allow one more LLM call
    can_retrieve: bool = True  # rounds left and wall time allow one more retrieval round
    gate_reason: str = ""  # the confidence gate's refusal reason, "" when it passed or did not run
    hedging: bool = False  # layer 3 found hedging or filler in the draft
    ood: bool = False  # the question is out of domain
    too_long: bool = False  # the question is longer than MAX_QUESTION_CHARS
    ambiguity: str = ""  # "ambiguous" or "refuse" (invalid selection) from the ambiguity policy
    llm_unavailable: bool = False  # an LLM call of this question failed on every attempt (state's llm_error)
    empty_draft: bool = False  # the generator was called and its reply was empty
    # extension nodes' requests: {"by": name, "action": ABSTAIN | RETRIEVE_MORE, "code": "UPPER_SNAKE", ...}
    requests: tuple[dict[str, Any], ...] = ()

    def to_dict(self) -> dict[str, Any]:
        """As the state stores it (plain JSON-ready data)."""
        return {f.name: getattr(self, f.name) for f in fields(self)}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "Flags":
        """From the state; a key this version does not know (an older checkpoint's) is left out."""
        known = {f.name for f in fields(cls)}
        return cls(**{k: v for k, v in data.items() if k in known})


def decided(reason: str) -> Decision:
    return Decision(REASONS[reason], reason)


def can_retrieve_more(signals: dict[str, Any], flags: Flags, settings) -> bool:
    """The one extra retrieval round is still on offer: allowed, unused, and rounds, time and tokens left."""
    return (
        settings.agent.FACTOID_ONE_SHOT_RETRIEVAL
        and not flags.one_shot_done
        and flags.can_retrieve
        and flags.can_generate
        and signals["tokens_left"] >= settings.agent.FACTOID_MIN_TOKENS_LEFT
        and not signals.get("stagnation", False)
    )


def requested(reason: str, requests) -> dict[str, Any] | None:
    """The extension request a decision's reason code comes from (None for the policy's own codes)."""
    return next((r for r in requests or () if reason in (f"ABSTAIN_{r['code']}", f"RETRIEVE_{r['code']}")), None)
