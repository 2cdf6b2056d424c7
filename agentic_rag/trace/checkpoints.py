"""LangGraph checkpoints of a run: every step's state in one SQLite file, one thread per question.

With ``CHECKPOINT_PATH`` set, :func:`agentic_rag.runner.answer` compiles the graph with a
``SqliteSaver`` on that file; the thread id is the question id. A question answered again in the
same file starts its thread afresh, so its history is one run's. ``get_state_history`` then lists
the steps and any step can be shown or replayed from (the graph re-runs from that state on).
"""

from __future__ import annotations

import hashlib
import sqlite3
import threading
from pathlib import Path
from typing import Any

_SAVERS: dict[str, Any] = {}
_LOCK = threading.Lock()


def thread_id(state: dict[str, Any]) -> str:
    """The question id; a question without one gets a stable id from its text."""
    return state.get("question_id") or "q-" + hashlib.sha1(state["question"].encode()).hexdigest()[:12]


def saver(path: str | Path):
    """One saver per file for the process (its lock serialises the eval's parallel questions)."""
    from langgraph.checkpoint.sqlite import SqliteSaver

    key = str(Path(path).resolve())
    with _LOCK:
        if key not in _SAVERS:
            Path(key).parent.mkdir(parents=True, exist_ok=True)
            _SAVERS[key] = SqliteSaver(sqlite3.connect(key, check_same_thread=False))
            _SAVERS[key].setup()
        return _SAVERS[key]


def checkpointed(graph, path: str | Path):
    return graph.copy(update={"checkpointer": saver(path)})


def start_thread(graph, path: str | Path, config: dict[str, Any], state: dict[str, Any]) -> tuple[Any, dict[str, Any]]:
    """The graph with the file's checkpointer and a config on the question's fresh thread."""
    tid = thread_id(state)
    saver(path).delete_thread(tid)
    return checkpointed(graph, path), {**config, "configurable": {**config["configurable"], "thread_id": tid}}


def history(graph, path: str | Path, tid: str) -> list[Any]:
    """The thread's state snapshots, first step first (LangGraph lists newest first)."""
    snaps = list(checkpointed(graph, path).get_state_history({"configurable": {"thread_id": tid}}))
    return sorted(snaps, key=lambda s: (s.metadata or {}).get("step", -1))


def threads(path: str | Path) -> list[str]:
    with sqlite3.connect(str(path)) as conn:
        return [r[0] for r in conn.execute("SELECT DISTINCT thread_id FROM checkpoints ORDER BY thread_id")]


def snapshot_at(graph, path: str | Path, tid: str, step: int):
    snaps = history(graph, path, tid)
    for snap in snaps:
        if (snap.metadata or {}).get("step") == step:
            return snap
    steps = [(s.metadata or {}).get("step") for s in snaps]
    raise KeyError(f"thread {tid!r} has no step {step}; its steps are {steps[0]}..{steps[-1]}" if steps
                   else f"no checkpoints for {tid!r} in {path}")


def replay(graph, path: str | Path, snap, config: dict[str, Any]) -> dict[str, Any]:
    """Run the graph on from a stored step (LangGraph forks the thread there) and return its final state."""
    cfg = {**config, "configurable": {**config.get("configurable", {}), **snap.config["configurable"]}}
    return checkpointed(graph, path).invoke(None, config=cfg)
