"""A graph's shape in every format `agentic-rag graph` offers, all drawn on this machine.

LangGraph's own PNG drawing calls a web service (mermaid.ink) by default; here a PNG is drawn by
Graphviz's ``dot`` from DOT text written from the same node and edge list the Mermaid text comes
from when ``dot`` is installed, and otherwise by matplotlib on a grandalf layout (both project
dependencies), so a fresh machine with no system packages still draws one. ASCII art uses grandalf.
"""

from __future__ import annotations

import io
import shutil
import subprocess

from agentic_rag.errors import UserError

FORMATS = ("mermaid", "ascii", "dot", "png")
BINARY_FORMATS = {"png"}
DOT_TIMEOUT_S = 60


class DrawError(UserError, RuntimeError):
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


def _back_edges(graph) -> list[tuple[str, str]]:
    """The edges that close a loop, found by a depth-first walk from the start that takes the longer
    way to the end first: reversing exactly these lays the graph out in the order it runs (BAUG's
    RETRIEVE_MORE and REFLECT loops point back up), where grandalf's own guess, or a walk in the
    order edges are listed, puts a shortcut's target (an early exit to the gate) near the top."""
    out: dict[str, list[str]] = {}
    into: dict[str, list[str]] = {}
    for e in graph.edges:
        out.setdefault(e.source, []).append(e.target)
        into.setdefault(e.target, []).append(e.source)
    to_end = {n: 0 for n in graph.nodes if n == "__end__"}  # hops to the end, by a breadth-first walk back
    frontier = list(to_end)
    while frontier:
        nxt = []
        for node in frontier:
            for prev in into.get(node, []):
                if prev not in to_end:
                    to_end[prev] = to_end[node] + 1
                    nxt.append(prev)
        frontier = nxt
    for node, targets in out.items():
        targets.sort(key=lambda t: -to_end.get(t, 0))
    state: dict[str, int] = {}  # 1 on the walk's path, 2 finished
    back: list[tuple[str, str]] = []

    def walk(node: str) -> None:
        state[node] = 1
        for nxt in out.get(node, []):
            if state.get(nxt) == 1:
                back.append((node, nxt))
            elif nxt not in state:
                walk(nxt)
        state[node] = 2

    for root in [n for n in graph.nodes if n == "__start__"] + list(graph.nodes):
        if root not in state:
            walk(root)
    return back


def _layout(graph) -> tuple[dict[str, tuple[float, float]], dict[str, tuple[float, float]]]:
    """Node centres and box sizes (points) from grandalf's layered layout, the one LangGraph's ASCII
    drawing uses; loops are laid out by grandalf reversing back edges, as dot does."""
    from grandalf.graphs import Edge, Graph, Vertex
    from grandalf.layouts import SugiyamaLayout

    class _View:
        def __init__(self, w: float, h: float):
            self.w, self.h, self.xy = w, h, (0.0, 0.0)

    vertices = {node_id: Vertex(node_id) for node_id in graph.nodes}
    sizes = {}
    for node_id, node in graph.nodes.items():
        label = node.name.strip("_")
        sizes[node_id] = (max(60.0, 7.5 * len(label) + 24.0), 30.0)
        vertices[node_id].view = _View(*sizes[node_id])
    edges = {(e.source, e.target): Edge(vertices[e.source], vertices[e.target]) for e in graph.edges}
    g = Graph(list(vertices.values()), list(edges.values()))
    back = [edges[pair] for pair in _back_edges(graph)]
    centres: dict[str, tuple[float, float]] = {}
    offset = 0.0
    for component in g.C:  # side by side, should a graph ever have several parts
        sug = SugiyamaLayout(component)
        sug.init_all(roots=[v for v in component.sV if not v.e_in()] or None,
                     inverted_edges=[e for e in back if e in component.sE])
        sug.yspace, sug.xspace = 40, 30
        sug.draw()
        xs = [v.view.xy[0] for v in component.sV]
        left = min(x - v.view.w / 2 for x, v in zip(xs, component.sV))
        for v in component.sV:
            centres[v.data] = (v.view.xy[0] - left + offset, v.view.xy[1])
        offset += max(x + v.view.w / 2 for x, v in zip(xs, component.sV)) - left + 40
    return centres, sizes


def matplotlib_png(graph, title: str = "") -> bytes:
    """The graph as a PNG without any system program: boxes on grandalf's layout, dashed arrows for
    conditional edges, each labelled with its condition where LangGraph records one."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.patches import FancyArrowPatch, FancyBboxPatch

    centres, sizes = _layout(graph)
    xs = [x for x, _ in centres.values()]
    ys = [y for _, y in centres.values()]
    width, height = max(xs) - min(xs) + 200, max(ys) - min(ys) + 140
    fig = plt.figure(figsize=(width / 72, height / 72), dpi=110)
    ax = fig.add_axes((0, 0, 1, 1))
    ax.set_xlim(min(xs) - 100, max(xs) + 100)
    ax.set_ylim(max(ys) + 70, min(ys) - 70)  # grandalf's y grows downwards
    ax.axis("off")
    for node_id, node in graph.nodes.items():
        (x, y), (w, h) = centres[node_id], sizes[node_id]
        terminal = node_id in ("__start__", "__end__")
        ax.add_patch(FancyBboxPatch((x - w / 2, y - h / 2), w, h, boxstyle="round,pad=0,rounding_size=8",
                                    facecolor="#ddf4ff" if terminal else "#f2f4f8", edgecolor="#333333"))
        ax.text(x, y, node.name.strip("_"), ha="center", va="center", fontsize=9)
    for edge in graph.edges:
        (x0, y0), (x1, y1) = centres[edge.source], centres[edge.target]
        h0, h1 = sizes[edge.source][1] / 2, sizes[edge.target][1] / 2
        start = (x0, y0 + h0) if y1 > y0 else (x0, y0 - h0)
        end = (x1, y1 - h1) if y1 > y0 else (x1, y1 + h1)
        back = y1 <= y0
        ax.add_patch(FancyArrowPatch(start, end, arrowstyle="-|>", mutation_scale=10, color="#555555",
                                     linestyle="--" if edge.conditional else "-",
                                     connectionstyle=f"arc3,rad={0.35 if back else 0.0}"))
        if edge.data:
            ax.text((start[0] + end[0]) / 2, (start[1] + end[1]) / 2, str(edge.data), fontsize=7,
                    ha="center", va="center", color="#444444",
                    bbox={"facecolor": "white", "edgecolor": "none", "pad": 1})
    if title:
        ax.text((min(xs) + max(xs)) / 2, min(ys) - 50, title, ha="center", va="center", fontsize=10)
    buf = io.BytesIO()
    fig.savefig(buf, format="png")
    plt.close(fig)
    return buf.getvalue()


def png(graph, title: str = "") -> bytes:
    """Graphviz's drawing where ``dot`` is installed, matplotlib's otherwise."""
    if shutil.which("dot") is None:
        return matplotlib_png(graph, title)
    return dot_png(to_dot(graph, title))


def draw(compiled, fmt: str) -> str | bytes:
    """A compiled graph's shape in ``fmt`` (text, or PNG bytes), titled with the graph's name."""
    if fmt not in FORMATS:
        raise DrawError(f"unknown format {fmt!r}; choose one of {', '.join(FORMATS)}")
    graph = compiled.get_graph()
    if fmt == "mermaid":
        return graph.draw_mermaid()
    if fmt == "ascii":
        return graph.draw_ascii()
    title = f"agentic-rag: {compiled.name}"
    return to_dot(graph, title=title) if fmt == "dot" else png(graph, title)
