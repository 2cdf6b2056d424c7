"""Type validators: cheap checks that the cited text is sufficient for this kind of question.

An answer about an award must cite text naming the award or category *and* the ceremony year the
question asks about; a tournament answer, the tournament and year; a numeric or time-window answer,
its unit and period anchors. Without them the model may be faithful to the wrong ceremony, season
or quarter, which is the error these checks exist to catch.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from agentic_rag.anchors.matching import RE_YEAR, Anchor, anchor_in_text

PERIOD_TYPES = {"year", "quarter", "month", "date"}
REQUIRED_TYPES = {
    "award": ({"award", "category", "event"}, PERIOD_TYPES),
    "tournament": ({"tournament", "event"}, PERIOD_TYPES),
    "numeric": ({"unit"}, PERIOD_TYPES),
    "time_window": ({"unit"}, PERIOD_TYPES),
}


@dataclass
class ValidationResult:
    name: str
    ok: bool
    missing: list[str] = field(default_factory=list)
    # asked year -> the other years the supporting sentences name instead of it
    conflicting: dict[str, list[str]] = field(default_factory=dict)


def validate(
    kind: str, anchors: list[Anchor], cited_text: str, period_text: str | None = None, claim_text: str | None = None,
    bridge_text: str = "",
) -> ValidationResult:
    """Every anchor of the kind's required types that the question has must be in the cited text.

    Whatever the kind, a period the question names (year, quarter, month, date) must be in the
    supporting text: an answer about another season or quarter is the commonest faithful-but-wrong one.
    When ``period_text`` is given (the supporting sentences and their neighbours), periods must be
    there, not merely somewhere in the cited chunk. When ``claim_text`` is given (the supporting
    sentences alone) and it names years but not the asked one, the sentence is explicitly about
    another year ("2018 Maxwell Award winner Tua" for 2019), and a neighbour's date line does not
    rescue it. An anchor stated in ``bridge_text`` (what a linked page says of an entity the cited text
    names: the bridge of a multi-hop question) is met there, whatever years the supporting sentences
    name: "the singer who died in 2007" is described on the singer's page, not on the song's.
    """
    groups = REQUIRED_TYPES.get(kind, (PERIOD_TYPES,))
    missing = []
    conflicting: dict[str, list[str]] = {}
    claim_years = list(dict.fromkeys(RE_YEAR.findall(claim_text or "")))  # the anchors' own notion of a year
    for a in anchors:
        if not any(a.type in group for group in groups):
            continue
        where = period_text if (period_text is not None and a.type in PERIOD_TYPES) else cited_text
        if anchor_in_text(a, bridge_text):
            continue
        if not anchor_in_text(a, where):
            missing.append(a.text)
        elif a.type == "year" and claim_years and not anchor_in_text(a, claim_text):
            missing.append(a.text)
            conflicting[a.text] = claim_years
    name = kind if kind in REQUIRED_TYPES else "period"
    return ValidationResult(name=name, ok=not missing, missing=missing, conflicting=conflicting)
