"""Questions refused as input, before any anchor is extracted, page read or model asked.

The anchors node runs these first (BAUG then records the refusal); the runner refuses a too-long
question for every system before a graph starts, and the CLI before loading anything.
"""

from __future__ import annotations

import re


def question_too_long(question: str, settings) -> str:
    """Why the question is refused as input, or ''. A question thousands of words long is a pasted
    document, not a question; it would cost minutes of anchor extraction and a prompt no budget holds."""
    if len(question) > settings.budget.MAX_QUESTION_CHARS:
        return f"is {len(question)} characters long; at most {settings.budget.MAX_QUESTION_CHARS} (MAX_QUESTION_CHARS) are read"
    return ""


def out_of_domain(question: str, settings) -> str:
    """The pattern that puts the question out of domain, or '': ``OOD_DENY_PATTERNS`` refuse a
    question; a non-empty ``OOD_ALLOW_PATTERNS`` refuses any question that matches none of them."""
    for pattern in settings.agent.OOD_DENY_PATTERNS:
        if re.search(pattern, question, re.IGNORECASE):
            return f"matches the deny pattern {pattern!r}"
    if settings.agent.OOD_ALLOW_PATTERNS and not any(re.search(p, question, re.IGNORECASE) for p in settings.agent.OOD_ALLOW_PATTERNS):
        return "matches none of the allowed topics"
    return ""
