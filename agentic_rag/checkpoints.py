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
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from agentic_rag.errors import UserError, sqlite_storage

_SAVERS: dict[str, Any] = {}
_LOCK = threading.Lock()

# What a run's checkpoints hold besides plain values (dicts, lists, strings, numbers): the worker payloads
# LangGraph sends. A run folder is shared (`trace RUN` reads someone else's), and LangGraph's msgpack
# builds any (module, name) it finds by calling it: anything outside this list is refused, never built.
CHECKPOINT_TYPES = frozenset({("langgraph.types", "Send")})
CHECKPOINT_KINDS = frozenset({"msgpack", "null"})  # what the serializer writes for those values (never json, pickle)


class CheckpointRefused(UserError, ValueError):
    """A checkpoint file holds something a run does not write: a type to build, another encoding, damage."""


MAX_CHECKPOINT_BYTES = 256_000_000  # the default of the setting MAX_CHECKPOINT_BYTES
TABLES = ("checkpoints", "writes", "blobs")  # all a checkpoint file holds: no view, no trigger
READ_SECONDS = 120.0  # the most one read of a checkpoint file may take before it is stopped (a shared file)


def thread_id(state: dict[str, Any]) -> str:
    """The question id; a question without one gets a stable id from its text."""
    return state.get("question_id") or "q-" + hashlib.sha1(state["question"].encode()).hexdigest()[:12]


def _foreign_type(data: bytes) -> str | None:
    """The first type a msgpack value would build that is not in ``CHECKPOINT_TYPES`` (``module.name``), or
    None; read without building anything, nested values included."""
    import ormsgpack
    from langgraph.checkpoint.serde import jsonplus as lg

    builds = {lg.EXT_CONSTRUCTOR_SINGLE_ARG, lg.EXT_CONSTRUCTOR_POS_ARGS, lg.EXT_CONSTRUCTOR_KW_ARGS,
              lg.EXT_METHOD_SINGLE_ARG, lg.EXT_PYDANTIC_V1, lg.EXT_PYDANTIC_V2}
    found: list[str] = []

    def check(code: int, payload: bytes) -> None:
        inner = ormsgpack.unpackb(payload, ext_hook=check, option=ormsgpack.OPT_NON_STR_KEYS)
        if code == lg.EXT_DELTA_SNAPSHOT:
            return None
        key = tuple(map(str, inner[:2])) if code in builds and isinstance(inner, (list, tuple)) else (f"extension {code}",)
        if key not in CHECKPOINT_TYPES:
            found.append(".".join(key))
        return None

    ormsgpack.unpackb(data, ext_hook=check, option=ormsgpack.OPT_NON_STR_KEYS)
    return found[0] if found else None


class ZlibSerde:
    """LangGraph's serializer with its bytes compressed: a question's pages (HTML) and the worker
    payloads that carry them shrink several times over. It reads only what a run writes: a value that
    would build a type outside ``CHECKPOINT_TYPES`` (or comes in another encoding) is refused, naming
    ``source``, before anything is built; LangGraph's own reading is strict (its allow-list) too."""

    SUFFIX = "+zlib"

    def __init__(self, inner=None, source: str | Path = "checkpoint file", max_bytes: int = MAX_CHECKPOINT_BYTES) -> None:
        from langgraph.checkpoint.serde.jsonplus import JsonPlusSerializer

        self.inner = inner or JsonPlusSerializer(allowed_msgpack_modules=sorted(CHECKPOINT_TYPES))
        self.source = source
        self.max_bytes = max_bytes

    def dumps_typed(self, obj: Any) -> tuple[str, bytes]:
        kind, data = self.inner.dumps_typed(obj)
        return kind + self.SUFFIX, zlib.compress(data, 6)

    def loads_typed(self, data: tuple[str, bytes]) -> Any:
        kind, raw = data
        try:
            if kind.endswith(self.SUFFIX):
                kind, raw = kind[: -len(self.SUFFIX)], self._inflated(raw)
            foreign = _foreign_type(raw) if kind == "msgpack" else None
        except CheckpointRefused:
            raise
        except (ValueError, TypeError, zlib.error) as exc:
            raise CheckpointRefused(f"{self.source} is damaged and cannot be read ({type(exc).__name__})") from None
        if kind not in CHECKPOINT_KINDS:
            foreign = f"a {kind!r} value"
        if foreign:
            raise CheckpointRefused(f"{self.source} was not written by a run: it holds {foreign}, which would be "
                                    "built when read; refused, nothing was run")
        return self.inner.loads_typed((kind, raw))

    def _inflated(self, raw: bytes) -> bytes:
        """``raw`` decompressed, at most ``max_bytes`` of it: a few megabytes of zeros compressed can stand
        for gigabytes."""
        inflate = zlib.decompressobj()
        out = inflate.decompress(raw, self.max_bytes)
        if inflate.unconsumed_tail:
            raise CheckpointRefused(f"{self.source} holds a value that decompresses to more than {self.max_bytes:,} bytes "
                                    "(MAX_CHECKPOINT_BYTES); refused, not read")
        return out


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
        path = "checkpoint file"  # the file's path, set by ``saver``: a full disk under it names it

        @contextmanager
        def cursor(self, transaction: bool = True):
            """The parent's cursor, every write of a step going through it, with a full or read-only disk
            raised as the OSError it is (the run's one storage path: one line and the resume command)."""
            with sqlite_storage(self.path), super().cursor(transaction) as cur:
                yield cur

        def setup(self) -> None:
            with sqlite_storage(self.path):
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


