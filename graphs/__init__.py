"""Graph assembly: one module per system, each exposing a compiled ``graph``."""

from __future__ import annotations

from importlib import import_module

SYSTEMS = ("agent", "baseline")


def get_graph(system: str, settings=None):
    """The compiled graph of ``system``; for the agent with ``settings``, the one with their EXTENSIONS."""
    if system not in SYSTEMS:
        raise ValueError(f"unknown system {system!r}; choose one of {list(SYSTEMS)}")
    module = import_module(f"graphs.{system}")
    if settings is not None and hasattr(module, "graph_for"):
        return module.graph_for(settings)
    return module.graph
