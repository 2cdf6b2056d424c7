"""A graph's shape in every format `agentic-rag graph` offers, all drawn on this machine.

Every format is written from one :class:`Diagram`: the compiled graph's nodes grouped by the role
each plays in the design (``role`` in the node's metadata, from ``agentic_rag.nodes.ROLE``) and its
conditional edges labelled with the decision that takes them (``routes`` in the router's metadata).
Mermaid draws a role as a subgraph, DOT as a cluster, ASCII art prefixes each node with its role and
lists the decisions below; the trace page lays out the same diagram (:func:`layout`).

LangGraph's own PNG drawing calls a web service (mermaid.ink) by default; here a PNG is drawn by
Graphviz's ``dot`` from the DOT text. ASCII art uses grandalf (a project dependency).
"""

from __future__ import annotations

import re
import shutil
import subprocess
from dataclasses import dataclass, field
from typing import Any

FORMATS = ("mermaid", "ascii", "dot", "png")
BINARY_FORMATS = {"png"}
DOT_TIMEOUT_S = 60
START, END = "__start__", "__end__"
# one fill per role, the same in every drawing and on the trace page
ROLE_COLOURS = {"Anchor-Predictor": "#ddf4ff", "Retriever-Workers": "#dafbe1", "Retriever": "#dafbe1",
                "Supervisor": "#fff8c5", "Generator": "#fbefff", "BAUG": "#ffebe9", "Extensions": "#eaeef2"}


class DrawError(RuntimeError):
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
    from langchain_core.runnables.graph import Edge, Graph, Node

    g = Graph()
    role_of = {n["id"]: n["role"] for n in d.nodes}
    for n in d.nodes:
        g.nodes[n["id"]] = Node(id=n["id"], name=f"{n['role']}: {n['id']}" if n["role"] else n["id"], data=None, metadata=None)
    for e in d.edges:
        g.edges.append(Edge(e["source"], e["target"], None, e["conditional"]))
    lines = [g.draw_ascii(), "", "roles:"]
    lines += [f"  {role}: {', '.join(ids)}" for role, ids in d.roles().items()]
    labelled = [e for e in d.edges if e["label"]]
    if labelled:
        lines += ["", "decisions on the conditional edges:"]
        lines += [f"  {e['source']} -> {e['target']}: {e['label']}" for e in labelled if role_of.get(e["source"]) is not None]
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
    d = diagram(compiled)
    if fmt == "mermaid":
        return to_mermaid(d)
    if fmt == "ascii":
        return to_ascii(d)
    dot_text = to_dot(d)
    return dot_text if fmt == "dot" else dot_png(dot_text)


# -- a layout for the trace page -----------------------------------------------------------------
def layout(d: Diagram) -> dict[str, Any]:
    """Rows and columns for the trace page's drawing: a node's row is its longest distance from the
    start over forward edges (edges that close a loop are drawn as arcs and do not count), nodes of
    one row side by side in the order the graph declares them. The search follows successors in that
    order too, so the main path (declared first) runs straight down and the loops come back up."""
    seen = {n["id"]: i for i, n in enumerate(d.nodes)}
    succ: dict[str, list[str]] = {n["id"]: [] for n in d.nodes}
    for e in d.edges:
        succ.setdefault(e["source"], []).append(e["target"])
    for targets in succ.values():
        targets.sort(key=lambda n: seen.get(n, len(seen)))
    order: list[str] = []
    back: set[tuple[str, str]] = set()
    state: dict[str, int] = {}

    def visit(node: str) -> None:  # depth first, recording the edges that close a loop
        state[node] = 1
        for nxt in succ.get(node, []):
            if state.get(nxt) == 1:
                back.add((node, nxt))
            elif nxt not in state:
                visit(nxt)
        state[node] = 2
        order.append(node)

    visit(START)
    for n in d.nodes:
        if n["id"] not in state:
            visit(n["id"])
    order.reverse()  # a topological order of the forward edges
    row = {n: 0 for n in order}
    for node in order:
        for nxt in succ.get(node, []):
            if (node, nxt) not in back:
                row[nxt] = max(row[nxt], row[node] + 1)
    rows: dict[int, list[str]] = {}
    for node in sorted(row, key=lambda n: (row[n], seen.get(n, 0))):
        rows.setdefault(row[node], []).append(node)
    pos = {node: {"row": r, "col": c, "cols": len(nodes)} for r, nodes in rows.items() for c, node in enumerate(nodes)}
    return {"pos": pos, "rows": max(rows) + 1 if rows else 0, "back": sorted([list(e) for e in back])}
