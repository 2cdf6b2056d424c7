"""The hop plan: whether a question needs its answer found in steps, and what each step must name.

A multi-hop question asks about something it only describes. HotpotQA's two shapes:

- **bridge**: "What government position was held by the woman who portrayed Corliss Archer in the film
  Kiss and Tell?" Hop 1 finds the entity the question describes (a page linking Kiss and Tell to
  Shirley Temple), hop 2 the asked fact about that entity (her page). Neither page alone answers.
- **comparison**: "Who is older, Annie Morton or Terry Richardson?" One lookup per compared item (each
  one's birth date), then the comparison.

The plan is read from the question's shape and its anchors, with no model call: the question kind
(kind.py) says comparison, or it asks what two named things both are or share ("What profession did
Alan Crosland and Kurt Voss both hold?"), and a question that names something and describes another thing
by it (a relative clause, a participle: "a film directed by", a role: "the father of Kasper Schmeichel" asked
about, not asked for: "Who is the father of Kasper Schmeichel?" is one lookup) is a bridge. "The battle of
Hastings" and "Normandy's exports" name one thing: no cue. Everything
else is ``single``: its path and its tokens are those of a one-passage question.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Literal

from agentic_rag.anchors.matching import NAME_TYPES, NOT_NAMES, RE_NUMBER, Anchor, claims_of, normalize_text

Shape = Literal["single", "bridge", "comparison"]
SHAPES: tuple[Shape, ...] = ("single", "bridge", "comparison")

# anchors that name a thing a page can be about; a "topic" anchor is a common noun ("government position")
_NAMING = NAME_TYPES - {"topic", "unit", "category"}
_WH = re.compile(r"^(?:what|which|who|whom|whose|when|where|why|how|is|are|was|were|do|does|did|has|have|had|can|could|"
                 r"will|would)\b\s*", re.IGNORECASE)  # "Which Australian" names "Australian", "Were Scott Derrickson" him
# a clause hung on a noun inside the question ("the woman who portrayed ..."), not the question's own
# wh-phrase ("From which countries ...", "In which movie ...", "..., but where does Buck-Tick hail from?": a
# relative clause never inverts its verb); a participle phrase ("a 2004 film directed by", "What Hindi thriller
# directed by", "this food found in", "an American animated television series based on": not a passive verb, "What
# natives were displaced by"; "What is X called?" asks X's name); a role of a named thing ("the director
# of Big Stone Gap": "the battle of Hastings" names one thing)
_RELATIVE = re.compile(r"^\s*\S+\s+\S+\s.*?\b(?P<rel>who|whom|whose|which|that|where)\s+(?!(?:do|does|did)\b)\w",
                       re.IGNORECASE)
_ROLE_NOUNS = (r"director|father|mother|son|daughter|wife|husband|brother|sister|grandson|granddaughter|nephew|niece|"
               r"cousin|founder|creator|author|writer|composer|producer|owner|publisher|developer|manufacturer|designer|"
               r"architect|star|host|leader|president|coach|captain|successor|predecessor|parent company|headquarters|"
               r"capital|ambassador|officer|ceo|birthplace|hometown|spouse|child|children|members?|suburb")
_ROLE_OF = re.compile(rf"\b(?:(?:{_ROLE_NOUNS})\s+of|(?:production |record |film )?(?:company|label|studio)\s+for)\s+(?:the\s+)?\S",
                      re.IGNORECASE)
_NAME_WORD = r"(?-i:[A-Z0-9])[\w.'&-]*"  # a word of a name: capitalised or a number ("AT&T", "O'Neill", "50")
# a work or role of a named thing, by its possessive: "Roald Dahl's variation on a popular anecdote", "Antonín Dvořák's
# reknowned opera" (not when the work is named after it: "Andrey Zvyagintsev's film Leviathan" names the film)
_POSSESSED = re.compile(rf"{_NAME_WORD}'s\s+(?:(?-i:[a-z-]+)\s+){{0,2}}?(?:{_ROLE_NOUNS}|film|movie|album|novel|book|song|"
                        r"opera|play|series|show|band|variation|debut|sequel|team|club|company|label)\b(?!\s+(?-i:[A-Z\"]))",
                        re.IGNORECASE)
_DONE = r"\w+ed|written|sung|shown|known|born|made|run|held|founded|based|built"  # a participle ("found": not first of two)
_PARTICIPLE = re.compile(r"\b(?:a|an|the|what|which|this|these)\s+(?:(?!(?:is|are|was|were|be|been|has|have|had)\s)[\w-]+\s+){0,4}"
                         rf"(?:(?:(?:{_DONE})\s+and\s+)?(?:{_DONE}|found)\s+"
                         r"(?:by|in|as|for|from|at|on|under|after|where)\b|starring\b|featuring\b|(?:named|called)\b(?!\s*\?)|"
                         r"inspiring(?=\s+(?-i:[A-Z\"])))", re.IGNORECASE)
# a participle hung on a bare noun: "works published by", "music written by" (not a passive verb: "was written by",
# "originally designed by", nor the second of two verbs: "written and directed by")
_BARE_PARTICIPLE = re.compile(r"\b(?!(?:is|are|was|were|be|been|being|has|have|had|and|or|not|also|\w+ly)\b)[a-z]+\s+"
                              r"(?:\w+ed|written|sung|shown|known|made|held|founded)\s+by\b")
# a question that asks for the role itself: "Who is the CEO of Tesla in 2021?", "Who was Margaret's husband?" (its
# holder is the answer, one lookup; "Where was the CEO of Tesla born?" and "the father of the director of X" ask on)
_NAME_WORDS = (rf"(?:{_NAME_WORD}|of|the|and|de|von|van|for)(?:\s+(?:{_NAME_WORD}|of|the|and|de|von|van|for))*"
               r"(?:\s+(?:movie|film|company|band|team|album|series|show|novel|book|game|club|song))?")
_ASKS_ROLE = re.compile(rf"^(?:who|what|which)\s+(?:is|was|are|were)\s+(?:(?:the\s+)?(?:{_ROLE_NOUNS})\s+of\s+{_NAME_WORDS}|"
                        rf"{_NAME_WORD}(?:\s+{_NAME_WORD})*'s\s+(?:{_ROLE_NOUNS}))"
                        r"(?:\s+in\s+\d{4})?\s*\?\s*$", re.IGNORECASE)
# "same", "both", "in common", "also": a yes/no question about two named things is a comparison
_JOINT = re.compile(r"\b(?:both|same|in common|also|either|neither|each other|together)\b")
# what two named things share, asked by any question: "what profession did A and B both hold", "the
# oldest among A and B"
_SHARED = re.compile(r"\b(?:both|in common|among)\b")
# two names side by side, asked of together: "What nationality were Alfred Gell and Edmund Leach?", "What
# occupation was shared by David Yates and Pietro Germi?"
_TOGETHER = re.compile(r"\b(?:share|shared|different|differ|same|similar|were|are)\b")
# what a comparison compares, read from its words: when (a date per item), how much (a number per item)
_WHEN_WORDS = re.compile(r"\b(?:older|oldest|younger|youngest|earlier|earliest|later|latest|first|last|before|after|"
                         r"born|died|age)\b")
_WHEN_DONE = re.compile(r"\b(?:founded|established|released|formed|created|opened|built)\b")  # a date, unless "more"
_AMOUNT_WORDS = re.compile(r"\b(?:more|most|less|least|fewer|larger|largest|bigger|biggest|smaller|smallest|higher|"
                           r"highest|lower|taller|tallest|shorter|longer|longest|busier|populous|population|many|much)\b")
# which value wins the comparison: the least (the earliest date, the smallest number) or the most
_LEAST = re.compile(r"\b(?:older|oldest|earlier|earliest|first|before|less|least|fewer|smaller|smallest|lower|lowest|"
                    r"shorter|shortest)\b")
_MOST = re.compile(r"\b(?:younger|youngest|later|latest|last|after|newer|newest|more recent(?:ly)?|more|most|larger|"
                   r"largest|bigger|biggest|higher|highest|taller|tallest|longer|longest|busier|busiest|greater|"
                   r"populous)\b")


@dataclass(frozen=True)
class HopPlan:
    """What a chain for this question must show.

    ``names`` are the named things the question starts from (a bridge's hop 1 must link one of them to
    the entity it describes); ``items`` the compared things (a comparison has a hop per item), and
    ``measure`` what each item's hop must state: a ``date``, an ``amount``, any ``fact``, or the answer
    itself when the question asks what both items are or share (``shared``: "British" of each
    anthropologist)."""

    shape: Shape
    names: tuple[str, ...] = ()
    items: tuple[str, ...] = ()
    measure: Literal["date", "amount", "fact", "shared"] = "fact"
    why: str = ""  # what in the question decided the shape (the trace shows it)
    wins: Literal["least", "most", ""] = ""  # a comparison's winner: the least or the most of the measured values

    @property
    def multi_hop(self) -> bool:
        return self.shape != "single"

    @property
    def hops(self) -> tuple[str, ...]:
        """Each hop's role, in order: a hop per compared item, or the bridge and then the answer."""
        if self.shape == "comparison":
            return tuple(f"item:{i}" for i in self.items)
        return ("bridge", "answer") if self.shape == "bridge" else ()

    def to_dict(self) -> dict[str, Any]:
        """As the state keeps it (plain JSON-ready data)."""
        return {"shape": self.shape, "names": list(self.names), "items": list(self.items), "measure": self.measure,
                "why": self.why, "hops": list(self.hops), "wins": self.wins}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "HopPlan":
        return cls(data.get("shape", "single"), tuple(data.get("names", ())), tuple(data.get("items", ())),
                   data.get("measure", "fact"), data.get("why", ""), data.get("wins", ""))


