"""Pack ranked passages into an evidence bundle strictly under the context budget.

Tokens are counted with the generator's own tokenizer on the exact text that goes into the prompt,
so ``context_tokens < MAX_CONTEXT_TOKENS`` is a guarantee, not an estimate. A passage that does not
fit whole is cut at a sentence (or word) boundary when enough budget is left to make it useful;
the cut text is a prefix of the chunk, so quotes from it still verify against the source.
"""

from __future__ import annotations

import re
from typing import Any, Callable

from agentic_rag.prompts import format_source

MIN_USEFUL_TOKENS = 40  # a passage cut shorter than this carries too little to cite (tokens)


def pack_evidence(
    passages: list[dict[str, Any]], max_tokens: int, count_tokens: Callable[[str], int]
) -> dict[str, Any]:
    packed: list[dict[str, Any]] = []
    used = 0
    truncated = False
    for passage in passages:
        n = len(packed) + 1
        block = format_source(n, passage)
        cost = count_tokens(block + "\n\n")
        if used + cost < max_tokens:
            packed.append({**passage, "n": n})
            used += cost
            continue
        room = max_tokens - used - 1
        if room >= MIN_USEFUL_TOKENS:
            cut = _cut_to_fit(passage, n, room, count_tokens)
            if cut is not None:
                packed.append({**cut, "n": n, "truncated": True})
                used += count_tokens(format_source(n, cut) + "\n\n")
                truncated = True
                break
    return {
        "passages": packed,
        "context_tokens": used,
        "max_context_tokens": max_tokens,
        "dropped": len(passages) - len(packed),
        "truncated": truncated,
    }


def _cut_to_fit(passage: dict[str, Any], n: int, room: int, count_tokens: Callable[[str], int]) -> dict | None:
    text = passage["text"]
    bounds = [m.end() for m in re.finditer(r"[.!?](\s|$)|\n", text)] or [m.end() for m in re.finditer(r"\s", text)]
    best = None
    lo, hi = 0, len(bounds) - 1
    while lo <= hi:  # binary search the longest prefix ending at a boundary that fits
        mid = (lo + hi) // 2
        cand = {**passage, "text": text[: bounds[mid]].rstrip()}
        if count_tokens(format_source(n, cand) + "\n\n") <= room:
            best = cand
            lo = mid + 1
        else:
            hi = mid - 1
    return best if best and count_tokens(best["text"]) >= MIN_USEFUL_TOKENS // 2 else None
