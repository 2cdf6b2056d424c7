"""Graph assembly: one module per system, each exposing a compiled ``graph``."""

from __future__ import annotations

from importlib import import_module

SYSTEMS = ("agent", "baseline")


def get_graph(system: str):
    if system not in SYSTEMS:
        raise ValueError(f"unknown system {system!r}; choose one of {list(SYSTEMS)}")
    return import_module(f"graphs.{system}").graph
