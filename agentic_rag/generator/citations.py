"""Read citations and quotes out of a generated answer and check them against the sources.

The small model follows the citation format loosely, so parsing is forgiving ("[1]", "[1, 2]",
"Source 1", quotes in straight or curly marks), but verification is strict: a quote counts only if,
after whitespace and case folding, it occurs in the text of the chunk it cites.
"""

from __future__ import annotations

import re
from typing import Any

_CITE = re.compile(r"\[(\d+(?:\s*,\s*\d+)*)\]|\bsource\s+(\d+)\b", re.IGNORECASE)
_QUOTE = re.compile(r"[\"\u201c]([^\"\u201d]{8,}?)[\"\u201d]")
_SENT = re.compile(r"(?<=[.!?])\s+(?=[A-Z0-9\"\u201c])")


def fold(text: str) -> str:
    return re.sub(r"\s+", " ", text).strip().lower()


def split_sentences(text: str) -> list[str]:
    return [s.strip() for s in _SENT.split(text.strip()) if s.strip()]


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


def extract_citations(answer: str, bundle: dict[str, Any]) -> list[dict[str, Any]]:
    """One citation per cited source that exists in the bundle, with its best quote verified."""
    by_n = {p["n"]: p for p in bundle.get("passages", [])}
    found_quotes = quotes(answer)
    out = []
    for n in cited_numbers(answer):
        passage = by_n.get(n)
        if passage is None:
            continue  # a citation to a source that was never given is dropped (and lowers overlap)
        quote = next((q for q in found_quotes if quote_in(q, passage["text"])), "")
        out.append(
            {
                "n": n,
                "chunk_id": passage["chunk_id"],
                "page_name": passage.get("page_name", ""),
                "page_url": passage.get("page_url", ""),
                "quote": quote,
                "verified": bool(quote),
            }
        )
    return out
