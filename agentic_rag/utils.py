"""Small helpers shared by the graph nodes."""

import functools
import time
from typing import Any, Callable

from langchain_core.runnables import RunnableConfig

from agentic_rag.configuration import Settings
from agentic_rag.events import node_event
from agentic_rag.timing import node_clock

Node = Callable[..., dict[str, Any]]


def _event(name: str, state: dict, update: dict, started: float, ms: float, config: RunnableConfig) -> dict[str, Any]:
    limit = Settings.from_runnable_config(config).eval.TRACE_TEXT_CHARS
    return node_event(name, state, update, started, ms, limit)


def timed(name: str) -> Callable[[Node], Node]:
    """Record a node's wall time under ``latency_ms[name]``, its own thread's CPU time under
    ``cpu_ms[name]`` and the time its LLM calls took under ``llm_ms[name]`` (each summed over rounds by
    the state reducer), and one trace event under ``events`` (agentic_rag/events.py) that also
    holds the node's named parts (agentic_rag/timing.py), whatever the node is.

    The wrapper declares ``config: RunnableConfig`` itself (and hides ``__wrapped__``) so LangGraph
    recognises the config parameter whatever annotation style the node module uses.
    """

    name = str(name)  # a ``nodes.Node`` member is recorded as its plain name

    def wrap(fn: Node) -> Node:
        def inner(state: dict, config: RunnableConfig) -> Any:
            started, t0, c0 = time.time(), time.perf_counter(), time.thread_time()
            with node_clock() as clock:
                update = fn(state, config)
            ms = (time.perf_counter() - t0) * 1000.0
            cpu_ms, llm_ms = round((time.thread_time() - c0) * 1000.0, 3), round(clock.llm_ms, 3)
            written = update if isinstance(update, dict) else getattr(update, "update", None)
            if isinstance(written, dict):
                event = {**_event(name, state, written, started, ms, config), "cpu_ms": cpu_ms, "llm_ms": llm_ms}
                if clock.parts:
                    event["parts_ms"] = clock.parts
                if clock.calls:
                    event["llm"] = clock.calls
                extra = {"latency_ms": {name: round(ms, 3)}, "cpu_ms": {name: cpu_ms}, "llm_ms": {name: llm_ms},
                         "events": [event]}
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
