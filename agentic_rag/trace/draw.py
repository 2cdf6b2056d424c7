"""A graph's shape in every format `agentic-rag graph` offers, all drawn on this machine.

Every format is written from one :class:`Diagram`: the compiled graph's nodes grouped by the role
each plays in the design (``role`` in the node's metadata, from ``agentic_rag.nodes.ROLE``) and its
conditional edges labelled with the decision that takes them (``routes`` in the router's metadata).
Mermaid draws a role as a subgraph, DOT as a cluster, ASCII art prefixes each node with its role and
lists the decisions below; the trace page lays out the same diagram (:func:`layout`).

LangGraph's own PNG drawing calls a web service (mermaid.ink) by default; here a PNG is drawn by
Graphviz's ``dot`` from the DOT text when ``dot`` is installed, and otherwise by matplotlib on a
grandalf layout (both project dependencies), so a fresh machine with no system packages still draws
one, with the same roles (as fills and a legend) and decisions. ASCII art uses grandalf.
"""

from __future__ import annotations

import io
import re
import shutil
import subprocess
from dataclasses import dataclass, field
from typing import Any

from agentic_rag.errors import UserError

FORMATS = ("mermaid", "ascii", "dot", "png")
BINARY_FORMATS = {"png"}
DOT_TIMEOUT_S = 60
START, END = "__start__", "__end__"
# one fill per role, the same in every drawing and on the trace page
ROLE_COLOURS = {"Anchor-Predictor": "#ddf4ff", "Retriever-Workers": "#dafbe1", "Retriever": "#dafbe1",
                "Supervisor": "#fff8c5", "Generator": "#fbefff", "BAUG": "#ffebe9", "Extensions": "#eaeef2"}


class DrawError(UserError, RuntimeError):
    """A drawing that cannot be made here (a missing Graphviz, an unknown format)."""


@dataclass
class Diagram:
    name: str
    nodes: list[dict[str, Any]] = field(default_factory=list)  # id, role ("" for start and end)
    edges: list[dict[str, Any]] = field(default_factory=list)  # source, target, conditional, label

    def roles(self) -> dict[str, list[str]]:
        """Role -> its nodes, roles in the order their first node appears."""
        out: dict[str, list[str]] = {}
        for n in self.nodes:
            if n["role"]:
                out.setdefault(n["role"], []).append(n["id"])
        return out

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "nodes": self.nodes, "edges": self.edges, "colours": ROLE_COLOURS}


def diagram(compiled) -> Diagram:
    """The compiled graph's nodes with their roles and its edges with the decisions that take them."""
    graph = compiled.get_graph()
    d = Diagram(compiled.name)
    for node in graph.nodes.values():
        meta = node.metadata or {}
        d.nodes.append({"id": node.id, "role": meta.get("role", "")})
    routes = {n.id: (n.metadata or {}).get("routes", {}) for n in graph.nodes.values()}
    for e in graph.edges:
        label = routes.get(e.source, {}).get(e.target) or (str(e.data) if e.data else "")
        d.edges.append({"source": e.source, "target": e.target, "conditional": bool(e.conditional), "label": label})
    return d


