"""What an answer asserts, read from its words: the option a choice answer picks, a yes/no answer's
polarity, and whether a name it mentions is denied.

Matching words is not reading a claim. "Jed Hoyer is older than John William Henry II." names the gold
"John William Henry II" and picks the other option; "No, they are not both actors" holds the word "no"
whatever the gold. The judge (``eval/judge.py``) and the short answer (``generator/short_answer.py``)
both need the claim, so it is read here, once, with the same rules.

The reading is deliberately plain: a small model's answers are short declaratives ("X is older than Y.",
"X was released first.", "Yes, both X and Y are ..."), and a reading that is unsure says so (``None``)
rather than guessing, so the judge can count it as no answer to the choice.
"""

from __future__ import annotations

import re
import unicodedata
from typing import Literal

from agentic_rag.text import split_sentences

Polarity = Literal["yes", "no"]

# words a choice's options share with the rest of the question and never tell the options apart
_FUNCTION = frozenset(
    "a an the of and or in on at to for by with from as is are was were be s 's v vs".split()
)
# the first word of a question that asks for a yes or a no
_AUXILIARIES = frozenset("is are was were do does did has have had can could will would should shall may might".split())
# words inside a capitalised name that are not capitalised themselves ("Battle of Manila", "Selle v. Gibb")
_NAME_JOINERS = frozenset("of the and de la le du des da di von van der del y & v v. vs vs. 's on in for a an ul bin ibn al el".split())
# joiners that never begin or end a name ("El Paso" and "Ibn Arabi" keep theirs)
_EDGE_WORDS = frozenset("of the and a an & 's on in for v v. vs vs.".split())
_WH = frozenset("which who whose what where when is are was were do does did has have had can could".split())
# before a mention, these make it the option that loses: "older than Y", "compared to Y", "while Y ..."
_LOSING_BEFORE = ("than", "compared to", "compared with", "in comparison to", "over", "versus", "vs", "unlike",
                  "rather than", "instead of", "while", "whereas", "as opposed to")
_NEGATION = frozenset("not never no neither nor".split())
_NEGATED_AUX = re.compile(r"^(?:(?:is|was|were|are|did|does|do|has|have|had|could|can|will|would|should) not|never|cannot)\b")
_BOTH = frozenset("both neither tied equal same".split())
_CONCLUSION = re.compile(r"^(?:therefore|thus|so|hence|in conclusion|overall|in summary)\b[,\s]", re.IGNORECASE)
_PREAMBLE = re.compile(
    r"^(?:based on|according to|from|given|as per|per)\b[^,]{0,120},\s*|^(?:the answer is|answer:)\s*", re.IGNORECASE
)
_YES_NO_WORD = re.compile(r"^\W*(yes|no)\b", re.IGNORECASE)
_NO_WORDS = re.compile(r"\b(?:not|never|neither|nor|no)\b")
_YES_WORDS = re.compile(r"\b(?:both|same|also|each|all)\b", re.IGNORECASE)


def fold(text: str) -> str:
    """Lower case without accents: "Šafářová" meets "safarova"."""
    decomposed = unicodedata.normalize("NFKD", str(text).replace("\u2019", "'").lower())
    return "".join(c for c in decomposed if not unicodedata.combining(c))


def words(text: str) -> list[str]:
    """Folded words, a contraction's negation spelt out ("didn't" -> "did not") so one pattern reads both."""
    text = re.sub(r"\bcan't\b", "can not", fold(text))
    text = re.sub(r"\bwon't\b", "will not", text).replace("n't", " not")
    return re.findall(r"[a-z0-9]+", text)


def without_preamble(answer: str) -> str:
    """The answer from its claim on: "Based on the information provided, X ..." -> "X ..."."""
    text = answer.strip()
    while m := _PREAMBLE.match(text):
        text = text[m.end():]
    return text


# --- choices -------------------------------------------------------------------------------------------


