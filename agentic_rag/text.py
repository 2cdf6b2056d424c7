"""Sentences, quotes and citation markers in answer and source text, shared by every layer that reads them.

The small model follows the citation format loosely, so parsing is forgiving ("[1]", "[1, 2]",
"Source 1", quotes in straight or curly marks), but verification is strict: a quote counts only if,
after whitespace and case folding, it occurs in the text of the chunk it cites. Ingestion counts the
sentences of a page that address the model with the same splitter BAUG reads answers with.
"""

from __future__ import annotations

import re
from typing import Any, Iterable

from bm25s.stopwords import STOPWORDS_EN

from agentic_rag.injection import is_untrusted, joined, may_hold_untrusted, normalise

_CITE = re.compile(r"\[(\d+(?:\s*,\s*\d+)*)\]|\bsource\s+(\d+)\b", re.IGNORECASE)
_QUOTE = re.compile(r"[\"\u201c]([^\"\u201d]{8,}?)[\"\u201d]")
_SENT = re.compile(r"(?<=[.!?])\s+(?=[A-Z0-9\"\u201c])")
_ANY_END = re.compile(r"(?<=[.!?])\s+")
# a period that ends one of these does not end the sentence: "Mrs. Rost", "the U.S. Open", "J. K. Rowling"
_ABBREV = re.compile(
    r"(?:\b(?:mr|mrs|ms|dr|prof|st|mt|jr|sr|vs|gen|gov|sen|rep|rev|capt|col|lt|sgt|inc|corp|ltd|approx|e\.g|i\.e)"
    r"|(?:^|[\s(])(?:[a-z]\.)*[a-z])\.$",
    re.IGNORECASE,
)
# these only before a number: "No. 1", "Aug. 12", "Vol. 3" (a final "no." is an answer)
_ABBREV_NUM = re.compile(r"\b(?:no|nos|vol|fig|jan|feb|mar|apr|jun|jul|aug|sep|sept|oct|nov|dec)\.$", re.IGNORECASE)


_WORD = re.compile(r"(?u)\b\w+\b")
_STOP = frozenset(STOPWORDS_EN)


def tokenize(text: str) -> list[str]:
    """Lower-cased word tokens without English stop words (single digits kept: '3-point', 'Q1'): what BM25
    indexes and what every overlap check compares, so both read the same words."""
    return [t for t in _WORD.findall(text.lower()) if t not in _STOP]


def fold(text: str) -> str:
    return re.sub(r"\s+", " ", text).strip().lower()


def split_sentences(text: str, loose: bool = False) -> list[str]:
    """Sentences of an answer; with ``loose``, of source text, which web snippets run on: also broken
    at line ends and before a lower-case word, and fragments of three characters or less dropped.

    A period after an abbreviation or an initial does not end a sentence. Split there, "Coco Gauff
    made her U.S." becomes a source sentence that seems to say she won something, and "Mrs." a quote
    that backs any answer about a Mrs."""
    out: list[str] = []
    for line in text.split("\n") if loose else [text]:
        sentences: list[list[str]] = []  # each sentence as its pieces, joined once at the end
        for piece in (p.strip() for p in (_ANY_END if loose else _SENT).split(line.strip())):
            if not piece:
                continue
            if sentences and _runs_on(sentences[-1][-1], piece):
                sentences[-1].append(piece)
            else:
                sentences.append([piece])
        out += [" ".join(pieces) for pieces in sentences]
    return [s for s in out if len(s) > 3] if loose else out


def _runs_on(last: str, piece: str) -> bool:
    """Whether the sentence whose last piece is ``last`` goes on into ``piece``. Only that piece is read:
    an abbreviation holds no space and the split left one before the piece, so it ends the piece where
    it ends the sentence; reading the whole sentence each time made a page of "Mr. X Mr. X ..."
    quadratic (a 40 KB page took a minute)."""
    return bool(_ABBREV.search(last) or (_ABBREV_NUM.search(last) and piece[0].isdigit()))


