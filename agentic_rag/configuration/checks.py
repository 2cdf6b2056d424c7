"""What a setting's value must be, beyond its type, to be used: a pattern that compiles, a key an HTTP
header can carry, a URL a client accepts. Each is checked when settings load (every section's
validator calls ``value_problem``), so a mistake is one settings error naming the setting, never a
traceback inside a question nor a key quoted back by an HTTP library's error."""

from __future__ import annotations

import re
import unicodedata
from typing import Any, Callable

from agentic_rag.redact import MASK

PATTERN_UNITS = ("regex", "regexes")  # a setting in these units is compiled when settings load
LINE_BREAKS = "\n\r\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029"  # what str.splitlines splits on


def value_problem(name: str, unit: str, value: Any) -> str | None:
    """Why ``value`` cannot be setting ``name`` (of ``unit``), or None."""
    if value is None:
        return None
    if unit in PATTERN_UNITS:
        problems = (pattern_problem(name, pattern) for pattern in ([value] if isinstance(value, str) else value))
        return next((problem for problem in problems if problem), None)
    if unit == "secret":
        return secret_problem(name, value.get_secret_value())
    if unit == "URL":
        return url_problem(name, value)
    return None


def pattern_problem(name: str, pattern: str) -> str | None:
    try:
        re.compile(pattern)
    except re.error as exc:
        return f"setting {name}: {pattern!r} is not a valid regular expression ({exc})"
    return None


def secret_problem(name: str, key: str) -> str | None:
    """Why ``key`` cannot be setting ``name``, or None. A key travels in an HTTP header, so it is one line
    of printable ASCII: a key read from a file of two lines would be sent broken, and the client's
    error would quote it back. ``***`` is the mask shown in a key's place (config.json, a printed
    command), never a key: sent, every question would end refused and the run count as complete."""
    if key == MASK:
        return (f"setting {name} is {MASK!r}, the mask shown in place of a key, not a key: give the key itself "
                "(set it in the environment)")
    if odd := _odd_character(key, lambda ch: "!" <= ch <= "~"):
        return f"setting {name} holds {odd}: an API key is one line of printable ASCII (read from a file of two lines?)"
    return None


def url_problem(name: str, url: str) -> str | None:
    """Why ``url`` cannot be setting ``name``, or None: an HTTP client refuses a URL holding a control
    character, and a space or a line break in one is a pasting mistake, not a path."""
    if odd := _odd_character(url, lambda ch: ch.isprintable() and not ch.isspace()):
        return f"setting {name} holds {odd}: a URL is one line without spaces"
    return None


def _odd_character(text: str, allowed: Callable[[str], bool]) -> str | None:
    """'a line break at character 12' for the first character of ``text`` that ``allowed`` refuses, or
    None; the character itself is not shown (it may be part of a key)."""
    for i, ch in enumerate(text, 1):
        if not allowed(ch):
            what = ("a line break" if ch in LINE_BREAKS else "a space" if ch.isspace() else
                    "a control character" if unicodedata.category(ch).startswith("C") else "a non-ASCII character")
            return f"{what} at character {i}"
    return None