def saver(path: str | Path, max_bytes: int = MAX_CHECKPOINT_BYTES):
    """One saver per file for the process (its lock serialises the eval's parallel questions). A file that
    exists must hold a checkpoint file's tables and nothing else, and no read of it may run for ever."""
    if Path(path).is_symlink():  # sqlite would write through it
        raise CheckpointRefused(f"{path} is a link (to {Path(path).readlink()}); a checkpoint file is never written "
                                "through a link: remove it, or set another CHECKPOINT_PATH")
    key = str(Path(path).resolve())
    with _LOCK:
        if key not in _SAVERS:
            Path(key).parent.mkdir(parents=True, exist_ok=True)
            made = _blob_saver_class()(_connect(key), serde=ZlibSerde(source=key, max_bytes=max_bytes))
            made.path = key
            made.setup()  # kept once set up: a file a full disk refused is tried afresh by the next saver
            _SAVERS[key] = made
        _SAVERS[key].serde.max_bytes = max_bytes
        return _SAVERS[key]


def _connect(path: str) -> sqlite3.Connection:
    """A connection to a checkpoint file whose schema is a run's: a view or a trigger (a query that never
    ends, code on every write) is refused before any query; each statement is stopped after READ_SECONDS."""
    import time

    conn = sqlite3.connect(path, check_same_thread=False)
    try:
        found = conn.execute("SELECT type, name FROM sqlite_master WHERE type IN ('table', 'view', 'trigger')").fetchall()
    except sqlite3.DatabaseError as exc:
        conn.close()
        raise CheckpointRefused(f"{path} is not a checkpoint file ({exc})") from None
    foreign = [f"{kind} {name!r}" for kind, name in found if kind != "table" or name not in TABLES]
    if foreign:
        conn.close()
        raise CheckpointRefused(f"{path} was not written by a run: it holds {', '.join(foreign[:3])}; refused, "
                                "nothing was read")
    started: dict[str, float] = {}

    def too_long() -> bool:  # called every few thousand steps of a statement; True stops it
        return time.monotonic() - started.setdefault("t", time.monotonic()) > READ_SECONDS

    def timed(_statement: str) -> None:
        started["t"] = time.monotonic()

    conn.set_trace_callback(timed)
    conn.set_progress_handler(too_long, 10_000)
    return conn


def checkpointed(graph, path: str | Path):
    return graph.copy(update={"checkpointer": saver(path)})


def start_thread(graph, path: str | Path, config: dict[str, Any], state: dict[str, Any]) -> tuple[Any, dict[str, Any]]:
    """The graph with the file's checkpointer and a config on the question's fresh thread."""
    tid = thread_id(state)
    saver(path).delete_thread(tid)
    return checkpointed(graph, path), {**config, "configurable": {**config["configurable"], "thread_id": tid}}


def history(graph, path: str | Path, tid: str, max_bytes: int = MAX_CHECKPOINT_BYTES) -> list[Any]:
    """The thread's state snapshots, first step first (LangGraph lists newest first)."""
    try:
        snaps = list(graph.copy(update={"checkpointer": saver(path, max_bytes)})
                     .get_state_history({"configurable": {"thread_id": tid}}))
    except (sqlite3.OperationalError, OSError) as exc:  # stopped by the progress handler, a damaged file, a disk
        raise CheckpointRefused(f"{path} could not be read: {exc}") from None
    return sorted(snaps, key=lambda s: (s.metadata or {}).get("step", -1))


def threads(path: str | Path) -> list[str]:
    conn = _connect(str(path))
    try:
        return [r[0] for r in conn.execute("SELECT DISTINCT thread_id FROM checkpoints ORDER BY thread_id")]
    finally:
        conn.close()


def snapshot_at(graph, path: str | Path, tid: str, step: int, max_bytes: int = MAX_CHECKPOINT_BYTES):
    snaps = history(graph, path, tid, max_bytes)
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