def untrusted_sentences(text: str) -> list[str]:
    """Source sentences that address the model (``injection.UNTRUSTED_PATTERNS``), normalised as
    the patterns read them; then sentences that do only when read across line breaks."""
    if not may_hold_untrusted(text):
        return []
    text = normalise(text)
    found = [s for s in split_sentences(text, loose=True) if is_untrusted(s)]
    if "\n" in text:
        found += [s for s in split_sentences(joined(text)) if is_untrusted(s) and not any(f in s for f in found)]
    return found


def untrusted_source(passage: dict[str, Any]) -> bool:
    """Whether a source's page addresses the model somewhere (its chunk's text, or the page as counted at
    ingestion). Such a source backs no answer and verifies no quote: an attacker who writes "ignore
    previous instructions" in one sentence writes the planted claim in the next."""
    return bool(passage.get("page_untrusted")) or bool(untrusted_sentences(passage.get("text", "")))


def cited_numbers(text: str) -> list[int]:
    nums: list[int] = []
    for m in _CITE.finditer(text):
        group = m.group(1) or m.group(2)
        for part in group.split(","):
            n = int(part)
            if n not in nums:
                nums.append(n)
    return nums


def quotes(text: str) -> list[str]:
    return [q.strip() for q in _QUOTE.findall(text)]


def quote_in(quote: str, source: str) -> bool:
    q = fold(quote).strip(" .,;:")
    return bool(q) and q in fold(source)


# what may stand between a citation marker and the quote it gives ("[1] "...", "Source 2: "...")
_MARKER_BEFORE = re.compile(r"(?:\[\d+(?:\s*,\s*\d+)*\]|\bsource\s+\d+)\s*[:,]?$", re.IGNORECASE)
_MARKER_AFTER = re.compile(r"^[.,;:]?\s*(?:\[\d|\(?source\s+\d)", re.IGNORECASE)
# words that introduce a quotation rather than take the quoted words as their object
_QUOTING = re.compile(r"\b(?:says?|states?|stated|reads|quotes?|according to(?: the)?(?: sources?(?: \d+)?)?)\s*[:,]?$",
                      re.IGNORECASE)
# "According to Source 1, ..." is citation markup too: without its number it reads "According to, ..."
_CITED_LEAD = re.compile(
    r"\b(?:(?:according to|as stated in|based on)\s+(?:the\s+)?sources?\s+\d+(?:\s*(?:,|and)\s*\d+)*\s*,?"
    r"|sources?\s+\d+\s+(?:says|states|reads)\s*[:,]?)\s*",
    re.IGNORECASE,
)
# below this share of its source sentence a quote is a phrase taken from it (a title, a name), not the sentence
SOURCE_SENTENCE_COVER = 0.5  # fraction of the source sentence's characters the quote must span


def _reads_as_a_sentence(quote: str) -> bool:
    """A statement, not a name: three words or more, one of them a lower-case content word. Titles,
    nicknames and names ("The Tenant of Wildfell Hall", "Great Water", "The Boss") are capitalised."""
    words = re.findall(r"[\w'-]+", quote)
    return len(words) >= 3 and any(w.islower() and w not in _STOP for w in words)


def _source_sentence(quote: str, source_sentences: list[str]) -> bool:
    q = fold(quote).strip(" .,;:")
    return bool(q) and any(q in s and len(q) >= SOURCE_SENTENCE_COVER * len(s) for s in source_sentences)


def evidence_quote(text: str, m: re.Match, source_sentences: list[str] = ()) -> bool:
    """Whether a quoted span of an answer is evidence it gives, not the answer's own words.

    The prompt asks for a one-sentence answer; a quote the model adds as evidence stands apart from that
    sentence (after it, or after a citation marker or "Source 1 says", ending there), or is a source
    sentence next to the marker citing it. A quoted title, nickname or phrase that the sentence's grammar
    needs ("She wrote "Agnes Grey".", "means "Great Water"") is neither and stays: it is the answer."""
    if not _reads_as_a_sentence(m.group(1)):
        return False
    before, after = text[: m.start()].rstrip(), text[m.end() :].lstrip()
    marker_before, marker_after = bool(_MARKER_BEFORE.search(before)), bool(_MARKER_AFTER.match(after))
    # a run of quotes side by side ("q1" "q2") stands apart as a whole: each opens after the last's close
    opens = not before or before[-1] in ".!?(\"" or marker_before or bool(_QUOTING.search(before))
    ends = m.group(1).rstrip()[-1:] in (".", "!", "?")  # "... 2020." So the mayor was ...
    closes = (not after or bool(re.match(r"[.!?;)\"]", after)) or marker_after or (ends and after[:1].isupper()))
    return (opens and closes) or ((marker_before or marker_after) and _source_sentence(m.group(1), source_sentences))


