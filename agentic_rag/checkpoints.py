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
import zlib
from pathlib import Path
from typing import Any

_SAVERS: dict[str, Any] = {}
_LOCK = threading.Lock()


def thread_id(state: dict[str, Any]) -> str:
    """The question id; a question without one gets a stable id from its text."""
    return state.get("question_id") or "q-" + hashlib.sha1(state["question"].encode()).hexdigest()[:12]


class ZlibSerde:
    """LangGraph's serializer with its bytes compressed: a question's pages (HTML) and the worker
    payloads that carry them shrink several times over."""

    SUFFIX = "+zlib"

    def __init__(self, inner=None) -> None:
        from langgraph.checkpoint.serde.jsonplus import JsonPlusSerializer

        self.inner = inner or JsonPlusSerializer()

    def dumps_typed(self, obj: Any) -> tuple[str, bytes]:
        kind, data = self.inner.dumps_typed(obj)
        return kind + self.SUFFIX, zlib.compress(data, 6)

    def loads_typed(self, data: tuple[str, bytes]) -> Any:
        kind, raw = data
        if kind.endswith(self.SUFFIX):
            return self.inner.loads_typed((kind[: -len(self.SUFFIX)], zlib.decompress(raw)))
        return self.inner.loads_typed(data)


def _blob_saver_class():
    from langgraph.checkpoint.base import BaseCheckpointSaver
    from langgraph.checkpoint.sqlite import SqliteSaver

    class ChannelBlobSaver(SqliteSaver):
        """SqliteSaver storing each channel value once per version instead of inside every checkpoint.

        The stock saver writes the whole state at every step, so a CRAG question's pages (megabytes
        of HTML in ``record``) were stored at every step. Here a checkpoint keeps only its channel
        versions; the values live in a ``blobs`` table keyed by (thread, namespace, channel, version),
        as LangGraph's Postgres saver does, and are put back when a checkpoint is read. (The worker
        payloads still carry the record; ``ZlibSerde`` shrinks those.)
        """

        _blobs_ready = False

        def setup(self) -> None:
            super().setup()
            if not self._blobs_ready:
                self.conn.execute(
                    "CREATE TABLE IF NOT EXISTS blobs (thread_id TEXT NOT NULL, checkpoint_ns TEXT NOT NULL, "
                    "channel TEXT NOT NULL, version TEXT NOT NULL, type TEXT, value BLOB, "
                    "PRIMARY KEY (thread_id, checkpoint_ns, channel, version))")
                self._blobs_ready = True

        def put(self, config, checkpoint, metadata, new_versions):
            conf = config["configurable"]
            key = (str(conf["thread_id"]), conf.get("checkpoint_ns", ""))
            versions = checkpoint.get("channel_versions", {})
            rows = [(*key, ch, str(versions.get(ch)), *self.serde.dumps_typed(value))
                    for ch, value in checkpoint.get("channel_values", {}).items()
                    if ch in new_versions or not self._has_blob(*key, ch, str(versions.get(ch)))]
            with self.cursor() as cur:
                cur.executemany("INSERT OR IGNORE INTO blobs VALUES (?, ?, ?, ?, ?, ?)", rows)
            return super().put(config, {**checkpoint, "channel_values": {}}, metadata, new_versions)

        def _has_blob(self, thread: str, ns: str, channel: str, version: str) -> bool:
            with self.cursor(transaction=False) as cur:
                cur.execute("SELECT 1 FROM blobs WHERE thread_id = ? AND checkpoint_ns = ? AND channel = ? AND version = ?",
                            (thread, ns, channel, version))
                return cur.fetchone() is not None

        def _fill(self, tup):
            if tup is None or tup.checkpoint.get("channel_values"):
                return tup
            conf = tup.config["configurable"]
            values = {}
            with self.cursor(transaction=False) as cur:
                for ch, version in tup.checkpoint.get("channel_versions", {}).items():
                    cur.execute("SELECT type, value FROM blobs WHERE thread_id = ? AND checkpoint_ns = ? AND channel = ? "
                                "AND version = ?", (str(conf["thread_id"]), conf.get("checkpoint_ns", ""), ch, str(version)))
                    row = cur.fetchone()
                    if row is not None:
                        values[ch] = self.serde.loads_typed(row)
            tup.checkpoint["channel_values"] = values
            return tup

        def get_tuple(self, config):
            return self._fill(super().get_tuple(config))

        def list(self, config, **kwargs):
            tuples = list(super().list(config, **kwargs))  # the parent holds the lock while it yields
            for tup in tuples:
                yield self._fill(tup)

        def delete_thread(self, thread_id: str) -> None:
            super().delete_thread(thread_id)
            with self.cursor() as cur:
                cur.execute("DELETE FROM blobs WHERE thread_id = ?", (str(thread_id),))

        # the parent's fast path reads values stored inline; the generic walk reads them through get_tuple
        get_delta_channel_history = BaseCheckpointSaver.get_delta_channel_history

    return ChannelBlobSaver


def saver(path: str | Path):
    """One saver per file for the process (its lock serialises the eval's parallel questions)."""
    key = str(Path(path).resolve())
    with _LOCK:
        if key not in _SAVERS:
            Path(key).parent.mkdir(parents=True, exist_ok=True)
            _SAVERS[key] = _blob_saver_class()(sqlite3.connect(key, check_same_thread=False), serde=ZlibSerde())
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