def choice_options(question: str) -> tuple[str, str] | None:
    """The two options of a choice ("Who is older, Ferdi Taygan or Mahesh Bhupathi?"), as the question
    writes them; None when the question offers none. The options are cut at the question's own
    delimiters (a comma, a colon, a dash) where it has them, else as the run of capitalised words next
    to the "or" ("Is Gasherbrum II or Nuptse closest to ...")."""
    q = re.sub(r"\s+", " ", str(question)).strip().rstrip("?. ").strip()
    m = list(re.finditer(r",?\s+or\s+", q, re.IGNORECASE))
    if len(m) != 1:
        if b := re.search(r"\bbetween (.+?) and (.+?)(?:,|$)", q, re.IGNORECASE):
            return _cleaned(b.group(1), b.group(2))
        return None
    left, right = q[:m[0].start()], q[m[0].end():].strip()
    delimited = next((d for d in _DELIMITERS if d in left), None)
    if delimited:  # "Which band, X or Y, had ...", "Who is older, X or Y": the options fill the delimited part
        return _cleaned(left.rsplit(delimited, 1)[1], re.split(r"[,?]", right, maxsplit=1)[0])
    return _cleaned(_name_run(left.split(), backwards=True), _name_run(right.split(), backwards=False))


_DELIMITERS = (",", ":", "--", "\u2014", "\u2013 ", ";")


def _cleaned(left: str, right: str) -> tuple[str, str] | None:
    options = tuple(re.sub(r"^(?:the|a|an)\s+", "", o.strip(" \"'\u201c\u201d,:"), flags=re.IGNORECASE) for o in (left, right))
    if not all(options) or any(len(o.split()) > 12 for o in options) or fold(options[0]) == fold(options[1]):
        return None
    return options  # type: ignore[return-value]


def _name_run(tokens: list[str], backwards: bool) -> str:
    """The name next to the "or" when the question has no delimiter: its run of capitalised words (with
    the small words names hold), read away from the "or"; a lower-case question's one word there."""
    order = list(range(len(tokens) - 1, -1, -1)) if backwards else list(range(len(tokens)))
    run: list[str] = []
    for k, i in enumerate(order):
        t = tokens[i]
        if backwards and i == 0 and fold(t) in _WH:
            break
        starts = t[:1].isupper() or t[:1].isdigit() or t[:1] in "\"'\u201c"
        if starts or (fold(t) in _NAME_JOINERS and (run or (k == 0 and not backwards))):
            run.append(t)
        else:
            break
    run = run[::-1] if backwards else run
    while run and fold(run[0]) in _EDGE_WORDS:
        run = run[1:]
    while run and fold(run[-1]) in _EDGE_WORDS:
        run = run[:-1]
    if run:
        return " ".join(run)
    near = tokens[-1:] if backwards else tokens[:1]
    return near[0] if near else ""


def _keys(option: str, other: str) -> list[list[str]]:
    """The word sequences that name an option: all of it, and each word the other option lacks."""
    mine, theirs = words(option), set(words(other))
    content = [w for w in mine if w not in _FUNCTION]
    keys = [content] if content else []
    keys += [[w] for w in content if w not in theirs and (len(w) > 2 or w.isdigit())]
    return [k for k in keys if k]


def _mentions(tokens: list[str], option: str, other: str) -> list[tuple[int, int]]:
    """Where in ``tokens`` the option is named: (start, end) of each naming, overlapping matches of its
    keys merged ("Mahesh Bhupathi" and "Bhupathi" inside it are one naming)."""
    spans = sorted({(i, i + len(key)) for key in _keys(option, other)
                    for i in range(len(tokens) - len(key) + 1) if tokens[i:i + len(key)] == key})
    merged: list[tuple[int, int]] = []
    for start, end in spans:
        if merged and start < merged[-1][1]:
            merged[-1] = (merged[-1][0], max(end, merged[-1][1]))
        else:
            merged.append((start, end))
    return merged


def _loses(tokens: list[str], at: int) -> bool:
    before = " ".join(tokens[max(0, at - 4):at])
    return any(re.search(rf"\b{re.escape(m)}(?: \w+){{0,2}}$", before) for m in _LOSING_BEFORE)


def _denied(tokens: list[str], start: int, end: int) -> bool:
    """Whether the naming at ``tokens[start:end]`` is denied: "not X", "did not sing with X", "X is not ...",
    "X never"."""
    before = tokens[max(0, start - 3):start]
    if any(w in _NEGATION for w in before) and "only" not in before:
        return True
    return bool(_NEGATED_AUX.match(" ".join(tokens[end:end + 3])))