def source_sentences_of(sources: Iterable[str]) -> list[str]:
    """The folded sentences of source texts, as ``evidence_quote`` compares quotes with them."""
    return [fold(s).strip(" .,;:") for text in sources for s in split_sentences(text, loose=True)]


def _without_markers(text: str) -> str:
    """``text`` without citation markers and the punctuation and spaces they leave behind."""
    lead = _CITED_LEAD.match(text.lstrip())
    out = re.sub(r"\(\s*[,;:]?\s*\)", "", _CITE.sub("", _CITED_LEAD.sub("", text)))
    # (?<!\s): a run of spaces is tried from its first space only, so a reply of spaces costs linear time
    out = re.sub(r"[,;:]+([.!?])", r"\1", re.sub(r"(?<!\s)\s+([.,;:!?])", r"\1", out))
    out = re.sub(r"\s{2,}", " ", out).strip(" -:,\n")
    return out[:1].upper() + out[1:] if lead else out  # "According to Source 1, the ..." -> "The ..."


def strip_markup(text: str, sources: Iterable[str] = ()) -> str:
    """The answer as a reader sees it: citation markers and the evidence quotes it gives removed (see
    ``evidence_quote``; ``sources`` are the texts it may quote). Quoted words that are the answer stay,
    and so does every quote when removing them would leave nothing, or a word hanging ("He said.")."""
    kept = _without_markers(text)
    if not _QUOTE.search(text):
        return kept
    sents = source_sentences_of(sources)
    out = _without_markers(_QUOTE.sub(lambda m: "" if evidence_quote(text, m, sents) else m.group(0), text))
    if not re.search(r"\w", out) or (dangling_words(out) and not dangling_words(kept)):
        return kept
    return out


# what stripping leaves when it takes the answer's own words: a sentence ending on a conjunction, an
# article or a verb that needs its object ("She wrote and.", "means."), a conjunction right after such a
# verb ("wrote and"), empty quotes or brackets. Lower case only: "Vitamin A." and "Plan B." are whole, and
# so is "the so-called, speed-up theorem" (a SQuAD question's own words).
_DANGLING = re.compile(
    r"\b(?:and|or|but|nor|the|a|an|of)\s*[.!?;:](?=\s|$)"  # "and, while ..." is whole: no comma here
    r"|(?<![\w-])(?:means|meaning|said|wrote|titled|entitled|named|called|nicknamed|says|states|reads)\s*[.!?;:,](?=\s|$)"
    r"|\b(?:and|or|wrote|means|titled|entitled|named|called|nicknamed)\s+(?:and|or|but)\b"
    r"|\"\s*\"|\(\s*\)"
)


def dangling_words(text: str) -> list[str]:
    """The places in a shown answer where stripped text left a word hanging (empty when there is none)."""
    return [m.group(0) for m in _DANGLING.finditer(text)]


_SUFFIXES = ("ations", "ation", "ings", "ing", "ies", "ied", "ers", "ics", "ic", "al", "ly", "ed", "es", "er", "s")


def stem(word: str) -> str:
    """A crude suffix stripper: enough for "symbolic" to meet "symbols" and "controlled" "control"."""
    w = word.lower()
    for suffix in _SUFFIXES:
        if len(w) - len(suffix) >= 4 and w.endswith(suffix):
            w = w[: -len(suffix)]
            break
    return w[:-1] if len(w) >= 5 and w[-1] == w[-2] else w  # "controll" -> "control", applied to both sides


def stems(text: str) -> set[str]:
    """The stems of a text's words: what a word is looked up in, by stem ("poet" in "poets")."""
    return {stem(t) for t in re.findall(r"\w+", text.lower())}
