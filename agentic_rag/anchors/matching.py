"""Anchors in text: the ``Anchor`` type, how periods, dates and numbers are written, and whether a
text mentions an anchor.

This is the one place that knows how a year, a season, a quarter, a month or a date is written:
the anchor predictor extracts periods from the question with these regexes, the type validators and
BAUG look for them in the evidence, finalize takes a date out of an answer, and the rule judge
compares an answer's dates with the gold's. An anchor matches a text when any of its variants occurs
there as whole words after the same normalisation (case, quotes, dashes, accents, thousands
separators): "q1 2024" matches "first quarter of fiscal 2024", "steve nash" matches "Nash".
"""

from __future__ import annotations

import functools
import re
import unicodedata
from dataclasses import dataclass
from typing import Any

from bm25s.stopwords import STOPWORDS_EN

from agentic_rag.anchors.lexicon import GENERIC_WORDS, lexicon_index
from agentic_rag.text import strip_markup

ANCHOR_TYPES = (
    "entity", "person", "org", "place", "work", "year", "quarter", "month", "date", "number", "unit",
    "event", "award", "tournament", "category", "topic",
)

# Types whose anchors are names or phrases; containment merges across all of them (a place "u.s."
# inside the tournament "u.s. open" is the same anchor). Period and number types merge only with
# their own type, so "2024" stays a year anchor next to the quarter "q1 2024".
NAME_TYPES = frozenset({
    "entity", "person", "org", "place", "work", "event", "award", "tournament", "category", "topic", "unit",
})


@dataclass(frozen=True)
class Anchor:
    text: str
    type: str
    score: float

    def to_dict(self) -> dict[str, Any]:
        return {"text": self.text, "type": self.type, "score": self.score}

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "Anchor":
        return cls(text=str(d["text"]), type=str(d.get("type", "entity")), score=float(d.get("score", 0.0)))

    def variants(self) -> list[str]:
        """Lower-case forms to look for in evidence text, the anchor's own form first."""
        return list(_variants(self.text, self.type))


# -- text normalisation ------------------------------------------------------------------------

_CHAR_MAP = {
    "\u2018": "'", "\u2019": "'", "\u02bc": "'", "\u201c": '"', "\u201d": '"', "\u2010": "-", "\u2011": "-",
    "\u2012": "-", "\u2013": "-", "\u2014": "-", "\u2212": "-", "\u00a0": " ",
}


def _fold_char(c: str) -> str:
    c = _CHAR_MAP.get(c, c)
    low = c.lower()
    if len(low) != 1:
        low = c
    if ord(low) > 127:
        stripped = "".join(ch for ch in unicodedata.normalize("NFKD", low) if not unicodedata.combining(ch))
        if len(stripped) == 1:
            low = stripped
    return low


def fold_same_length(text: str) -> str:
    """Lower case, straight quotes, ASCII dashes, no accents; same length as ``text``."""
    return "".join(_fold_char(c) for c in text)


@functools.lru_cache(maxsize=2048)
def normalize_text(text: str) -> str:
    """Evidence-side normalisation: folded as above, whitespace collapsed, thousands separators gone."""
    t = unicodedata.normalize("NFKC", text)
    t = fold_same_length(t)
    t = re.sub(r"\s+", " ", t)
    t = re.sub(r"(?<=\d),(?=\d{3}(?!\d))", "", t)
    return t


def _norm_variant(v: str) -> str:
    v = fold_same_length(unicodedata.normalize("NFKC", v))
    v = re.sub(r"\s+", " ", v).strip()
    return re.sub(r"(?<=\d),(?=\d{3}(?!\d))", "", v)


# -- periods and dates (the question-side regexes run on the folded, lower-case question) ---------

MONTHS = {
    "january": 1, "february": 2, "march": 3, "april": 4, "may": 5, "june": 6, "july": 7, "august": 8,
    "september": 9, "october": 10, "november": 11, "december": 12,
}
MONTH_ABBR = {
    "jan": 1, "feb": 2, "mar": 3, "apr": 4, "jun": 6, "jul": 7, "aug": 8, "sep": 9, "sept": 9,
    "oct": 10, "nov": 11, "dec": 12,
}
MONTH_NAMES = {v: k for k, v in MONTHS.items()}
_MONTH_ANY = r"(?:january|february|march|april|may|june|july|august|september|october|november|december|" \
             r"jan|feb|mar|apr|jun|jul|aug|sept|sep|oct|nov|dec)\.?"
