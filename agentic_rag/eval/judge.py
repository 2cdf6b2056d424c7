"""Rule judge in CRAG's three classes: accurate (+1), missing (0), incorrect (-1).

Rules, in order, and the one that fired is stored with the decision:
1. ``abstained``: any refusal is *missing*, never wrong (CRAG counts "I don't know" as 0).
2. ``gold_idk``: the gold is "i don't know" and the system answered: incorrect.
3. ``false_premise``: gold "invalid question": accurate only if the prediction states that the premise
   fails ("there is no ...", "X never released ...", "the premise is false"), in its first sentence.
   Otherwise ``false_premise_missed``.
The claim is read before any word is matched (``agentic_rag.claims``): an answer that names the gold is
not the gold's answer when it picks the other option or denies it.
- ``yes_no``: a gold "yes" or "no" is met by the answer's polarity (its opening yes/no, else its first
  sentence's negation or claim of likeness); ``yes_no_other`` when it gives the other, ``yes_no_open``
  when it gives neither.
- ``choice``: a question that offers two options ("Who is older, X or Y?") whose gold picks one is met by
  an answer that asserts that option ("X is older than Y"); ``choice_other`` when it asserts the other,
  ``choice_open`` when it names the options without picking one ("Both X and Y ...").
4. ``exact`` / ``alias``: normalised prediction equals the gold or an alternative answer.
5. ``contains``: a normalised gold (or alias) appears inside the prediction as whole words, a plural
   standing for its singular ("1015 Kelvin" for "1015 kelvins").
6. ``numeric``: the numbers agree within ``NUMERIC_REL_TOL`` (a gold "Nearly 3,000" or "8 km" too, the
   unit read as its measure: "8 kilometers"); ``date``: the gold date's month and day
   are in the prediction (month names or abbreviations), and its year too when the prediction names one.
7. ``token_f1``: token F1 against the best gold >= ``F1_ACCURATE``.
8. ``full_name``: the prediction names a person by a longer form of the gold's name: a run of
   capitalised words starting with the gold's first word holds every gold word in order, with at most
   ``FULL_NAME_MAX_EXTRA`` more, none of them an initial ("Lionel Messi" -> "Lionel Andres Messi
   Cuccittini"). Only for golds of 2-4 words without digits: a one-word gold would match any run that
   starts with it.
9. ``type_name``: the gold is a name with a type word at its head or tail ("Hurricane Ivan", "Mississippi
   River", "Apple Inc") and the prediction names it without that word, as a run of capitalised words of
   its own ("Ivan formed in early September ..."): the type word is what the question asked for.
A match whose every mention of the gold is denied ("X never won", "it was not X") is
incorrect (``denied``). Otherwise incorrect (``no_match``). ``MATCH_RULES`` lists rules 4-9 by name, so
each can be measured alone (``scripts/judge_agreement.py``).
"""

from __future__ import annotations

import re
import string
import unicodedata
from collections import Counter
from dataclasses import dataclass
from typing import Literal

from bm25s.stopwords import STOPWORDS_EN

from agentic_rag.anchors.lexicon import MEASURE_VARIANTS
from agentic_rag.anchors.matching import written_dates
from agentic_rag.claims import choice_options, chosen_option, denied_everywhere, gold_option, names_an_option, polarity, without_preamble
from agentic_rag.datasets.crag import IDK, INVALID_QUESTION
from agentic_rag.text import split_sentences

NUMERIC_REL_TOL = 0.01  # relative tolerance for numeric answers (fraction)
F1_ACCURATE = 0.8  # token F1 from which a free-form answer counts as accurate (fraction)
FULL_NAME_MAX_EXTRA = 3  # words a full name may add to the gold's common name (middle names, second surname)

_ARTICLES = re.compile(r"\b(a|an|the)\b")
_ABSTAIN = re.compile(
    r"\b(i don'?t know|i do not know|cannot answer|can'?t answer|unable to answer|not enough information|"
    r"insufficient (information|evidence)|no (relevant )?information|not (mentioned|specified|stated) in)\b",
    re.IGNORECASE,
)
# a statement that the question's premise fails: named as such, or the thing it presumes denied
_PREMISE_FAILS = re.compile(
    r"\b(invalid question|false premise|(the )?premise (of the question )?(is|was) (false|wrong|incorrect|mistaken|invalid)"
    r"|(is|was) not (true|the case|correct|accurate)|no such|does not exist|did not exist|never (existed|happened|occurred|took place)"
    r"|there (is|are|was|were|has been|have been) no|(has|have|had|did|does|do|is|are|was|were) (not|never) \w+|never \w+ed)\b",
    re.IGNORECASE,
)
_NUMBER = re.compile(r"-?\d+(?:,\d{3})*(?:\.\d+)?")


