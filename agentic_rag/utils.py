"""Small helpers shared by the graph nodes."""

import functools
import time
from typing import Any, Callable

from langchain_core.runnables import RunnableConfig

Node = Callable[..., dict[str, Any]]


def _event(name: str, state: dict, update: dict, started: float, ms: float, config: RunnableConfig) -> dict[str, Any]:
    from agentic_rag.configuration import Settings
    from agentic_rag.trace.record import node_event

    limit = Settings.from_runnable_config(config).TRACE_TEXT_CHARS
    return node_event(name, state, update, started, ms, limit)


def timed(name: str) -> Callable[[Node], Node]:
    """Record a node's wall time under ``latency_ms[name]`` (summed over rounds by the state reducer)
    and one trace event under ``events`` (agentic_rag/trace/record.py), whatever the node is.

    The wrapper declares ``config: RunnableConfig`` itself (and hides ``__wrapped__``) so LangGraph
    recognises the config parameter whatever annotation style the node module uses.
    """

    name = str(name)  # a ``nodes.Node`` member is recorded as its plain name

    def wrap(fn: Node) -> Node:
        def inner(state: dict, config: RunnableConfig) -> Any:
            started, t0 = time.time(), time.perf_counter()
            update = fn(state, config)
            ms = (time.perf_counter() - t0) * 1000.0
            written = update if isinstance(update, dict) else getattr(update, "update", None)
            if isinstance(written, dict):
                extra = {"latency_ms": {name: round(ms, 3)}, "events": [_event(name, state, written, started, ms, config)]}
                if isinstance(update, dict):
                    update = {**update, **extra}
                else:
                    written.update(extra)  # a Command
            return update

        functools.update_wrapper(inner, fn, updated=())
        del inner.__wrapped__
        inner.__annotations__ = {"state": dict, "config": RunnableConfig, "return": Any}
        return inner

    return wrap