def chosen_option(answer: str, options: tuple[str, str]) -> int | None:
    """Which option (0 or 1) ``answer`` asserts; None when it names neither, both alike ("both", "tied"),
    or leaves the choice open. A conclusion ("Therefore, ...") is read before the first sentence."""
    sentences = split_sentences(without_preamble(str(answer))) or [str(answer)]
    ordered = [s for s in sentences if _CONCLUSION.match(s.strip())][::-1] + sentences
    for sentence in ordered:
        pick = _pick_in(sentence, options)
        if pick != "none":
            return pick if isinstance(pick, int) else None
    return None


def gold_option(gold: str, options: tuple[str, str]) -> int | None:
    """The option a gold answer is, read as an answer is (a CRAG gold is often a sentence: "visa has a
    higher return on assets than mastercard"), and only when it names at least half of that option's own
    words: a gold "Dirt track racing" shares a word with the "or" of "performed on clay or dirt surfaced
    oval tracks" and is no option of it; "Kenneth Eliot Flach" is "Ken Flach"."""
    picked = chosen_option(gold, options)
    if picked is None:
        return None
    own = {w for w in words(options[picked]) if w not in _FUNCTION} - set(words(options[1 - picked]))
    said = set(words(gold))
    return picked if own and 2 * len(own & said) >= len(own) else None


def names_an_option(answer: str, options: tuple[str, str]) -> bool:
    """Whether ``answer`` names either option anywhere (picking one or not)."""
    return any(_pick_in(s, options) != "none" for s in split_sentences(str(answer)) or [str(answer)])


def _pick_in(sentence: str, options: tuple[str, str]) -> int | str:
    """The option a sentence picks, "open" when it names an option without picking, "none" when it names neither."""
    tokens = words(sentence)
    spots = sorted((span, i) for i in (0, 1) for span in _mentions(tokens, options[i], options[1 - i]))
    if not spots:
        return "none"
    if {i for _, i in spots} == {0, 1} and _BOTH & set(tokens):
        return "open"
    # "X and Y ...": a pair named together picks neither (the pick, if any, follows)
    joined = [k for k in range(len(spots) - 1)
              if spots[k][1] != spots[k + 1][1] and tokens[spots[k][0][1]:spots[k + 1][0][0]] == ["and"]]
    paired = {*joined, *(k + 1 for k in joined)}
    votes: list[tuple[int, bool]] = []  # (option, for it)
    for k, ((start, end), i) in enumerate(spots):
        if k not in paired and not _loses(tokens, start):
            votes.append((i, not _denied(tokens, start, end)))
    if not votes:
        return "open"
    option, plain = votes[0]
    return option if plain else 1 - option


# --- yes / no ------------------------------------------------------------------------------------------


def asks_yes_no(question: str) -> bool:
    """A question answered by a yes or a no: it opens with an auxiliary ("Are both ...", "Did X ...") and
    offers no options to choose from."""
    first = words(question)[:1]
    return bool(first) and first[0] in _AUXILIARIES and choice_options(question) is None


def polarity(answer: str) -> Polarity | None:
    """The yes or no an answer gives: its first word when that is one, else its first sentence's
    negation ("X and Y are not both actors" is a no) or a claim of likeness ("Both X and Y are ...");
    None when the first sentence says neither."""
    text = without_preamble(str(answer))
    if m := _YES_NO_WORD.match(text):
        return m.group(1).lower()  # type: ignore[return-value]
    first = " ".join(words((split_sentences(text) or [text])[0]))
    if _NO_WORDS.search(first):
        return "no"
    if _YES_WORDS.search(first):
        return "yes"
    return None


# --- denied mentions -----------------------------------------------------------------------------------


def denied_everywhere(text: str, name: str) -> bool:
    """Whether every mention of ``name`` in ``text`` is denied ("X never won", "it was not X"): a denied
    name is not the answer given. False when ``name`` is not mentioned at all."""
    tokens, key = words(text), words(name)
    n = len(key)
    spots = [i for i in range(len(tokens) - n + 1) if n and tokens[i:i + n] == key]
    return bool(spots) and all(_denied(tokens, i, n) for i in spots)