@dataclass
class Judgement:
    label: str  # accurate | missing | incorrect
    rule: str
    score: int
    em: float
    f1: float


def normalize(text: str) -> str:
    text = str(text).lower().replace("\u2019", "'")
    text = re.sub(r"(?<=\d),(?=\d{3})", "", text)
    text = "".join(ch if ch not in string.punctuation or ch in "'." else " " for ch in text)
    text = re.sub(r"\.(?!\d)", " ", text)
    text = _ARTICLES.sub(" ", text)
    return " ".join(text.split())


def is_abstention(text: str) -> bool:
    return not text.strip() or bool(_ABSTAIN.search(text))


def token_f1(prediction: str, gold: str) -> float:
    p, g = normalize(prediction).split(), normalize(gold).split()
    if not p or not g:
        return float(p == g)
    common = Counter(p) & Counter(g)
    same = sum(common.values())
    if same == 0:
        return 0.0
    precision, recall = same / len(p), same / len(g)
    return 2 * precision * recall / (precision + recall)


def _numbers(text: str) -> list[float]:
    return [float(x.replace(",", "")) for x in _NUMBER.findall(text)]


# words before a gold number that say it is rounded ("Nearly 3,000"): the number is the answer
_ROUGHLY = r"(?:nearly|about|approximately|around|almost|roughly|some|over|more than|at least|up to|c|ca|circa)"
_QUANTITY = re.compile(rf"^(?:{_ROUGHLY} )?(-?\d+(?:\.\d+)?)(?: (.+))?$")


def _unit(words: str) -> str | None:
    """The measure a unit's words name ("kilometres", "km" -> kilometers), or None for no known measure."""
    return MEASURE_VARIANTS.get(words.strip())


def _numeric_match(prediction: str, gold: str) -> bool:
    """A gold that is a number, rounded or not, with or without a unit of measure ("8 km", "Nearly 3,000"):
    the prediction gives that number, and where the gold has a unit, the same measure right after it
    ("approximately 8 kilometers")."""
    m = _QUANTITY.match(normalize(gold))
    if not m or (m.group(2) and _unit(m.group(2)) is None):
        return False
    target, unit = float(m.group(1)), _unit(m.group(2) or "")
    said = normalize(prediction)
    for x in _NUMBER.finditer(said):
        if abs(float(x.group(0).replace(",", "")) - target) > NUMERIC_REL_TOL * max(1.0, abs(target)):
            continue
        after = said[x.end():].split()
        if unit is None or any(_unit(" ".join(after[:n])) == unit for n in (1, 2, 3)):
            return True
    return False


def _date_match(prediction: str, gold: str) -> bool:
    golds = written_dates(gold)
    if len(golds) != 1:
        return False
    gm, gd, gy = golds[0]
    return any(m == gm and d == gd and (not y or not gy or y == gy) for m, d, y in written_dates(prediction))


# lower-case words that sit inside a person's name ("Ludwig van Beethoven", "Juan Carlos de Borbon y Borbon")
_NAME_PARTICLES = frozenset("de da das do dos du del della der den van von la le di bin ibn al el y e".split())
_NAME_WORD = re.compile(r"^[^\W\d_][\w'\u2019.-]*$")


def fold_word(word: str) -> str:
    """Lower case without accents or dots: "Andr\u00e9s" meets "andres", "J." meets "j"."""
    return "".join(c for c in unicodedata.normalize("NFKD", word.lower()) if not unicodedata.combining(c)).strip(".")


def _name_runs(text: str) -> list[list[str]]:
    """Runs of capitalised words (with name particles and initials between them) in ``text``,
    each word normalised. Punctuation other than initials' dots, and any other lower-case word,
    end a run, so "John Adams and Will Smith" gives two runs."""
    runs: list[list[str]] = [[]]
    for raw in re.findall(r"[^\s,;:()\[\]\"/]+|[,;:()\[\]\"/]", str(text)):
        word = raw.rstrip(".") if not re.fullmatch(r"(?:[A-Z]\.)+", raw) else raw
        if _NAME_WORD.match(word) and (word[0].isupper() or (runs[-1] and word in _NAME_PARTICLES)):
            runs[-1].append(fold_word(word))
        else:
            runs.append([])
        if raw.endswith(".") and not re.fullmatch(r"(?:[A-Z]\.)+|(?:Jr|Sr|St|Dr|Mr|Mrs|Ms)\.", raw):
            runs.append([])  # a sentence ends
    out = []
    for run in runs:
        while run and run[-1] in _NAME_PARTICLES:
            run = run[:-1]
        if run:
            out.append(run)
    return out


