"""One self-contained HTML page to browse a run (template.html beside this file; no network).

The run's data goes into a ``<script type="application/json">`` element with ``<``, ``>`` and ``&``
written as JSON escapes, so no text from a page (``</script>`` included) can close the element; the
page's script then sets every text with ``textContent``. A Content-Security-Policy forbids loading
anything from elsewhere.
"""

from __future__ import annotations

import html
import json
from pathlib import Path

from agentic_rag.errors import write_output
from agentic_rag.trace.run import Run, run_view

TEMPLATE = Path(__file__).with_name("template.html")
_JSON_ESCAPES = {"<": "\\u003c", ">": "\\u003e", "&": "\\u0026", "\u2028": "\\u2028", "\u2029": "\\u2029"}


def script_json(data) -> str:
    text = json.dumps(data, ensure_ascii=False, default=str)
    for raw, escaped in _JSON_ESCAPES.items():
        text = text.replace(raw, escaped)
    return text


def _page(view: dict) -> str:
    head, tail = TEMPLATE.read_text(encoding="utf-8").split("__DATA__", 1)
    head = head.replace("__TITLE__", html.escape(f"trace: {view['name']} ({view['system']})"), 1)
    return head + script_json(view) + tail


def render_html(run: Run, graph=None) -> str:
    """The run's page; with the compiled ``graph`` the run used, each question's path drawn on it."""
    return _page(run_view(run, graph))


def render_compare_html(run_a: Run, run_b: Run, graph_a=None, graph_b=None) -> str:
    """The same page listing only the questions whose outcome flipped, both runs side by side."""
    from agentic_rag.trace.compare import compare_view

    return _page(compare_view(run_a, run_b, graph_a, graph_b))


def write_page(text: str, out: str | Path) -> Path:
    """The page at ``out``: a file, or a stream it names (``--html /dev/stdout``, errors.write_output)."""
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    return write_output(out, text)


def write_html(run: Run, out: str | Path, graph=None) -> Path:
    return write_page(render_html(run, graph), out)
