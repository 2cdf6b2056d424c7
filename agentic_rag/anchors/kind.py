"""The coarse kind of a question (award, tournament, numeric, date, ...), for the type validators
and the short answer finalize extracts."""

from __future__ import annotations

import re

from agentic_rag.anchors.matching import NAME_TYPES, RELATIVE_TIME, Anchor, anchor_in_text, normalize_text

QUESTION_KINDS = (
    "award", "tournament", "numeric", "time_window", "yes_no", "comparison", "set", "person", "date", "other",
)

_POLITE = re.compile(
    r"^\s*(?:(?:hey|hi|ok|okay|so|please)[,!]?\s+)*(?:(?:can|could|would|will) you (?:please )?"
    r"(?:tell|show|give|let|identify|find|name|list|provide|"
    r"explain|share|check|say)(?: me)?(?: know)?|(?:do|did) you (?:happen to )?know|"
    r"i(?:'m| am) (?:looking for|wondering|curious about|curious)|"
    r"i (?:want|need|would like|'d like) to know|tell me|please tell me|let me know)\s*(?:,\s*)?(?:if|whether|about)?\s*",
)
_POLITE_TAIL = re.compile(r"[,.]?\s*(?:can|could|would|will|do) you (?:please )?(?:tell me|know|happen to know)[^.?]*[.?]?\s*$")
_YES_NO_START = re.compile(
    r"^\s*(?:is|are|was|were|am|does|do|did|has|have|had|can|could|will|would|should|shall|may|might|must|"
    r"isn't|aren't|wasn't|weren't|doesn't|don't|didn't|hasn't|haven't)\b"
)
_COMPARE_WORDS = re.compile(
    r"\b(?:compare|compared|comparison|versus|vs\.?|more|less|higher|lower|better|worse|bigger|smaller|larger|"
    r"older|younger|earlier|later|first|longer|shorter|taller|faster|greater|fewer|most|least|which one|"
    r"difference)\b"
)
_SET_START = re.compile(r"^\s*(?:name|list|give me|show me|enumerate)\b")
_SET_CUES = re.compile(
    r"\b(?:name (?:two|three|four|five|six|seven|eight|nine|ten|\d+|all|some|the)|list of|list all|"
    r"what (?:are|were) (?:the|some|all)|which (?:\w+ ){0,2}(?:are|were)\b|(?:some |a few )?examples of|"
    r"who (?:are|were) (?:the|all|some)|all (?:the )?\w+s (?:that|who|which)|"
    r"(?:two|three|four|five|six|seven|eight|nine|ten|\d+) (?:of )?(?:the )?(?:most )?(?:\w+ ){0,2}"
    r"(?:movies|films|songs|albums|players|companies|stocks|teams|countries|books|examples|cities|members|"
    r"shows|games|artists|actors|people|states|products))\b"
)
_NUMERIC_CUES = re.compile(
    r"\b(?:how (?:many|much|long|tall|old|far|big|high|deep|often|large|heavy|fast)|number of|"
    r"percentage|percent|average|total|sum|ratio|rate|price|prices|value|revenue|earnings|income|budget|gross|"
    r"cost|population|height|length|distance|volume|market cap|per game|per share|score|age)\b"
)
_DATE_CUES = re.compile(
    r"\b(?:when|what (?:year|date|day|month|time)|which (?:year|date|day|month)|on what date|in what year|"
    r"how long ago|the date|date of|birthday|birthdate|birth date|born on)\b"
)
_AWARD_WORDS = re.compile(
    r"\b(?:award|awards|awarded|oscars?|grammys?|emmys?|golden globes?|nobel|pulitzer|trophy|mvp|ballon d'or|"
    r"best (?:picture|actor|actress|director|animated|visual|new artist|supporting|original|adapted|documentary)|"
    r"(?:album|record|song|player|rookie|coach) of the year)\b"
)
_AWARD_CATEGORY = re.compile(r"^(?:best|outstanding)\b|\bof the year\b")
_TOURNAMENT_WORDS = re.compile(
    r"\b(?:tournament|championship|championships|cup|grand slam|super bowl|world series|finals|olympics|"
    r"wimbledon|masters|open)\b"
)
_TIME_WINDOW_CUES = re.compile(
    r"\b(?:quarter|quarterly|fiscal|season|month|week|this year|last year|past year|year to date|ytd|"
    r"between \d{4} and \d{4}|from \d{4} to \d{4}|since \d{4}|during)\b"
)


