"""Prompt templates (files under ``prompts/``), the messages built from them, and the fixed strings the
code relies on.

Prompts live as files so they can be read and diffed without reading code; a wheel install carries
them as ``agentic_rag/_prompts``. The answer and reflect prompts are built here, not by the generator
alone, because other roles price or replay them: the supervisor costs the answer call before the gate
allows it, BAUG prices a revision before asking for one, and the quote probe re-reads the answer prompt.
"""

from __future__ import annotations

import re
import string
from functools import lru_cache
from pathlib import Path
from typing import Any

from langchain_core.messages import HumanMessage, SystemMessage

from agentic_rag.errors import UserError

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


# Kept importable from here: the patterns live with the rest of page screening (agentic_rag.injection)
from agentic_rag.injection import UNTRUSTED_PATTERNS, is_untrusted, may_hold_untrusted  # noqa: E402,F401

_CANDIDATES = (
    Path(__file__).resolve().parent.parent / "prompts",  # source checkout / editable install
    Path(__file__).resolve().parent / "_prompts",  # wheel install
)


def prompts_dir() -> Path:
    for cand in _CANDIDATES:
        if cand.is_dir():
            return cand
    raise FileNotFoundError(f"prompt templates not found in {[str(c) for c in _CANDIDATES]}")


# The placeholders each template must hold, no more and no fewer: a prompt file edited to drop
# {sources} would otherwise send the model no evidence, and one that adds {context} would fail only
# when a question reaches it. A file is checked against this when it is read.
TEMPLATE_FIELDS: dict[str, frozenset[str]] = {
    "answer_system": frozenset(),
    "answer_user": frozenset({"sources", "question", "query_time"}),
    "reflect_system": frozenset(),
    "reflect_user": frozenset({"sources", "question", "query_time", "draft", "problems"}),
    "grade_system": frozenset(),
    "grade_user": frozenset({"question", "passage"}),
    "judge_system": frozenset(),
    "judge_user": frozenset({"question", "answer", "evidence"}),
    "verify_system": frozenset(),
    "verify_user": frozenset({"question", "answer", "evidence"}),
    "eval_judge_system": frozenset(),
    "eval_judge_user": frozenset({"question", "gold", "prediction"}),
}


class PromptTemplateError(UserError, ValueError):
    """A prompt file whose placeholders are not the ones its caller fills."""

    label = "prompt error"


def template_fields(text: str, where: str = "template") -> set[str]:
    """The ``{name}`` placeholders of a template (``{{`` and ``}}`` are literal braces)."""
    try:
        fields = [f for _, f, _, _ in string.Formatter().parse(text) if f is not None]
    except ValueError as exc:  # a lone brace
        raise PromptTemplateError(f"{where}: {exc} (write a literal brace as {{{{ or }}}})") from None
    if any(not f.isidentifier() for f in fields):
        bad = next(f for f in fields if not f.isidentifier())
        raise PromptTemplateError(f"{where}: placeholder {{{bad}}} is not a name (write a literal brace as {{{{ or }}}})")
    return set(fields)


@lru_cache(maxsize=None)
def load_prompt(name: str) -> str:
    if name not in TEMPLATE_FIELDS:
        raise PromptTemplateError(f"no prompt template named {name!r}; known: {', '.join(sorted(TEMPLATE_FIELDS))}")
    path = prompts_dir() / f"{name}.txt"
    if not path.is_file():
        raise FileNotFoundError(f"no prompt template {name!r} at {path}")
    text = path.read_text(encoding="utf-8")
    found, wanted = template_fields(text, str(path)), TEMPLATE_FIELDS[name]
    if found != wanted:
        parts = [f"missing {', '.join('{' + f + '}' for f in sorted(wanted - found))}" if wanted - found else "",
                 f"unknown {', '.join('{' + f + '}' for f in sorted(found - wanted))}" if found - wanted else ""]
        raise PromptTemplateError(f"{path}: {'; '.join(p for p in parts if p)} (it takes exactly "
                                  f"{', '.join('{' + f + '}' for f in sorted(wanted)) or 'no placeholders'})")
    return text


def render(name: str, **values: str) -> str:
    if set(values) != TEMPLATE_FIELDS[name]:  # a caller out of step with the table above: a bug, not input
        raise TypeError(f"{name} takes {sorted(TEMPLATE_FIELDS[name])}, was given {sorted(values)}")
    return load_prompt(name).format(**values)


def messages_for(template: str, **values: str) -> list:
    """``template`` names a prompt pair: ``<template>_system.txt`` and ``<template>_user.txt``."""
    return [
        SystemMessage(content=render(f"{template}_system").strip()),  # "{{" in a system prompt is a literal brace
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