_MONTH_FULL = r"(?:january|february|march|april|june|july|august|september|october|november|december)"
YEAR = r"(?:1[89]\d{2}|20\d{2})"
_ORD_Q = {"first": 1, "second": 2, "third": 3, "fourth": 4, "1st": 1, "2nd": 2, "3rd": 3, "4th": 4}
_ORD_WORDS = {1: "first", 2: "second", 3: "third", 4: "fourth"}

LEFT_EDGE = r"(?<![\w])"  # a left word boundary that also works before symbols
RIGHT_EDGE = r"(?![\w])"

RE_ISO_DATE = re.compile(LEFT_EDGE + r"(" + YEAR + r")-(\d{1,2})-(\d{1,2})" + RIGHT_EDGE)
RE_SLASH_DATE = re.compile(LEFT_EDGE + r"(\d{1,2})/(\d{1,2})/(\d{4}|\d{2})" + RIGHT_EDGE)
RE_MDY = re.compile(LEFT_EDGE + r"(" + _MONTH_ANY + r")\s+(\d{1,2})(?:st|nd|rd|th)?(?:,?\s*(" + YEAR + r"))?(?!\d)")
RE_DMY = re.compile(LEFT_EDGE + r"(\d{1,2})(?:st|nd|rd|th)?\s+(?:of\s+)?(" + _MONTH_ANY + r")(?:,?\s*(" + YEAR + r"))?" + RIGHT_EDGE)
RE_MONTH_YEAR = re.compile(LEFT_EDGE + r"(" + _MONTH_ANY + r"),?\s+(?:of\s+)?(" + YEAR + r")" + RIGHT_EDGE)
RE_YEAR_MONTH = re.compile(LEFT_EDGE + r"(" + YEAR + r")-(\d{2})(?![\d-])")
RE_MONTH_ALONE = re.compile(LEFT_EDGE + r"(" + _MONTH_FULL + r"|may)" + RIGHT_EDGE)
RE_SEASON = re.compile(LEFT_EDGE + r"(" + YEAR + r")\s?[-/]\s?(" + YEAR + r"|\d{2})(?![\w-])")
RE_DECADE = re.compile(LEFT_EDGE + r"((?:1[89]|20)\d0)'?s" + RIGHT_EDGE)
RE_FISCAL = re.compile(
    LEFT_EDGE + r"(?:fiscal(?:\s+year)?|fy)\s*'?(" + YEAR + r"|\d{2})(?!\d)|" + LEFT_EDGE + r"(" + YEAR + r")\s+fiscal\s+year" + RIGHT_EDGE
)
RE_YEAR = re.compile(
    r"(?<![\w$#£€])(?<!\d[.,])(" + YEAR + r")(?!\d)(?![.,]\d)"
    r"(?!\s*(?:%|percent|feet|ft|meters|metres|miles|km|points|pts|dollars|people|units)(?!\w))"
)
_FY_PREFIX = r"(?:(?:of\s+)?(?:the\s+)?(?:fiscal\s+(?:year\s+)?|fy\s*)?)"
RE_QUARTER = [
    # q1 2024, q1 of 2024, q1 fy2024, q1-2024
    re.compile(LEFT_EDGE + r"q([1-4])(?:\s*[-,]?\s*" + _FY_PREFIX + r"(" + YEAR + r"))" + RIGHT_EDGE),
    # q1'24, q1-24
    re.compile(LEFT_EDGE + r"q([1-4])\s*['-]\s*(\d{2})" + RIGHT_EDGE),
    # 2024 q1
    re.compile(LEFT_EDGE + r"(" + YEAR + r")\s+q([1-4])" + RIGHT_EDGE),
    # 1q24, 1q 2024
    re.compile(LEFT_EDGE + r"([1-4])q\s*'?(" + YEAR + r"|\d{2})" + RIGHT_EDGE),
    # first quarter (of) (fiscal) 2024, 1st qtr of 2024
    re.compile(
        LEFT_EDGE + r"(first|second|third|fourth|1st|2nd|3rd|4th)\s+(?:fiscal\s+)?(?:quarter|qtr\.?)"
        r"(?:\s+(?:of\s+)?(?:the\s+)?(?:fiscal\s+(?:year\s+)?|fy\s*)?(" + YEAR + r"))?" + RIGHT_EDGE
    ),
    # q1 alone
    re.compile(LEFT_EDGE + r"q([1-4])" + RIGHT_EDGE),
]
RELATIVE_TIME = re.compile(
    LEFT_EDGE + r"(?:today|yesterday|tomorrow|tonight|this (?:week|month|year|quarter|season)|"
    r"last (?:week|month|year|quarter|season|night)|past (?:week|month|year|quarter|decade|\d+ \w+)|"
    r"next (?:week|month|year|quarter)|currently|right now|latest|most recent|recent)" + RIGHT_EDGE
)