def described_clause(question: str) -> str:
    """The words that describe a bridge: the question's relative clause with the noun it hangs on ("woman who
    portrayed Corliss Archer in the film Kiss and Tell?"); "" when the question has none."""
    m = _RELATIVE.match(question)
    if not m:
        return ""
    head = question[: m.start("rel")].split()
    return " ".join([*head[-1:], question[m.start("rel"):]])


def _bare(name: str) -> str:
    """A name without the question's punctuation or a lower-case word before it: "The Flowers of Romance?"
    is "The Flowers of Romance", "the Knocking" "Knocking" (a capitalised word may open a title: "One
    Big Hapa Family", "When the Levee Breaks")."""
    words = name.strip().rstrip("?").split()
    while len(words) > 1 and words[0][:1].islower():
        words = words[1:]
    return " ".join(words)


def _titled(question: str, name: str) -> str:
    """A name with the capitalised function word the name readers drop before it, when the question writes
    them as one title mid-sentence ("For Against" of "Are Local H and For Against both ...": not "Against");
    an article stays off ("The Beatles" is found as "Beatles"), as does the question's first word."""
    m = re.search(rf"(?<=[a-z,;:] )(?!(?:The|A|An)\b)((?-i:[A-Z])[a-z]*) {re.escape(name)}(?!\w)", question)
    return f"{m.group(1)} {name}" if m and m.group(1).lower() in NOT_NAMES else name