def _strip_politeness(q: str) -> str:
    q2 = _POLITE.sub("", q, count=1)
    q2 = _POLITE_TAIL.sub("", q2)
    return q2 if q2.strip() else q


def question_kind(question: str, anchors: list[Anchor]) -> str:
    """Coarse kind of the question for the type validators downstream (see ``QUESTION_KINDS``).

    Simple cues, first match wins: comparison ("X or Y" with something named on each side),
    yes_no (starts with an auxiliary verb), set (lists, "which ... are", "name three"), award,
    tournament, numeric ("how many/much" and measures), date ("when", "what year"), time_window
    (quarters, months, seasons, fiscal years), person ("who"), else other.
    """
    q = _strip_politeness(normalize_text(question).strip())
    types = {a.type for a in anchors}
    names = [a for a in anchors if a.type in NAME_TYPES and a.type != "unit"]

    if re.search(r"\bor\b(?! (?:higher|lower|more|less|above|below|later|earlier|so|not|greater|fewer|older|"
                 r"younger|better|worse|equal)\b)", q):
        head, _, tail = q.rpartition(" or ")
        left = [a for a in names if anchor_in_text(a, head)]
        right = [a for a in names if anchor_in_text(a, tail)]
        if (left and right) or (_COMPARE_WORDS.search(q) and (left or right) and ("," in head or len(tail.split()) <= 5)):
            return "comparison"
    if re.search(r"\b(?:compare|comparison|versus|vs\.?)\b", q) or (
        re.search(r"\bbetween\b[^,]+\band\b", q) and _COMPARE_WORDS.search(q)
        and not re.search(r"\bbetween \d{4} and \d{4}\b", q)
    ):
        return "comparison"
    if _YES_NO_START.match(q):
        return "yes_no"
    numeric_words = bool(_NUMERIC_CUES.search(q))
    if _SET_START.match(q) or re.search(r"\b(?:examples of|name (?:two|three|four|five|\d+))\b", q) or (
        _SET_CUES.search(q) and not re.match(r"^\s*how (?:many|much)\b", q)
        and not (numeric_words and re.search(r"\bwhat (?:are|were)\b", q))
    ):
        return "set"
    if "award" in types or any(a.type == "category" and _AWARD_CATEGORY.search(normalize_text(a.text)) for a in anchors) \
            or _AWARD_WORDS.search(q):
        return "award"
    if "tournament" in types or (
        _TOURNAMENT_WORDS.search(q) and re.search(r"\b(?:won|win|wins|winner|champion|champions|title)\b", q)
    ):
        return "tournament"
    if re.match(r"^\s*(?:how (?:many|much)|what (?:percentage|percent|number|fraction))\b", q):
        return "numeric"
    if _DATE_CUES.search(q) or re.search(r"\bon which date\b", q):
        return "date"
    if types & {"quarter", "month"} or any(
        a.type == "year" and not re.fullmatch(r"\d{4}", a.text.strip()) for a in anchors
    ):
        return "time_window"
    if numeric_words or "number" in types:
        return "numeric"
    if re.match(r"^\s*(?:who|whom|whose)\b", q) or re.search(r"\bwho (?:is|was|were|are|has|had|won|did)\b", q):
        return "person"
    if "unit" in types and (RELATIVE_TIME.search(q) or _TIME_WINDOW_CUES.search(q)):
        return "time_window"
    if "unit" in types:
        return "numeric"
    return "other"