def _quote(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


def _ident(text: str) -> str:
    return re.sub(r"\W", "_", text).lower()


def _name(node_id: str) -> str:
    return node_id.strip("_")


def to_mermaid(d: Diagram) -> str:
    """Mermaid flowchart text: a subgraph per role, dotted arrows for conditional edges with their decision."""
    lines = ["graph TD;"]
    ends = [n["id"] for n in d.nodes if not n["role"]]
    for node_id in ends:
        lines.append(f'\t{node_id}(["{_name(node_id)}"]):::{"first" if node_id == START else "last"}')
    for role, ids in d.roles().items():
        lines.append(f'\tsubgraph {_ident(role)}["{role}"]')
        lines += [f"\t\t{i}({i})" for i in ids]
        lines.append("\tend")
    for e in d.edges:
        arrow = (f"-. {_mermaid_label(e['label'])} .->" if e["label"] else "-.->") if e["conditional"] else \
            (f"-- {_mermaid_label(e['label'])} -->" if e["label"] else "-->")
        lines.append(f"\t{e['source']} {arrow} {e['target']};")
    for role in d.roles():
        lines.append(f"\tstyle {_ident(role)} fill:{ROLE_COLOURS.get(role, '#eaeef2')}")
    lines += ["\tclassDef default fill:#ffffff", "\tclassDef first fill-opacity:0", "\tclassDef last fill:#bfb6fc"]
    return "\n".join(lines) + "\n"


def _mermaid_label(text: str) -> str:
    return '"' + text.replace('"', "'") + '"'


def to_dot(d: Diagram) -> str:
    """DOT text: a cluster per role, dashed arrows for conditional edges labelled with their decision."""
    lines = ["digraph G {", "  rankdir=TB; compound=true;", '  graph [fontname="DejaVu Sans"];',
             '  node [shape=box, style="rounded,filled", fillcolor="#ffffff", fontname="DejaVu Sans"];',
             '  edge [fontname="DejaVu Sans", fontsize=10];', f"  label={_quote('agentic-rag: ' + d.name)}; labelloc=t;"]
    for n in d.nodes:
        if not n["role"]:
            lines.append(f'  {_quote(n["id"])} [label={_quote(_name(n["id"]))}, shape=oval, fillcolor="#ddf4ff"];')
    for role, ids in d.roles().items():
        lines.append(f"  subgraph cluster_{_ident(role)} {{")
        lines.append(f'    label={_quote(role)}; style="rounded,filled"; fillcolor="{ROLE_COLOURS.get(role, "#eaeef2")}";')
        lines += [f"    {_quote(i)} [label={_quote(i)}];" for i in ids]
        lines.append("  }")
    for e in d.edges:
        attrs = ["style=dashed"] if e["conditional"] else []
        if e["label"]:
            attrs.append(f"label={_quote(e['label'])}")
        lines.append(f"  {_quote(e['source'])} -> {_quote(e['target'])}{' [' + ', '.join(attrs) + ']' if attrs else ''};")
    lines.append("}")
    return "\n".join(lines) + "\n"


def to_ascii(d: Diagram) -> str:
    """ASCII art with each node's role in its box, then the roles and the decisions on the edges
    (grandalf's boxes have no room for edge labels)."""
    role_of = {n["id"]: n["role"] for n in d.nodes}
    lines = [_drawable(d, with_roles=True).draw_ascii(), "", "roles:"]
    lines += [f"  {role}: {', '.join(ids)}" for role, ids in d.roles().items()]
    labelled = [e for e in d.edges if e["label"]]
    if labelled:
        lines += ["", "decisions on the conditional edges:"]
        lines += [f"  {e['source']} -> {e['target']}: {e['label']}" for e in labelled if role_of.get(e["source"]) is not None]
    return "\n".join(lines) + "\n"


def _drawable(d: Diagram, with_roles: bool = False):
    """The diagram as LangGraph's drawable graph (what grandalf lays out): each edge's decision as its
    data, and with ``with_roles`` each node named with its role."""
    from langchain_core.runnables.graph import Edge, Graph, Node

    g = Graph()
    for n in d.nodes:
        name = f"{n['role']}: {n['id']}" if with_roles and n["role"] else n["id"]
        g.nodes[n["id"]] = Node(id=n["id"], name=name, data=None, metadata={"role": n["role"]} if n["role"] else None)
    for e in d.edges:
        g.edges.append(Edge(e["source"], e["target"], e["label"] or None, e["conditional"]))
    return g


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


def matplotlib_png(d: Diagram) -> bytes:
    """The graph as a PNG without any system program: boxes on grandalf's layout, dashed arrows for
    conditional edges, each labelled with its condition where LangGraph records one."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.patches import FancyArrowPatch, FancyBboxPatch

    graph, title = _drawable(d), f"agentic-rag: {d.name}"
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
                                    facecolor="#ddf4ff" if terminal else ROLE_COLOURS.get((node.metadata or {}).get("role"), "#f2f4f8"),
                                    edgecolor="#333333"))
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
    ax.text((min(xs) + max(xs)) / 2, min(ys) - 50, title, ha="center", va="center", fontsize=10)
    for i, role in enumerate(d.roles()):  # the roles, as the other formats group them
        ax.text(min(xs) - 90, max(ys) + 10 + 14 * i - 14 * len(d.roles()) + 50, f"  {role}  ", fontsize=8, va="center",
                bbox={"facecolor": ROLE_COLOURS.get(role, "#eaeef2"), "edgecolor": "#8c959f", "pad": 2})
    buf = io.BytesIO()
    fig.savefig(buf, format="png")
    plt.close(fig)
    return buf.getvalue()


def png(d: Diagram) -> bytes:
    """Graphviz's drawing where ``dot`` is installed, matplotlib's otherwise."""
    if shutil.which("dot") is None:
        return matplotlib_png(d)
    return dot_png(to_dot(d))


def draw(compiled, fmt: str) -> str | bytes:
    """A compiled graph's shape in ``fmt`` (text, or PNG bytes), titled with the graph's name."""
    if fmt not in FORMATS:
        raise DrawError(f"unknown format {fmt!r}; choose one of {', '.join(FORMATS)}")
    d = diagram(compiled)
    if fmt == "mermaid":
        return to_mermaid(d)
    if fmt == "ascii":
        return to_ascii(d)
    return to_dot(d) if fmt == "dot" else png(d)


# -- a layout for the trace page -----------------------------------------------------------------
def layout(d: Diagram) -> dict[str, Any]:
    """Rows and columns for the trace page's drawing: a node's row is its longest distance from the
    start over forward edges (the edges that close a loop, as :func:`_back_edges` finds them for the
    PNG, are drawn as arcs and do not count), nodes of one row side by side in declaration order."""
    seen = {n["id"]: i for i, n in enumerate(d.nodes)}
    back = set(_back_edges(_drawable(d)))
    forward = [(e["source"], e["target"]) for e in d.edges if (e["source"], e["target"]) not in back]
    row = {n["id"]: 0 for n in d.nodes}
    for _ in range(len(row)):  # longest path on the acyclic forward edges (a handful of nodes)
        for a, b in forward:
            row[b] = max(row[b], row[a] + 1)
    rows: dict[int, list[str]] = {}
    for node in sorted(row, key=lambda n: (row[n], seen.get(n, 0))):
        rows.setdefault(row[node], []).append(node)
    pos = {node: {"row": r, "col": c, "cols": len(nodes)} for r, nodes in rows.items() for c, node in enumerate(nodes)}
    return {"pos": pos, "rows": max(rows) + 1 if rows else 0, "back": sorted([list(e) for e in back])}
