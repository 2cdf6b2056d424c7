"""Prompt templates (files under ``prompts/``), the messages built from them, and the fixed strings the
code relies on.

Prompts live as files so they can be read and diffed without reading code; a wheel install carries
them as ``agentic_rag/_prompts``. The answer and reflect prompts are built here, not by the generator
alone, because other roles price or replay them: the supervisor costs the answer call before the gate
allows it, BAUG prices a revision before asking for one, and the quote probe re-reads the answer prompt.
"""

from __future__ import annotations

import re
from functools import lru_cache
from pathlib import Path
from typing import Any

from langchain_core.messages import HumanMessage, SystemMessage

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


# Kept importable from here: the patterns live with the rest of page screening (agentic_rag.ingest.injection)
from agentic_rag.ingest.injection import UNTRUSTED_PATTERNS, is_untrusted, may_hold_untrusted  # noqa: E402,F401


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


def messages_for(template: str, **values: str) -> list:
    """``template`` names a prompt pair: ``<template>_system.txt`` and ``<template>_user.txt``."""
    return [
        SystemMessage(content=load_prompt(f"{template}_system").strip()),
        HumanMessage(content=render(f"{template}_user", **values).strip()),
    ]


def format_source(n: int, passage: dict[str, Any]) -> str:
    """One source as a prompt shows it: its number, page and date, then its text (the packer counts
    tokens on exactly this text)."""
    meta = passage.get("page_name") or passage.get("page_url") or "source"
    if passage.get("page_last_modified"):
        meta += f" (last modified {passage['page_last_modified']})"
    return f"[{n}] {meta}\n{passage['text'].strip()}"


def render_sources(bundle: dict[str, Any]) -> str:
    return "\n\n".join(format_source(p["n"], p) for p in bundle["passages"])


def answer_messages(question: str, bundle: dict[str, Any], query_time: str = "") -> list:
    return messages_for(
        "answer",
        sources=render_sources(bundle) or "(no sources)",
        question=question,
        query_time=query_time or "unknown",
    )


def reflect_messages(question: str, bundle: dict[str, Any], draft: str, problems: str, query_time: str = "") -> list:
    return messages_for(
        "reflect",
        sources=render_sources(bundle) or "(no sources)",
        question=question,
        query_time=query_time or "unknown",
        draft=draft,
        problems=problems or "none found",
    )


def reflect_problems(signals: dict[str, Any]) -> str:
    """What the critique found, in words the reviser can act on (from the code's signals, not the model)."""
    parts = []
    unsupported = [r["sentence"] for r in signals.get("sentences", []) if not r.get("supported")]
    if unsupported:
        parts.append("sentences without support: " + " | ".join(unsupported[:3]))
    if signals.get("unsupported_claims"):
        parts.append("names or numbers not in the sources: " + ", ".join(signals["unsupported_claims"][:6]))
    return "; ".join(parts)


def reflect_request(state: dict[str, Any]) -> list:
    """The revision prompt for a state (the reflect node sends it; BAUG prices it before allowing one)."""
    return reflect_messages(
        state["question"],
        state["bundle"],
        state.get("draft", ""),
        reflect_problems(state.get("signals", {})),
        state.get("query_time", ""),
    )
