"""Anchor candidates from the question's regexes and the lexicon, the first and strongest source.

Periods (:mod:`.matching`), money, percentages, numbers with their units and quoted titles are found
by regex; units, awards, categories, tournaments and leagues by the hand-made lexicon
(:mod:`.lexicon`), on whole phrases. Every candidate carries its source's prior score (``PRIOR``);
the spaCy pass (:mod:`.ner`) adds the names these miss.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass

from agentic_rag.anchors.lexicon import MEASURE_UNITS, LexEntry, lexicon_index
from agentic_rag.anchors.matching import (
    LEFT_EDGE,
    RE_DECADE,
    RE_DMY,
    RE_FISCAL,
    RE_ISO_DATE,
    RE_MDY,
    RE_MONTH_ALONE,
    RE_MONTH_YEAR,
    RE_QUARTER,
    RE_SEASON,
    RE_SLASH_DATE,
    RE_YEAR,
    RE_YEAR_MONTH,
    RIGHT_EDGE,
    YEAR,
)

# Type priors (confidence before source adjustments).
PRIOR = {
    "year": 0.9,
    "season": 0.9,
    "fiscal": 0.9,
    "decade": 0.82,
    "quarter": 0.93,
    "quarter_bare": 0.8,
    "date": 0.86,
    "date_no_year": 0.78,
    "month_year": 0.84,
    "month": 0.7,
    "money": 0.76,
    "percent": 0.74,
    "number_unit": 0.76,
    "number": 0.55,
    "PERSON": 0.88,
    "ORG": 0.85,
    "GPE": 0.82,
    "LOC": 0.8,
    "FAC": 0.78,
    "WORK_OF_ART": 0.8,
    "EVENT": 0.82,
    "PRODUCT": 0.72,
    "NORP": 0.68,
    "LAW": 0.75,
    "LANGUAGE": 0.6,
    "entity": 0.58,
    "alternative": 0.7,
    "quoted": 0.9,
    "topic": 0.35,
}
NER_TYPE = {
    "PERSON": "person", "ORG": "org", "GPE": "place", "LOC": "place", "FAC": "place",
    "WORK_OF_ART": "work", "EVENT": "event", "PRODUCT": "entity", "NORP": "entity", "LAW": "work",
    "LANGUAGE": "entity",
}
TITLE_ONLY_PENALTY = 0.06   # entity found only in the title-cased copy
AGREEMENT_BONUS = 0.04      # both NER passes (or NER and a compared alternative) found it
TOPIC_MAX = 0.45

_NUM_UNITS = (
    r"%|percent|per cent|feet|foot|ft|miles|mile|mi|km|kilometers|kilometres|meters|metres|meter|metre|m|"
    r"kg|kilograms|pounds|lbs|lb|tons|tonnes|inches|inch|cm|acres|mph|km/h|degrees|points|pts|rebounds|"
    r"assists|goals|yards|games|minutes|hours|seconds|years|months|weeks|days|people|million|billion|"
    r"trillion|thousand|dollars|usd|euros|shares"
)
RE_MONEY = re.compile(
    r"(?:[$€£]\s?\d[\d,]*(?:\.\d+)?(?:\s*(?:million|billion|trillion|thousand|bn|mn|[mbk])(?!\w))?)|"
    + LEFT_EDGE + r"\d[\d,]*(?:\.\d+)?\s*(?:million|billion|trillion)(?:\s+(?:dollars|usd|euros))?" + RIGHT_EDGE
)
RE_PERCENT = re.compile(LEFT_EDGE + r"\d+(?:\.\d+)?\s?(?:%|percent(?!\w)|per cent(?!\w))")
RE_NUMBER_UNIT = re.compile(LEFT_EDGE + r"(\d[\d,]*(?:\.\d+)?)\s?(?:" + _NUM_UNITS + r")" + RIGHT_EDGE)
RE_NUMBER = re.compile(r"(?<![\w.,$#])(\d{1,3}(?:,\d{3})+(?:\.\d+)?|\d+\.\d+|\d{3,})(?![\w])(?![.,]\d)")

RE_QUOTED = re.compile(r'"([^"]{2,120})"')


@dataclass
class Candidate:
    start: int
    end: int
    type: str
    score: float
    source: str       # "regex", "lexicon", "ner", "ner_title", "fallback"
    tier: int         # 0 regex/lexicon, 1 NER, 2 fallback

    @property
    def length(self) -> int:
        return self.end - self.start


def regex_candidates(nq: str) -> list[Candidate]:
    out: list[Candidate] = []

    def add(m: re.Match, type_: str, prior: str, group: int = 0) -> None:
        out.append(Candidate(m.start(group), m.end(group), type_, PRIOR[prior], "regex", 0))

    for m in RE_QUOTED.finditer(nq):
        if re.search(r"[a-z0-9]", m.group(1)):
            add(m, "work", "quoted", 1)
    for m in RE_ISO_DATE.finditer(nq):
        if 1 <= int(m.group(2)) <= 12 and 1 <= int(m.group(3)) <= 31:
            add(m, "date", "date")
    for m in RE_SLASH_DATE.finditer(nq):
        add(m, "date", "date")
    for m in RE_MDY.finditer(nq):
        if 1 <= int(m.group(2)) <= 31 and (m.group(3) or not m.group(1).startswith(("may", "mar"))):
            add(m, "date", "date" if m.group(3) else "date_no_year")
    for m in RE_DMY.finditer(nq):
        if 1 <= int(m.group(1)) <= 31:
            add(m, "date", "date" if m.group(3) else "date_no_year")
    for m in RE_MONTH_YEAR.finditer(nq):
        add(m, "month", "month_year")
    for m in RE_SEASON.finditer(nq):
        y1, y2 = int(m.group(1)), m.group(2)
        nxt = int(y2) if len(y2) == 4 else (y1 // 100) * 100 + int(y2)
        if len(y2) == 2 and int(y2) < y1 % 100:
            nxt += 100
        if nxt == y1 + 1 or (len(y2) == 4 and y1 < nxt <= y1 + 1):
            add(m, "year", "season")
    for m in RE_YEAR_MONTH.finditer(nq):
        y, mo = int(m.group(1)), int(m.group(2))
        if 1 <= mo <= 12 and mo != (y + 1) % 100:
            add(m, "month", "month_year")
    for m in RE_MONTH_ALONE.finditer(nq):
        word = m.group(1)
        before = nq[max(0, m.start() - 12):m.start()]
        if word in ("may", "march", "august") and not re.search(
            r"(?:in|of|during|since|until|through|from|last|this|next|early|late)\s+$", before
        ):
            continue
        add(m, "month", "month", 1)
    for m in RE_DECADE.finditer(nq):
        add(m, "year", "decade")
    for m in RE_FISCAL.finditer(nq):
        add(m, "year", "fiscal")
    for m in RE_YEAR.finditer(nq):
        add(m, "year", "year", 1)
    for i, rx in enumerate(RE_QUARTER):
        for m in rx.finditer(nq):
            bare = i == len(RE_QUARTER) - 1 or (i == 4 and not m.group(2))
            add(m, "quarter", "quarter_bare" if bare else "quarter")
    for m in RE_MONEY.finditer(nq):
        add(m, "number", "money")
    for m in RE_PERCENT.finditer(nq):
        add(m, "number", "percent")
    for m in RE_NUMBER_UNIT.finditer(nq):
        add(m, "number", "number_unit")
    for m in RE_NUMBER.finditer(nq):
        if not re.fullmatch(YEAR, m.group(1)):
            add(m, "number", "number", 1)
    return out


@functools.lru_cache(maxsize=1)
def _lexicon_regex() -> tuple[re.Pattern, dict[str, LexEntry]]:
    index = lexicon_index()
    phrases = sorted(index, key=lambda p: (-len(p), p))
    alternation = "|".join(re.escape(p) for p in phrases)
    return re.compile(r"(?<![\w])(?:" + alternation + r")(?![\w])"), index


def lexicon_candidates(nq: str) -> list[Candidate]:
    rx, index = _lexicon_regex()
    out = []
    for m in rx.finditer(nq):
        entry = index[m.group(0)]
        if entry.canonical in MEASURE_UNITS and not re.search(
            r"(?:\d|\b(?:in|many|much|of|per|the|how|into|to))\s*$", nq[max(0, m.start() - 12):m.start()]
        ):
            continue
        out.append(Candidate(m.start(), m.end(), entry.type, entry.score, "lexicon", 0))
    return out