def question_names(question: str, anchors: list[Anchor]) -> list[str]:
    """The named things of a question, in the question's order: its naming anchors and the capitalised
    names and numbers a reader sees in it (the anchor predictor may keep "Kiss" of "Kiss and Tell", the
    claims reader "Kiss" and "Tell"; either names the film to a page that does). A name inside a longer
    one is that one ("Nicholas II" of "Emperor Nicholas II"); a lower-case anchor is a common noun, and
    the question's capitalised first word a name only when the anchor predictor says so ("Hayden is a
    singer", not "Out of two colonies")."""
    tagged = [_bare(_WH.sub("", a.text)) for a in anchors if a.type in _NAMING or a.type == "year"]
    found = [_titled(question, n) for n in [*tagged, *(_bare(_WH.sub("", c)) for c in claims_of(question))]]
    folded = normalize_text(question)
    first = normalize_text(question.split()[0]) if question.split() else ""
    at: dict[str, int] = {}
    for name in found:
        key = normalize_text(name).strip()
        if not key or name in at or not re.search(r"[A-Z0-9]", name) or (key == first and name not in tagged):
            continue
        where = folded.find(key)
        if where >= 0:
            at[name] = where
    longest = [n for n in at if not any(n != m and re.search(rf"(?<!\w){re.escape(normalize_text(n))}(?!\w)", normalize_text(m))
                                        for m in at)]
    return sorted(longest, key=at.get)


