"""Prompt templates (files under ``prompts/``) and the fixed strings the code relies on.

Prompts live as files so they can be read and diffed without reading code; a wheel install carries
them as ``agentic_rag/_prompts``.
"""

from __future__ import annotations

import re
from functools import lru_cache
from pathlib import Path

IDK_ANSWER = "I don't know."

# Layer 3 of abstention: an answer that hedges or says it cannot answer is turned into an explicit,
# explained abstention instead of being shown as an answer.
HEDGING_PATTERNS = (
    r"\bI(?:'m| am) not (?:sure|certain)\b",
    r"\bI (?:think|believe|guess)\b",
    r"\b(?:maybe|perhaps|possibly|probably)\b",
    r"\bI (?:don't|do not) know\b",
    r"\b(?:cannot|can't|unable to) (?:find|determine|answer|tell)\b",
    r"\bno (?:information|data|evidence|mention)\b",
    r"\bnot (?:mentioned|specified|stated|provided|given|available)\b",
    r"\b(?:the )?(?:sources?|context|documents?) (?:do(?:es)? not|don't|doesn't) (?:say|mention|contain|provide|specify)\b",
)
INVALID_QUESTION = "invalid question"

_HEDGING = re.compile("|".join(HEDGING_PATTERNS), re.IGNORECASE)


def is_hedging(text: str) -> bool:
    return bool(_HEDGING.search(text))


_CANDIDATES = (
    Path(__file__).resolve().parent.parent / "prompts",  # source checkout / editable install
    Path(__file__).resolve().parent / "_prompts",  # wheel install
)


def prompts_dir() -> Path:
    for cand in _CANDIDATES:
        if cand.is_dir():
            return cand
    raise FileNotFoundError(f"prompt templates not found in {[str(c) for c in _CANDIDATES]}")


@lru_cache(maxsize=None)
def load_prompt(name: str) -> str:
    path = prompts_dir() / f"{name}.txt"
    if not path.is_file():
        raise FileNotFoundError(f"no prompt template {name!r} at {path}")
    return path.read_text(encoding="utf-8")


def render(name: str, **values: str) -> str:
    return load_prompt(name).format(**values)