def _full_name_match(prediction: str, gold: str) -> bool:
    """Does a name in ``prediction`` extend the gold name (every gold word, in order, first word first)?"""
    g = [fold_word(w) for w in normalize(gold).split()]
    if not 2 <= len(g) <= 4 or any(ch.isdigit() for ch in gold) or g[0] in _NAME_PARTICLES:
        return False
    for run in _name_runs(prediction):
        for start in (i for i, w in enumerate(run) if w == g[0]):
            span, k = run[start:], 0
            for w in span:
                if k < len(g) and w == g[k]:
                    k += 1
            extra = [w for w in span if w not in g]
            # an added initial tells people apart ("George H. W. Bush" is not "George W. Bush")
            if k == len(g) and 1 <= len(span) - len(g) <= FULL_NAME_MAX_EXTRA and all(len(w) > 1 for w in extra):
                return True
    return False


# words that say what kind of thing a name is, not which one: "Hurricane Ivan" is named by "Ivan". Only
# kinds whose bare name is the thing itself; a bare "New York" is not New York University, nor "North" the North Sea
TYPE_WORDS = frozenset(
    "hurricane typhoon cyclone storm river lake mount mountain company corporation corp inc ltd llc plc".split()
)
_AFTER_NAME_OK = frozenset(STOPWORDS_EN) | {"'s", "s"}


def _type_name_match(prediction: str, gold: str) -> bool:
    """Does ``prediction`` name the gold without its type word, as a name of its own? The name must be a
    whole run of capitalised words, followed by nothing, punctuation, a function word or a past-tense
    verb ("Ivan formed ..."): before a noun it is an adjective ("Vistula terraces", "Islamic revolution"),
    and beside a comma and another name it is part of that name ("Massillon, Ohio")."""
    g = [fold_word(w) for w in normalize(gold).split()]
    if not 2 <= len(g) <= 4 or any(ch.isdigit() for ch in gold):
        return False
    name = g[1:] if g[0] in TYPE_WORDS else g[:-1] if g[-1] in TYPE_WORDS else []
    if not name or any(w in TYPE_WORDS or w in _NAME_PARTICLES for w in name):
        return False
    raw = re.findall(r"[\w'\u2019.-]+|[^\w\s]", str(prediction))
    words = [fold_word(t) for t in raw]
    k = len(name)
    for i in range(len(raw) - k + 1):
        if words[i : i + k] != name or not all(t[:1].isupper() for t in raw[i : i + k]):
            continue
        before = raw[i - 1] if i else ""
        if before[:1].isupper() and before not in ("The", "A", "An"):
            continue  # inside a longer name ("Lake Charles", "Prince Charles")
        last, after = raw[i + k - 1], raw[i + k] if i + k < len(raw) else ""
        if (before == "," and i > 1 and raw[i - 2][:1].isupper()) or (
                after == "," and i + k + 1 < len(raw) and raw[i + k + 1][:1].isupper()):
            continue  # a place's state or an apposition: "Massillon, Ohio", "Charles, Prince of Wales"
        if last.endswith(".") or not after or not after[:1].isalnum() or after in _AFTER_NAME_OK or (
                after.islower() and after.endswith("ed")):
            return True
    return False


def _exact(prediction: str, short_answer: str, gold: str) -> bool:
    return any(normalize(text) == normalize(gold) for text in (short_answer, prediction))


_PLURAL_S = re.compile(r"(?<=[a-z]{3})(?<![su])s\b")  # cut on both sides: "kelvins" -> "kelvin"; "glass", "bus" kept


def _contains(prediction: str, short_answer: str, gold: str) -> bool:
    """As whole words, a plural matching its singular: "1015 Kelvin" states the gold "1015 kelvins"."""
    gn, pn = (_PLURAL_S.sub("", normalize(t)) for t in (gold, prediction))
    return bool(gn) and f" {gn} " in f" {pn} "


def _token_f1(prediction: str, short_answer: str, gold: str) -> bool:
    return max(token_f1(short_answer, gold), token_f1(prediction, gold)) >= F1_ACCURATE


# the rules that can find a prediction accurate, in the order the judge tries them (rules 4-9 above)
MATCH_RULES = (
    ("exact", _exact),
    ("contains", _contains),
    ("numeric", lambda prediction, short_answer, gold: _numeric_match(prediction, gold)),
    ("date", lambda prediction, short_answer, gold: _date_match(prediction, gold)),
    ("token_f1", _token_f1),
    ("full_name", lambda prediction, short_answer, gold: any(_full_name_match(t, gold) for t in (short_answer, prediction))),
    ("type_name", lambda prediction, short_answer, gold: _type_name_match(prediction, gold)),
)


QuestionForm = Literal["unanswerable", "false_premise", "yes_no", "choice", "open"]


