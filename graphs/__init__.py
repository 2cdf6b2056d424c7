"""Graph assembly: one module per system, each exposing a compiled ``graph``.

Importing this package registers :func:`get_graph` with :mod:`agentic_rag.runner`, which answers
questions with whatever graph it is handed and never imports this package itself, and the OTLP
exporter of answered questions (agentic_rag/trace/otel.py), which that layer may not import.
"""

from __future__ import annotations

from importlib import import_module

from agentic_rag.runner import register_graphs, register_observer
from agentic_rag.trace.otel import send_live

SYSTEMS = ("agent", "baseline")


def get_graph(system: str, settings=None):
    """The compiled graph of ``system``; for the agent with ``settings``, the one with their EXTENSIONS."""
    if system not in SYSTEMS:
        raise ValueError(f"unknown system {system!r}; choose one of {list(SYSTEMS)}")
    module = import_module(f"graphs.{system}")
    if settings is not None and hasattr(module, "graph_for"):
        return module.graph_for(settings)
    return module.graph


register_graphs(get_graph)
register_observer(send_live)  # each answered question's spans to OTLP_ENDPOINT, when it is set
