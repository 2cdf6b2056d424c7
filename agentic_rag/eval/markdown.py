"""Text from a dataset or a run folder (a domain, a question, an answer, a run's name) in the markdown the
project writes: report.md, comparison.md, the benchmark reports. Written as it is, a ``|`` or a line break
in it breaks the table it sits in and starts a heading, and ``<img ...>`` or ``![](url)`` loads a remote
image wherever the file is rendered; ``md_escape`` makes it text that shows as written, and
``row_cells`` reads a table row back."""

from __future__ import annotations

import html
import re
from typing import Any

# every line separator str.splitlines() knows: any of them ends a table row or starts a block (each becomes
# one space, so a text's length stays what it was)
_LINE_BREAKS = re.compile(r"[\r\n\v\f\x1c\x1d\x1e\x85\u2028\u2029]")
# what makes markup of the text left on one line: cell breaks, link and image brackets, HTML, entities
_ESCAPES = {"\\": "\\\\", "|": "\\|", "[": "\\[", "]": "\\]", "&": "&amp;", "<": "&lt;", ">": "&gt;"}
_UNESCAPE = re.compile(r"\\(.)")
ELLIPSIS = "\u2026"


def cut(value: Any, width: int) -> str:
    """``value`` cut to ``width`` characters, an ellipsis marking the cut (done before escaping, so that an
    escape is never cut in half)."""
    text = str(value)
    return text if len(text) <= width else text[: width - 1] + ELLIPSIS


def md_escape(value: Any) -> str:
    """``value`` as markdown text on one line that shows as written."""
    return "".join(_ESCAPES.get(c, c) for c in _LINE_BREAKS.sub(" ", str(value)))


def markdown_table(header: list[Any], rows: list[list[Any]]) -> list[str]:
    """A GitHub table's lines, every cell escaped."""
    return ["| " + " | ".join(map(md_escape, header)) + " |", "|" + "---|" * len(header),
            *("| " + " | ".join(map(md_escape, row)) + " |" for row in rows)]


def row_cells(line: str) -> list[str]:
    """The cells of a table row as ``md_escape`` was given them (a backslash escapes the next character)."""
    body = line.strip()
    body = body[1:-1] if body.startswith("|") and body.endswith("|") and len(body) > 1 else body
    cells, cur, i = [], "", 0
    while i < len(body):
        if body[i] == "\\" and i + 1 < len(body):
            cur, i = cur + body[i: i + 2], i + 2
            continue
        if body[i] == "|":
            cells.append(cur)
            cur = ""
        else:
            cur += body[i]
        i += 1
    return [html.unescape(_UNESCAPE.sub(r"\1", c.strip())) for c in [*cells, cur]]
