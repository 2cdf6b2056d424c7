"""Rule judge in CRAG's three classes: accurate (+1), missing (0), incorrect (-1).

Rules, in order, and the one that fired is stored with the decision:
1. ``abstained``: any refusal is *missing*, never wrong (CRAG counts "I don't know" as 0).
2. ``gold_idk``: the gold is "i don't know" and the system answered: incorrect.
3. ``false_premise``: gold "invalid question": accurate only if the prediction says the premise fails.
4. ``exact`` / ``alias``: normalised prediction equals the gold or an alternative answer.
5. ``contains``: a normalised gold (or alias) appears inside the prediction as whole words.
6. ``numeric``: the numbers agree within ``NUMERIC_REL_TOL``; ``date``: the gold date's month and day
   are in the prediction (month names or abbreviations), and its year too when the prediction names one.
7. ``token_f1``: token F1 against the best gold >= ``F1_ACCURATE``.
8. ``full_name``: the prediction names a person by a longer form of the gold's name: a run of
   capitalised words starting with the gold's first word holds every gold word in order, with at most
   ``FULL_NAME_MAX_EXTRA`` more, none of them an initial ("Lionel Messi" -> "Lionel Andres Messi
   Cuccittini"). Only for golds of 2-4 words without digits: a one-word gold would match any run that
   starts with it.
Otherwise incorrect (``no_match``).
"""

from __future__ import annotations

import re
import string
import unicodedata
from collections import Counter
from dataclasses import dataclass

from agentic_rag.anchors.matching import written_dates
from agentic_rag.datasets.crag import IDK, INVALID_QUESTION

NUMERIC_REL_TOL = 0.01  # relative tolerance for numeric answers (fraction)
F1_ACCURATE = 0.8  # token F1 from which a free-form answer counts as accurate (fraction)
FULL_NAME_MAX_EXTRA = 3  # words a full name may add to the gold's common name (middle names, second surname)

_ARTICLES = re.compile(r"\b(a|an|the)\b")
_ABSTAIN = re.compile(
    r"\b(i don'?t know|i do not know|cannot answer|can'?t answer|unable to answer|not enough information|"
    r"insufficient (information|evidence)|no (relevant )?information|not (mentioned|specified|stated) in)\b",
    re.IGNORECASE,
)
_INVALID = re.compile(r"\b(invalid question|false premise|premise (is )?(false|wrong|incorrect)|never)\b", re.IGNORECASE)
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


def _numeric_match(prediction: str, gold: str) -> bool:
    g = _numbers(gold)
    if len(g) != 1 or normalize(gold) != normalize(_NUMBER.findall(gold)[0]):
        return False  # only for golds that are a bare number
    target = g[0]
    return any(abs(x - target) <= NUMERIC_REL_TOL * max(1.0, abs(target)) for x in _numbers(prediction))


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


def judge(prediction: str, short_answer: str, gold: str, alternatives: list[str], refused: bool) -> Judgement:
    golds = [g for g in [gold, *alternatives] if str(g).strip()]
    gold_norm = normalize(gold)
    best_em = max((float(normalize(short_answer) == normalize(g)) for g in golds), default=0.0)
    best_f1 = max((token_f1(short_answer, g) for g in golds), default=0.0)
    if refused or is_abstention(prediction):
        return Judgement("missing", "abstained", 0, best_em, best_f1)
    if gold_norm == normalize(IDK):
        return Judgement("incorrect", "gold_idk", -1, 0.0, 0.0)
    if gold_norm == normalize(INVALID_QUESTION):
        ok = bool(_INVALID.search(prediction))
        return Judgement("accurate" if ok else "incorrect", "false_premise", 1 if ok else -1, float(ok), float(ok))
    for text in (short_answer, prediction):
        for g in golds:
            if normalize(text) == normalize(g):
                return Judgement("accurate", "exact" if g == gold else "alias", 1, best_em, best_f1)
    pred_norm = f" {normalize(prediction)} "
    for g in golds:
        gn = normalize(g)
        if gn and f" {gn} " in pred_norm:
            return Judgement("accurate", "contains", 1, best_em, best_f1)
    if any(_numeric_match(prediction, g) for g in golds):
        return Judgement("accurate", "numeric", 1, best_em, best_f1)
    if any(_date_match(prediction, g) for g in golds):
        return Judgement("accurate", "date", 1, best_em, best_f1)
    full_f1 = max(token_f1(prediction, g) for g in golds) if golds else 0.0
    if max(best_f1, full_f1) >= F1_ACCURATE:
        return Judgement("accurate", "token_f1", 1, best_em, best_f1)
    if any(_full_name_match(text, g) for text in (short_answer, prediction) for g in golds):
        return Judgement("accurate", "full_name", 1, best_em, best_f1)
    return Judgement("incorrect", "no_match", -1, best_em, best_f1)
