"""Sentences, quotes and citation markers in answer and source text, shared by every layer that reads them.

The small model follows the citation format loosely, so parsing is forgiving ("[1]", "[1, 2]",
"Source 1", quotes in straight or curly marks), but verification is strict: a quote counts only if,
after whitespace and case folding, it occurs in the text of the chunk it cites. Ingestion counts the
sentences of a page that address the model with the same splitter BAUG reads answers with.
"""

from __future__ import annotations

import re
from typing import Any

from agentic_rag.ingest.injection import is_untrusted, joined, may_hold_untrusted, normalise

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
        joined: list[str] = []
        for piece in (p.strip() for p in (_ANY_END if loose else _SENT).split(line.strip())):
            if not piece:
                continue
            if joined and (_ABBREV.search(joined[-1]) or (_ABBREV_NUM.search(joined[-1]) and piece[0].isdigit())):
                joined[-1] = f"{joined[-1]} {piece}"
            else:
                joined.append(piece)
        out += joined
    return [s for s in out if len(s) > 3] if loose else out


def untrusted_sentences(text: str) -> list[str]:
    """Source sentences that address the model (``ingest.injection.UNTRUSTED_PATTERNS``), normalised as
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


def strip_markup(text: str) -> str:
    """The answer as a reader sees it: citation markers and quoted evidence removed."""
    out = _QUOTE.sub("", text)
    out = _CITE.sub("", out)
    out = re.sub(r"\s+([.,;:!?])", r"\1", out)
    return re.sub(r"\s{2,}", " ", out).strip(" -:\n")
