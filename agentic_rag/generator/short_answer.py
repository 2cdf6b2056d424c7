"""The short answer: the span that answers, for EM/F1 scoring only (a person reads the cited answer).

A sentence is a poor thing to score: "Richard's fiancée was Berengaria." against the gold "Berengaria"
is an exact-match miss and a low F1 whatever the answer's quality. The span is what the answer adds to
the question: the first name, number, date or noun phrase of its first sentence holding a word the
question does not (compared by stem, as the grounding checks compare), with the names coordinated
with it ("X and Y"). A choice ("X or Y?") is answered by the option the answer asserts, and a yes/no
question by the answer's polarity, both read as the judge reads them (``agentic_rag.claims``): "Jed Hoyer
is older than John William Henry II" answers "Jed Hoyer", not the first name it holds. A preamble ("Based
on the information provided, ...") is no part of the claim. Spans are cut on spaCy's token boundaries,
so a span never ends in a half word or a dangling "the".
"""

from __future__ import annotations

import re

from agentic_rag.anchors.matching import RE_DATE_OR_YEAR, normalize_text
from agentic_rag.anchors.ner import STOP_WORDS, get_nlp
from agentic_rag.claims import asks_yes_no, choice_options, chosen_option, polarity, without_preamble, words
from agentic_rag.prompts import INVALID_QUESTION
from agentic_rag.text import dangling_words, split_sentences, stem, strip_markup, tokenize

_NUMBER_UNIT = re.compile(
    r"[-$\u20ac\u00a3]?\d[\d,]*(?:\.\d+)?%?(?:\s+(?:million|billion|thousand|trillion))?(?:\s+[a-z][\w-]*)?", re.IGNORECASE
)
_UNIT_TAIL = re.compile(r"\s+(?:" + "|".join(sorted(STOP_WORDS)) + r")$", re.IGNORECASE)  # "32.9% of": no unit
_INVALID = re.compile(r"\binvalid question|false premise\b", re.IGNORECASE)
_CONJUNCTIONS = {"and", "or", "&"}
_JOINERS = {",", *_CONJUNCTIONS}  # what may stand between coordinated names


def short_answer(question: str, answer: str, kind: str = "other") -> str:
    """yes/no, a date, a number with its unit, the invalid-question answer, or the span that answers."""
    text = strip_markup(answer)
    if not text:
        return ""
    if (kind == "yes_no" or asks_yes_no(question)) and (said := polarity(text)):
        return said
    if (options := choice_options(question)) and (picked := chosen_option(text, options)) is not None:
        return option_span(text, options[picked]) or options[picked]
    for kinds, pattern in ((("date", "time_window"), RE_DATE_OR_YEAR), (("numeric",), _NUMBER_UNIT)):
        # a date or number the question already names is its premise ("Who became king in 1643?")
        if kind in kinds and (m := next((m for m in pattern.finditer(text) if m.group(0).strip() not in question), None)):
            return _UNIT_TAIL.sub("", m.group(0).strip())
    if kind != "yes_no" and _INVALID.search(text):
        return INVALID_QUESTION
    sentences = split_sentences(text)
    first = without_preamble(sentences[0] if sentences else text).rstrip(" .")
    return answer_span(question, first) or first


def option_span(answer: str, option: str) -> str:
    """The answer's own naming of the option it picks ("Universal Pictures" where the question wrote
    "universal pictures"): its first name or noun phrase holding the option's words."""
    nlp = get_nlp()
    wanted = (set(words(option)) - STOP_WORDS) or set(words(option))
    if nlp is None or not wanted:
        return ""
    for sentence in split_sentences(answer) or [answer]:
        for span in _candidate_spans(nlp(without_preamble(sentence))):
            if wanted <= set(words(span.text)):
                return _trimmed(span)
    return ""


def answer_span(question: str, sentence: str) -> str:
    """The span of ``sentence`` that answers ``question`` (empty when spaCy is unavailable or nothing
    in the sentence is a name, number or noun phrase)."""
    nlp = get_nlp()
    if nlp is None or not sentence.strip():
        return ""
    doc = nlp(sentence)
    asked = {stem(t) for t in tokenize(normalize_text(question))}
    spans = _candidate_spans(doc)
    if not spans:
        return ""

    def content(span) -> list[str]:
        return [t for tok in span if not tok.is_punct and tok.lower_ not in STOP_WORDS
                for t in tokenize(normalize_text(tok.text))]

    def adds(span) -> bool:
        return any(stem(t) not in asked for t in content(span))

    # a mis-parsed chunk ("is attractive means that ...") would end the span in a dangling word
    spans = [s for s in spans if not dangling_words(s.text + ".")]
    new = [i for i, s in enumerate(spans) if adds(s)]
    if new:
        start = new[0]
    elif options := choice_options(question):  # naming an option is the answer: the first span naming one
        named = {stem(w) for option in options for w in words(option)} - STOP_WORDS
        start = next((i for i, s in enumerate(spans) if {stem(t) for t in content(s)} & named), None)
        if start is None:
            return ""
    else:
        return ""
    end = start  # names coordinated with it: "Lennon, McCartney and Harrison", not "Odo, the Bishop of Bayeux"
    for j in range(start + 1, len(spans)):
        gap = [t.lower_ for t in doc[spans[j - 1].end:spans[j].start]]
        if not gap or not all(t in _JOINERS for t in gap):
            break
        if _CONJUNCTIONS & set(gap):
            end = j
    span = doc[spans[start].start:spans[end].end]
    if new:  # the words before the first one the question lacks are its premise ("Richard's fiancée")
        span = doc[next(t.i for t in span if adds(doc[t.i:t.i + 1])):span.end]
    return _trimmed(span)


def _candidate_spans(doc) -> list:
    """Entities and noun chunks, overlapping ones merged into their union, in sentence order."""
    spans = sorted([*doc.ents, *doc.noun_chunks], key=lambda s: (s.start, -s.end))
    merged: list = []
    for s in spans:
        if merged and s.start < merged[-1].end:
            if s.end > merged[-1].end:
                merged[-1] = doc[merged[-1].start:s.end]
            continue
        merged.append(s)
    return merged


def _trimmed(span) -> str:
    """Without leading determiners and possessives ("a", "the", "his") or trailing function words."""
    toks = list(span)
    while toks and (toks[0].pos_ in {"DET", "PRON"} or toks[0].is_punct) and len(toks) > 1:
        toks = toks[1:]
    while toks and (toks[-1].is_punct or toks[-1].lower_ in STOP_WORDS) and len(toks) > 1:
        toks = toks[:-1]
    if not toks:
        return ""
    doc = span.doc
    return doc[toks[0].i:toks[-1].i + 1].text.strip()
