"""The citations an answer is shown with: the source sentences BAUG found backing it or, without that
reading, the sources its markers cite with their best quote verified.

The parsing and the strict quote check are in :mod:`agentic_rag.text`.
"""

from __future__ import annotations

from typing import Any

from agentic_rag.baug.signals import states_answer
from agentic_rag.state import support_of
from agentic_rag.text import cited_numbers, quote_in, quotes, strip_markup, untrusted_source


def extract_citations(answer: str, bundle: dict[str, Any], question: str = "", kind: str = "other") -> list[dict[str, Any]]:
    """One citation per cited source that exists in the bundle, with its best quote verified."""
    by_n = {p["n"]: p for p in bundle.get("passages", [])}
    found_quotes = quotes(answer)
    plain = strip_markup(answer, [p["text"] for p in by_n.values()])
    out = []
    for n in cited_numbers(answer):
        passage = by_n.get(n)
        if passage is None:
            continue  # a citation to a source that was never given is dropped (and lowers overlap)
        quote = "" if untrusted_source(passage) else next((q for q in found_quotes if quote_in(q, passage["text"])), "")
        states = states_answer(plain, quote, question, kind)
        out.append(
            {
                "n": n,
                "chunk_id": passage["chunk_id"],
                "page_name": passage.get("page_name", ""),
                "page_url": passage.get("page_url", ""),
                "quote": quote,
                "in_source": bool(quote),
                "states_answer": states,
                "verified": bool(quote) and states,
            }
        )
    return out


def citations_from_support(rows: list[dict[str, Any]], bundle: dict[str, Any]) -> list[dict[str, Any]]:
    """One citation per source sentence that backs the answer (exact source text, so verifiable)."""
    by_n = {p["n"]: p for p in bundle.get("passages", [])}
    out: dict[tuple[int, str], dict[str, Any]] = {}
    for row in rows:
        for n, quote in support_of(row):
            if n not in by_n:
                continue
            p = by_n[n]
            out.setdefault((n, quote), {
                "n": n, "chunk_id": p["chunk_id"], "page_name": p.get("page_name", ""), "page_url": p.get("page_url", ""),
                "quote": quote, "in_source": not untrusted_source(p),
                "states_answer": bool(row.get("states_answer")),
                "verified": bool(row.get("supported")) and bool(row.get("states_answer")),
            })
    return list(out.values())
