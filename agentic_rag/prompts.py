"""Prompt templates (files under ``prompts/``) and the fixed strings the code relies on.

Prompts live as files so they can be read and diffed without reading code; a wheel install carries
them as ``agentic_rag/_prompts``.
"""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path

IDK_ANSWER = "I don't know."
INVALID_QUESTION = "invalid question"

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