def _two_digit_year(s: str) -> int:
    n = int(s.lstrip("'"))
    if n >= 100:
        return n
    return 2000 + n if n < 70 else 1900 + n


# The same periods as other texts write them (answers, golds, cited sources), in any case:
_MONTH_WORD = r"(jan|feb|mar|apr|may|jun|jul|aug|sep|oct|nov|dec)[a-z]*\.?"  # a month's name or abbreviation
_MONTH_BY_PREFIX = {name[:3]: n for name, n in MONTHS.items()}
# a year, or a quarter and its year ("q1 2024", "2019"): the periods a refusal says the sources give instead
RE_PERIOD_MENTION = re.compile(r"\b(?:q[1-4]\s+)?" + YEAR + r"\b", re.IGNORECASE)
# the date or year an answer gives (month-first or day-first with its year, ISO, or a year alone)
RE_DATE_OR_YEAR = re.compile(
    r"\b(?:" + _MONTH_WORD + r"\s+\d{1,2},?\s+\d{4}|\d{1,2}\s+" + _MONTH_WORD + r"\s+\d{4}|\d{4}-\d{2}-\d{2}|" + YEAR + r")\b",
    re.IGNORECASE,
)
# month and day, the year optional ("March 5, 2021", "5th Mar"): what the judge compares
RE_TEXT_MDY = re.compile(r"\b" + _MONTH_WORD + r"\s+(\d{1,2})(?:st|nd|rd|th)?\b(?:,?\s+(\d{4}))?", re.IGNORECASE)
RE_TEXT_DMY = re.compile(r"\b(\d{1,2})(?:st|nd|rd|th)?\s+" + _MONTH_WORD + r"(?:,?\s+(\d{4}))?", re.IGNORECASE)


def written_dates(text: str) -> list[tuple[int, int, str]]:
    """(month, day, year or "") of every date written out in ``text``, month-first ones first."""
    out = [(_MONTH_BY_PREFIX[m.group(1).lower()], int(m.group(2)), m.group(3) or "") for m in RE_TEXT_MDY.finditer(text)]
    out += [(_MONTH_BY_PREFIX[m.group(2).lower()], int(m.group(1)), m.group(3) or "") for m in RE_TEXT_DMY.finditer(text)]
    return out


def first_date(text: str) -> tuple[int, int, int] | None:
    """The first date a text writes, as (year, month, day); a year alone is (year, 0, 0). A biography's
    first date is its subject's birth ("Annie Morton (born October 8, 1970) ...")."""
    found = [(m.start(), (int(m.group(3)), _MONTH_BY_PREFIX[m.group(1).lower()], int(m.group(2))))
             for m in RE_TEXT_MDY.finditer(text) if m.group(3)]
    found += [(m.start(), (int(m.group(3)), _MONTH_BY_PREFIX[m.group(2).lower()], int(m.group(1))))
              for m in RE_TEXT_DMY.finditer(text) if m.group(3)]
    found += [(m.start(), (int(m.group(1)), 0, 0)) for m in RE_YEAR.finditer(text)
              if not any(start <= m.start() < start + 20 for start, _ in found)]
    return min(found)[1] if found else None


# -- variants and matching ----------------------------------------------------------------------


def variant_form(text: str) -> str:
    """The normalised form an anchor's variants are written in (possessive dropped)."""
    return _strip_possessive(_norm_variant(text))


