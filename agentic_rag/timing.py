"""Where a question's time goes: wall, CPU and LLM time per graph node, named parts inside a node, and
what a cold process spends before its first answer.

A node's clock lives in a context variable, not an argument: the LLM call, the embedding and the index
build that a node triggers sit several calls below it, and each of the parallel Retriever-Workers runs
in its own thread with its own copy of the context, so their clocks never mix. CPU time is the node's
own thread's (``time.thread_time``): with the workers running side by side, the process's CPU time
would book one worker's work to all of them. Torch's intra-op threads are not the node's thread, so the
thread figure undercounts matrix work; LLM time is measured as wall time inside the call for that reason.
"""

from __future__ import annotations

import threading
import time
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Iterator

_CLOCK: ContextVar["NodeClock | None"] = ContextVar("agentic_rag_node_clock", default=None)


class NodeClock:
    """Time spent inside one node run: its LLM calls (their time, and each call as ``llm.calls.call_record``
    wrote it) and named, exclusive parts (``part``)."""

    def __init__(self) -> None:
        self.llm_ms = 0.0
        self.calls: list[dict] = []
        self.parts: dict[str, float] = {}
        self._stack: list[list[float]] = []  # per open part: [start, time spent in parts nested in it]

    def add_llm(self, ms: float) -> None:
        self.llm_ms += ms

    def add_part(self, name: str, ms: float) -> None:
        self.parts[name] = round(self.parts.get(name, 0.0) + ms, 3)


@contextmanager
def node_clock() -> Iterator[NodeClock]:
    clock = NodeClock()
    token = _CLOCK.set(clock)
    try:
        yield clock
    finally:
        _CLOCK.reset(token)


@contextmanager
def part(name: str) -> Iterator[None]:
    """Book the time of the block to ``name`` in the running node's clock (nothing outside a node).

    Parts are exclusive: a part opened inside another (the chunk embedding inside an index build) is
    taken out of the outer one, so a node's parts add up to at most its wall time."""
    clock = _CLOCK.get()
    if clock is None:
        yield
        return
    frame = [time.perf_counter(), 0.0]
    clock._stack.append(frame)
    try:
        yield
    finally:
        clock._stack.pop()
        spent = (time.perf_counter() - frame[0]) * 1000.0
        clock.add_part(name, spent - frame[1])
        if clock._stack:
            clock._stack[-1][1] += spent


def book_llm(ms: float, call: dict | None = None) -> None:
    """Add the wall time of one LLM call, and the call itself when given, to the running node's clock."""
    clock = _CLOCK.get()
    if clock is not None:
        clock.add_llm(ms)
        if call is not None:
            clock.calls.append(call)


# -- cold start -----------------------------------------------------------------------------------
_STARTUP: dict[str, float] = {}
_STARTUP_LOCK = threading.Lock()


def record_startup(what: str, seconds: float) -> None:
    """A one-time cost of this process (a model load, the first index): kept once, by its first value."""
    with _STARTUP_LOCK:
        _STARTUP.setdefault(what, round(seconds, 3))


@contextmanager
def startup_step(what: str) -> Iterator[None]:
    t0 = time.perf_counter()
    try:
        yield
    finally:
        record_startup(what, time.perf_counter() - t0)


def startup_report() -> dict[str, float]:
    """Seconds per one-time cost this process has paid so far, in the order they were paid."""
    with _STARTUP_LOCK:
        return dict(_STARTUP)


def format_startup(report: dict[str, float]) -> str:
    if not report:
        return ""
    parts = ", ".join(f"{name} {seconds:.1f} s" for name, seconds in report.items())
    return f"cold start: {parts} (total {sum(report.values()):.1f} s)"