def question_form(question: str, gold: str) -> QuestionForm:
    """What the gold asks the answer to be, as the judge reads it: a refusal, a statement that the premise
    fails, a yes or no, one of two options the question offers, or an open answer (the matching rules)."""
    g = normalize(gold)
    if g == normalize(IDK):
        return "unanswerable"
    if g == normalize(INVALID_QUESTION):
        return "false_premise"
    if g in ("yes", "no"):
        return "yes_no"
    options = choice_options(question) if question else None
    return "choice" if options and gold_option(gold, options) is not None else "open"


def states_false_premise(prediction: str) -> bool:
    """Whether the answer's first claim (its first sentence up to a ";" or a "but") says the question's
    premise fails: a "never" further on, in an answer that answers, is no such statement."""
    text = without_preamble(prediction).replace("n't", " not")
    first = (split_sentences(text) or [text])[0]
    claim = re.split(r";|:|,? but |, and |, while |, whereas |, which |, who ", first, maxsplit=1)[0]
    return bool(_PREMISE_FAILS.search(claim))


def _claim(question: str, prediction: str, gold: str) -> tuple[str, bool] | None:
    """(rule, accurate) when the gold asks for a yes/no or one of the question's two options, read from
    the answer's claim; None when the gold is of neither kind (the matching rules then decide)."""
    if normalize(gold) in ("yes", "no"):
        said = polarity(prediction)
        if said is None:
            return "yes_no_open", False
        return ("yes_no", True) if said == normalize(gold) else ("yes_no_other", False)
    options = choice_options(question) if question else None
    if options is None or (wanted := gold_option(gold, options)) is None:
        return None
    picked = chosen_option(prediction, options)
    if picked is None:
        return ("choice_open", False) if names_an_option(prediction, options) else None
    return ("choice", True) if picked == wanted else ("choice_other", False)


def judge(prediction: str, short_answer: str, gold: str, alternatives: list[str], refused: bool, *,
          question: str, rules: tuple = MATCH_RULES) -> Judgement:
    """The judgement of one answer to ``question``; ``rules`` (a subset of ``MATCH_RULES``) measures the
    judge without one. An empty question (a gold tried against another gold) reads no choice."""
    golds = [g for g in [gold, *alternatives] if str(g).strip()]
    gold_norm = normalize(gold)
    best_em = max((float(normalize(short_answer) == normalize(g)) for g in golds), default=0.0)
    best_f1 = max((token_f1(short_answer, g) for g in golds), default=0.0)
    if refused or is_abstention(prediction):
        return Judgement("missing", "abstained", 0, best_em, best_f1)
    if gold_norm == normalize(IDK):
        return Judgement("incorrect", "gold_idk", -1, 0.0, 0.0)
    if gold_norm == normalize(INVALID_QUESTION):
        ok = states_false_premise(prediction)
        return Judgement("accurate" if ok else "incorrect", "false_premise" if ok else "false_premise_missed",
                         1 if ok else -1, float(ok), float(ok))
    if claim := _claim(question, prediction, gold):
        rule, ok = claim
        return Judgement("accurate" if ok else "incorrect", rule, 1 if ok else -1, best_em, best_f1)
    for name, rule in rules:
        for g in golds:
            if rule(prediction, short_answer, g):
                if denied_everywhere(prediction, g):
                    return Judgement("incorrect", "denied", -1, best_em, best_f1)
                return Judgement("accurate", "alias" if name == "exact" and g != gold else name, 1, best_em, best_f1)
    return Judgement("incorrect", "no_match", -1, best_em, best_f1)


def rule_rates(labelled: list[dict]) -> list[dict]:
    """Each matching rule alone, and all of them, against hand labels: rows it accepts that a person
    found accurate, false positives (it accepts a hand-incorrect answer) and false negatives (it leaves
    a hand-accurate one unaccepted). Rows: prediction, short_answer, gold, alternatives, hand_label."""
    accurate = [r for r in labelled if r["hand_label"] == "accurate"]
    incorrect = [r for r in labelled if r["hand_label"] == "incorrect"]

    def accepts(rule, r) -> bool:
        golds = [g for g in [r["gold"], *r.get("alternatives", [])] if str(g).strip()]
        return any(rule(r["prediction"], r["short_answer"], g) for g in golds)

    def rate(num: int, den: int) -> float | None:
        return round(num / den, 3) if den else None

    everything = lambda *a: any(rule(*a) for _, rule in MATCH_RULES)  # noqa: E731
    out = []
    for name, rule in (*MATCH_RULES, ("all rules", everything)):
        tp = sum(accepts(rule, r) for r in accurate)
        fp = sum(accepts(rule, r) for r in incorrect)
        out.append({"rule": name, "true_positives": tp, "false_positives": fp, "false_positive_rate": rate(fp, len(incorrect)),
                    "false_negatives": len(accurate) - tp, "false_negative_rate": rate(len(accurate) - tp, len(accurate))})
    return out