def _strip_possessive(s: str) -> str:
    return re.sub(r"(?:'s|s')$", lambda m: "" if m.group(0) == "'s" else "s", s)


def _quarter_variants(t: str) -> list[str]:
    qn = None
    m = re.search(r"(?<![\w])q([1-4])(?![\w])|(?<![\w])q([1-4])(?=\s*['\-]|\s)|(?<![\w])([1-4])q", t)
    if m:
        qn = int(next(g for g in m.groups() if g))
    else:
        m = re.search(r"(first|second|third|fourth|1st|2nd|3rd|4th)", t)
        if m:
            qn = _ORD_Q[m.group(1)]
    if qn is None:
        return [t]
    year = None
    m = re.search(r"(" + YEAR + r")", t)
    if m:
        year = int(m.group(1))
    else:
        m = re.search(r"(?:q[1-4]\s*['\-]\s*|[1-4]q\s*'?)(\d{2})(?!\d)", t)
        if m:
            year = _two_digit_year(m.group(1))
    o = _ORD_WORDS[qn]
    if year is None:
        return [t, f"q{qn}", f"{o} quarter", f"{qn}q", f"{_ordinal(qn)} quarter"]
    yy = f"{year % 100:02d}"
    return [
        t, f"q{qn} {year}", f"q{qn}-{year}", f"q{qn} of {year}", f"q{qn}'{yy}", f"q{qn} '{yy}",
        f"q{qn} fy{year}", f"q{qn} fiscal {year}", f"q{qn} fy{yy}", f"{year} q{qn}",
        f"{o} quarter of {year}", f"{o} quarter {year}", f"{o} quarter of fiscal {year}",
        f"{o} quarter of fiscal year {year}", f"{o} fiscal quarter of {year}", f"{year} {o} quarter",
        f"{_ordinal(qn)} quarter of {year}", f"{_ordinal(qn)} quarter {year}",
        f"{qn}q{yy}", f"{qn}q {year}", f"{qn}q{year}", f"{qn}q {yy}",
    ]


def _ordinal(n: int) -> str:
    return {1: "1st", 2: "2nd", 3: "3rd"}.get(n, f"{n}th")


def _month_forms(mo: int) -> list[str]:
    full = MONTH_NAMES[mo]
    forms = [full]
    abbr = [k for k, v in MONTH_ABBR.items() if v == mo]
    forms += abbr + [a + "." for a in abbr]
    return forms


def _date_variants(t: str) -> list[str]:
    y = mo = d = None
    if m := RE_ISO_DATE.search(t):
        y, mo, d = int(m.group(1)), int(m.group(2)), int(m.group(3))
    elif m := RE_SLASH_DATE.search(t):
        a, b, yr = int(m.group(1)), int(m.group(2)), m.group(3)
        y = _two_digit_year(yr) if len(yr) == 2 else int(yr)
        mo, d = (a, b) if a <= 12 else (b, a)
    elif m := RE_MDY.search(t):
        mo, d = _month_number(m.group(1)), int(m.group(2))
        y = int(m.group(3)) if m.group(3) else None
    elif m := RE_DMY.search(t):
        d, mo = int(m.group(1)), _month_number(m.group(2))
        y = int(m.group(3)) if m.group(3) else None
    if mo is None or not (1 <= mo <= 12) or d is None:
        return [t]
    out = [t]
    for name in _month_forms(mo):
        if y is not None:
            out += [f"{name} {d}, {y}", f"{name} {d} {y}", f"{d} {name} {y}", f"{d} {name}, {y}",
                    f"{name} {d}{_suffix(d)}, {y}", f"{d}{_suffix(d)} {name} {y}"]
        else:
            out += [f"{name} {d}", f"{d} {name}", f"{name} {d}{_suffix(d)}", f"{d}{_suffix(d)} of {name}"]
    if y is not None:
        out += [f"{y}-{mo:02d}-{d:02d}", f"{mo}/{d}/{y}", f"{mo:02d}/{d:02d}/{y}"]
    return out


def _suffix(d: int) -> str:
    return "th" if 11 <= d % 100 <= 13 else {1: "st", 2: "nd", 3: "rd"}.get(d % 10, "th")


