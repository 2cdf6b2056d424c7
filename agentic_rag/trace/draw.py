"""A graph's shape in every format `agentic-rag graph` offers, all drawn on this machine.

LangGraph's own PNG drawing calls a web service (mermaid.ink) by default; here a PNG is drawn by
Graphviz's ``dot`` from DOT text written from the same node and edge list the Mermaid text comes
from. ASCII art uses grandalf (a project dependency).
"""

from __future__ import annotations

import shutil
import subprocess

FORMATS = ("mermaid", "ascii", "dot", "png")
BINARY_FORMATS = {"png"}
DOT_TIMEOUT_S = 60


class DrawError(RuntimeError):
    """A drawing that cannot be made here (a missing Graphviz, an unknown format)."""


def _quote(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


def to_dot(graph, title: str = "") -> str:
    """DOT text of a LangGraph drawable graph: boxes for nodes, dashed arrows for conditional edges."""
    lines = ["digraph G {", "  rankdir=TB;", '  graph [fontname="DejaVu Sans"];', '  node [shape=box, style="rounded,filled", fillcolor="#f2f4f8", '
             'fontname="DejaVu Sans"];', '  edge [fontname="DejaVu Sans", fontsize=10];']
    if title:
        lines.append(f"  label={_quote(title)}; labelloc=t;")
    for node in graph.nodes.values():
        attrs = 'shape=oval, fillcolor="#ddf4ff"' if node.id in ("__start__", "__end__") else ""
        lines.append(f"  {_quote(node.id)} [label={_quote(node.name.strip('_'))}{', ' + attrs if attrs else ''}];")
    for edge in graph.edges:
        attrs = ["style=dashed"] if edge.conditional else []
        if edge.data:
            attrs.append(f"label={_quote(str(edge.data))}")
        lines.append(f"  {_quote(edge.source)} -> {_quote(edge.target)}{' [' + ', '.join(attrs) + ']' if attrs else ''};")
    lines.append("}")
    return "\n".join(lines) + "\n"


def dot_png(dot_text: str) -> bytes:
    exe = shutil.which("dot")
    if exe is None:
        raise DrawError("drawing a PNG needs Graphviz's `dot` program (Debian: apt-get install graphviz)")
    done = subprocess.run([exe, "-Tpng"], input=dot_text.encode(), capture_output=True, timeout=DOT_TIMEOUT_S)
    if done.returncode != 0:
        raise DrawError(f"dot failed: {done.stderr.decode(errors='replace').strip()[:300]}")
    return done.stdout


def draw(compiled, fmt: str) -> str | bytes:
    """A compiled graph's shape in ``fmt`` (text, or PNG bytes), titled with the graph's name."""
    if fmt not in FORMATS:
        raise DrawError(f"unknown format {fmt!r}; choose one of {', '.join(FORMATS)}")
    graph = compiled.get_graph()
    if fmt == "mermaid":
        return graph.draw_mermaid()
    if fmt == "ascii":
        return graph.draw_ascii()
    dot_text = to_dot(graph, title=f"agentic-rag: {compiled.name}")
    return dot_text if fmt == "dot" else dot_png(dot_text)
