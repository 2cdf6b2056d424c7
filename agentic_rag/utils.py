"""Small helpers shared by the graph nodes."""

import functools
import time
from typing import Any, Callable

from langchain_core.runnables import RunnableConfig

Node = Callable[..., dict[str, Any]]


def timed(name: str) -> Callable[[Node], Node]:
    """Record a node's wall time under ``latency_ms[name]`` (summed over rounds by the state reducer).

    The wrapper declares ``config: RunnableConfig`` itself (and hides ``__wrapped__``) so LangGraph
    recognises the config parameter whatever annotation style the node module uses.
    """

    def wrap(fn: Node) -> Node:
        def inner(state: dict, config: RunnableConfig) -> Any:
            t0 = time.perf_counter()
            update = fn(state, config)
            ms = (time.perf_counter() - t0) * 1000.0
            if isinstance(update, dict):
                update = {**update, "latency_ms": {name: round(ms, 3)}}
            elif hasattr(update, "update") and isinstance(getattr(update, "update"), dict):
                update.update["latency_ms"] = {name: round(ms, 3)}  # a Command
            return update

        functools.update_wrapper(inner, fn, updated=())
        del inner.__wrapped__
        inner.__annotations__ = {"state": dict, "config": RunnableConfig, "return": Any}
        return inner

    return wrap