def _month_number(s: str) -> int | None:
    s = s.rstrip(".")
    return MONTHS.get(s) or MONTH_ABBR.get(s)


def _month_variants(t: str) -> list[str]:
    mo = y = None
    if m := RE_MONTH_YEAR.search(t):
        mo, y = _month_number(m.group(1)), int(m.group(2))
    elif m := RE_YEAR_MONTH.search(t):
        y, mo = int(m.group(1)), int(m.group(2))
    elif m := re.search(_MONTH_ANY, t):
        mo = _month_number(m.group(0))
    if mo is None:
        return [t]
    if y is None:
        return [t] + _month_forms(mo)
    out = [t]
    for name in _month_forms(mo):
        out += [f"{name} {y}", f"{name}, {y}", f"{name} of {y}"]
    out += [f"{y}-{mo:02d}", f"{mo:02d}/{y}", f"{mo}/{y}"]
    return out


def _year_variants(t: str) -> list[str]:
    if m := RE_SEASON.search(t):
        y1, y2 = int(m.group(1)), m.group(2)
        y2full = int(y2) if len(y2) == 4 else (y1 // 100) * 100 + int(y2) + (100 if int(y2) < y1 % 100 else 0)
        s2 = f"{y2full % 100:02d}"
        return [t, f"{y1}-{y2full}", f"{y1}-{s2}", f"{y1}/{s2}", f"{y1}/{y2full}", f"{y1} - {y2full}",
                f"{y1}-{y2full} season", f"{y1}-{s2} season"]
    if m := RE_DECADE.search(t):
        d = m.group(1)
        return [t, f"{d}s", f"{d}'s", f"'{d[2:]}s", f"{d[2:]}s"]
    if m := RE_FISCAL.search(t):
        y = m.group(1) or m.group(2)
        year = _two_digit_year(y) if len(y) == 2 else int(y)
        yy = f"{year % 100:02d}"
        return [t, f"fiscal year {year}", f"fiscal {year}", f"fy{year}", f"fy {year}", f"fy{yy}", f"fy-{year}",
                f"fy '{yy}", f"{year} fiscal year", str(year)]
    return [t]


def _person_variants(t: str) -> list[str]:
    out = [t]
    parts = t.replace(".", ". ").split()
    parts = [p for p in parts if p]
    if len(parts) >= 2:
        last = parts[-1]
        if last in {"jr.", "jr", "sr.", "sr", "ii", "iii", "iv"} and len(parts) >= 3:
            last = parts[-2]
        if len(last) >= 3 and last not in GENERIC_WORDS:
            out.append(last)
    return out


def _name_variants(t: str) -> list[str]:
    out = [t]
    if t.startswith("the "):
        out.append(t[4:])
    for v in list(out):
        if "." in v:
            out.append(v.replace(".", ""))
            out.append(re.sub(r"\.\s*", " ", v).strip())
        if "-" in v:
            out.append(v.replace("-", " "))
            out.append(v.replace("-", ""))
        if " & " in v:
            out.append(v.replace(" & ", " and "))
            out.append(v.replace(" & ", "&"))
        if " and " in v:
            out.append(v.replace(" and ", " & "))
    return out


_PART = r"season|series|episode|volume|part|chapter|book|round|stage|leg|week|edition"
_TITLE_PART = re.compile(rf"(.+?),?\s+({_PART})\s+(\d+)")
_PART_OF_TITLE = re.compile(rf"({_PART})\s+(\d+)\s+of\s+(.+)")


def _part_variants(t: str) -> list[str]:
    """A numbered part of a work in both word orders: a question's "Grey's Anatomy season 17" is a
    source's "season 17 of Grey's Anatomy", and the other way round."""
    if m := _TITLE_PART.fullmatch(t):
        title, part, n = m.groups()
    elif m := _PART_OF_TITLE.fullmatch(t):
        part, n, title = m.groups()
    else:
        return []
    return [f"{title} {part} {n}", f"{part} {n} of {title}", f"{part} {n} of the {title}", f"{title}: {part} {n}"]


@functools.lru_cache(maxsize=4096)
def _variants(text: str, type_: str) -> tuple[str, ...]:
    t = _strip_possessive(_norm_variant(text))
    out: list[str] = []
    entry = lexicon_index().get(t)
    if entry is not None:
        out += [t] + list(entry.variants)
    if type_ == "quarter":
        out += _quarter_variants(t)
    elif type_ == "date":
        out += _date_variants(t)
    elif type_ == "month":
        out += _month_variants(t)
    elif type_ == "year":
        out += _year_variants(t)
    elif type_ == "number":
        out += [t]
        if m := re.fullmatch(r"([$€£]?)\s?(\d+(?:\.\d+)?)\s*(%|percent|per cent)", t):
            n = m.group(2)
            out += [f"{n}%", f"{n} %", f"{n} percent", f"{n} per cent"]
        elif m := re.fullmatch(r"([$€£])\s?(.+)", t):
            out += [m.group(2), f"{m.group(1)}{m.group(2)}"]
        digits = re.sub(r"(?<=\d),(?=\d{3})", "", t)
        out.append(digits)
    elif type_ == "person":
        out += _person_variants(t)
    else:
        out += _name_variants(t) + _part_variants(t)
        if type_ == "topic" and " " not in t and len(t) > 3:
            out.append(t[:-1] if t.endswith("s") else t + "s")
    seen: dict[str, None] = {}
    for v in out:
        v = _norm_variant(v)
        if v:
            seen.setdefault(v, None)
    return tuple(seen)


@functools.lru_cache(maxsize=4096)
def _variant_pattern(text: str, type_: str) -> re.Pattern:
    parts = []
    for v in _variants(text, type_):
        left = r"(?<![\w])" if v[0].isalnum() or v[0] == "_" else ""
        right = r"(?![\w])" if v[-1].isalnum() or v[-1] == "_" else ""
        if v[0].isdigit():
            left += r"(?<!\d[.,])"
        if v[-1].isdigit():
            right += r"(?![.,]\d)"
        body = re.escape(v).replace(r"\ ", r"\s+")
        parts.append(left + body + right)
    return re.compile("|".join(parts) if parts else r"(?!x)x")


def anchor_in_text(anchor: Anchor, text: str) -> bool:
    """Case-insensitive whole-word match of any variant of the anchor in ``text``."""
    if not text:
        return False
    return _variant_pattern(anchor.text, anchor.type).search(normalize_text(text)) is not None


def anchor_coverage(anchors: list[Anchor], text: str) -> tuple[float, list[Anchor]]:
    """Fraction of ``anchors`` found in ``text`` (1.0 when there are none) and the missing ones."""
    if not anchors:
        return 1.0, []
    missing = [a for a in anchors if not anchor_in_text(a, text)]
    return (len(anchors) - len(missing)) / len(anchors), missing


# -- names and numbers in text --------------------------------------------------------------------
_NAME = re.compile(r"\b([A-Z][\w'&-]*(?:\s+(?:(?:of|the|de|&)\s+){0,2}[A-Z][\w'&-]*)*)")  # "Society of the United States" is one name
_POSSESSIVE = re.compile(r"'s?$")
_FILLER = {"yes", "no", "source", "sources", "answer", "according", "based", "however", "also", "both", "either", "neither"}
NOT_NAMES = frozenset(STOPWORDS_EN) | _FILLER
RE_NUMBER = re.compile(r"\d[\d,]*(?:\.\d+)?")


def claims_of(answer: str) -> list[str]:
    """Checkable claims of a text: numbers and capitalised names that are not sentence-initial filler
    (what an answer claims; what a question or a source sentence names)."""
    text = strip_markup(answer)
    out: list[str] = []
    for m in RE_NUMBER.finditer(text):
        out.append(m.group(0).rstrip(".,"))
    for m in _NAME.finditer(text):
        name = m.group(1).strip(" .")
        words = name.split()
        if words and words[0].lower() in NOT_NAMES:
            words = words[1:]  # "The Beatles" keeps "Beatles"; a sentence-initial "It" is dropped
        name = _POSSESSIVE.sub("", " ".join(words))  # "Braddock's death" claims Braddock, as the source says
        if name and name.lower() not in NOT_NAMES:
            out.append(name)
    seen: dict[str, None] = {}
    for c in out:
        seen.setdefault(c, None)
    return list(seen)