# the options a question lists after a comma: ", Letters to Cleo or Screaming Trees," (each a name of at most six
# words, lower-case joining words and all: the name reader splits "Letters to Cleo" at "to")
_OPTIONS = re.compile(r",\s+(?:the\s+)?([A-Z](?:[^\s,?]*)(?:\s+[^\s,?]+){0,5}?)\s+or\s+(?:the\s+)?"
                      r"([A-Z](?:[^\s,?]*)(?:\s+[^\s,?]+){0,5}?)\s*[,?]")


def _items(question: str, names: list[str]) -> list[str]:
    """The compared things: the options listed after a comma, or the names on either side of the
    question's "or" or "and" (a year beside a title, "The Ganymede Takeover (1967)", is not one)."""
    options = _OPTIONS.search(question)
    if options:
        return [options.group(1), options.group(2)]
    names = [n for n in names if not RE_NUMBER.fullmatch(n)]
    q = normalize_text(question)
    for joint in (" or ", " and "):
        head, sep, tail = q.rpartition(joint)
        if not sep:
            continue
        left = [n for n in names if normalize_text(n) in head]
        right = [n for n in names if normalize_text(n) in tail]
        if left and right:
            return [left[-1], right[0]]
    return names[:2] if len(names) >= 2 else []


def _side_by_side(question: str, names: list[str]) -> bool:
    """Whether two of the question's names stand joined by "and" ("Skin Yard and Ostava")."""
    q = normalize_text(question)
    keys = [normalize_text(n) for n in names if not RE_NUMBER.fullmatch(n)]
    return any(re.search(rf"(?<!\w){re.escape(a)},?\s+and\s+(?:the\s+)?{re.escape(b)}(?!\w)", q)
               for a in keys for b in keys if a != b)


def plan_hops(question: str, anchors: list[Anchor], kind: str) -> HopPlan:
    """The question's hop plan (see the module's docstring); ``kind`` is anchors/kind.question_kind's."""
    names = question_names(question, anchors)
    lowered = normalize_text(question)
    joint = kind == "yes_no" and _JOINT.search(lowered) and len(names) >= 2
    shared = len(names) >= 2 and (_SHARED.search(lowered)
                                  or (_TOGETHER.search(lowered) and _side_by_side(question, names)))
    # "Which was published more frequently, Popular Science or Girlfriends?", "Which band is from Nebraska, Local H
    # or For Against?": the options it lists are the items
    listed = bool(_OPTIONS.search(question))
    if kind == "comparison" or joint or shared or listed:
        items = _items(question, names)
        if len(items) == 2:
            measure = ("date" if _WHEN_WORDS.search(lowered) else "amount" if _AMOUNT_WORDS.search(lowered)
                       else "date" if _WHEN_DONE.search(lowered) else "fact")
            if measure == "fact" and shared and kind not in ("yes_no", "comparison"):
                measure = "shared"  # what both are: the answer, not one of the items
            most, least = _MOST.search(lowered), _LEAST.search(lowered)
            wins = "" if measure == "fact" or kind == "yes_no" or bool(most) == bool(least) else "most" if most else "least"
            return HopPlan("comparison", tuple(names), tuple(items), measure, why="compares " + " and ".join(items),
                           wins=wins)
    # a description of a common noun ("a task that ...") is a one-page question: a bridge starts from a name
    if not any(not RE_NUMBER.fullmatch(n) for n in names):
        return HopPlan("single", tuple(names), why="names nothing to start from")
    for cue, pattern in (("a relative clause", _RELATIVE), ("a participle", _PARTICIPLE), ("a participle", _BARE_PARTICIPLE)):
        if pattern.search(question):
            return HopPlan("bridge", tuple(names), why=f"describes what it asks about by {cue}")
    if _ASKS_ROLE.search(question):
        return HopPlan("single", tuple(names), why="asks for a role of what it names, nothing about its holder")
    if _ROLE_OF.search(question) or _POSSESSED.search(question):
        return HopPlan("bridge", tuple(names), why="describes what it asks about by a role of a named thing")
    return HopPlan("single", tuple(names), why="asks about what it names")
