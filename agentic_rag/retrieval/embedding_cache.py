"""Chunk embeddings kept on disk, keyed by embedding model and chunk text.

A page's chunks are a function of its text and the chunking settings, so keying each chunk vector by
(model, text) embeds a page once however many questions retrieve it, in any run, and survives a change
of the per-question index key (another ``MAX_PAGE_CHARS``, another extractor version) for every chunk
that comes out the same. One SQLite file in WAL mode: each record's new vectors are one transaction,
so a killed writer leaves the rows of earlier records and none of its own, readers never wait for a
writer, and several processes (eval workers, a kit run) can share the file. A full or read-only disk under
it is raised as the ``OSError`` it is, naming the file (``errors.sqlite_storage``).
"""

from __future__ import annotations

import hashlib
import sqlite3
import threading
from functools import lru_cache
from pathlib import Path

import numpy as np

from agentic_rag.errors import sqlite_storage

_SQL_VARS = 500  # keys per SELECT, under SQLite's bound-parameter limit
_BUSY_TIMEOUT_S = 60.0
CACHE_FILE = "embeddings.sqlite"


class EmbeddingCache:
    def __init__(self, path: str | Path, model: str):
        self.path = Path(path)
        self.model = model
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._lock = threading.Lock()  # one connection per process, shared by the parallel workers
        with sqlite_storage(self.path):
            self._db = sqlite3.connect(str(self.path), timeout=_BUSY_TIMEOUT_S, check_same_thread=False,
                                       isolation_level=None)
            self._db.execute("PRAGMA journal_mode=WAL")
            self._db.execute("PRAGMA synchronous=NORMAL")
            self._db.execute("CREATE TABLE IF NOT EXISTS vectors (key BLOB PRIMARY KEY, vec BLOB NOT NULL) WITHOUT ROWID")

    def _key(self, text: str) -> bytes:
        return hashlib.sha256(f"{self.model}\0{text}".encode("utf-8", "surrogatepass")).digest()

    def get(self, texts: list[str], dim: int) -> list[np.ndarray | None]:
        """The stored vector of each text, None where there is none (or it has the wrong size)."""
        keys = [self._key(t) for t in texts]
        found: dict[bytes, bytes] = {}
        unique = list(dict.fromkeys(keys))
        with self._lock, sqlite_storage(self.path):
            for i in range(0, len(unique), _SQL_VARS):
                batch = unique[i : i + _SQL_VARS]
                rows = self._db.execute(
                    f"SELECT key, vec FROM vectors WHERE key IN ({','.join('?' * len(batch))})", batch
                ).fetchall()
                found.update(rows)
        out: list[np.ndarray | None] = []
        for key in keys:
            blob = found.get(key)
            out.append(np.frombuffer(blob, dtype=np.float32).copy() if blob and len(blob) == 4 * dim else None)
        return out

    def put(self, texts: list[str], vectors: np.ndarray) -> None:
        rows = [(self._key(t), np.asarray(v, dtype=np.float32).tobytes()) for t, v in zip(texts, vectors)]
        if not rows:
            return
        with self._lock, sqlite_storage(self.path):
            self._db.execute("BEGIN IMMEDIATE")
            try:
                self._db.executemany("INSERT OR IGNORE INTO vectors (key, vec) VALUES (?, ?)", rows)
                self._db.execute("COMMIT")
            except BaseException:
                if self._db.in_transaction:  # a full disk may have rolled it back already: the first error is the one said
                    self._db.execute("ROLLBACK")
                raise


@lru_cache(maxsize=8)
def open_cache(path: str, model: str) -> EmbeddingCache:
    return EmbeddingCache(path, model)


def embed_with_cache(embedder, texts: list[str], cache: EmbeddingCache | None, show_progress: bool = False) -> np.ndarray:
    """Vectors of ``texts``: stored ones read back, the rest embedded in one call and stored.

    With nothing stored the call is exactly the uncached one (same texts, same order, same batches), so
    a fresh index is bit for bit what it was without the cache."""
    if cache is None or not texts:
        return embedder.embed(texts, show_progress=show_progress)
    stored = cache.get(texts, embedder.dim)
    missing = [i for i, v in enumerate(stored) if v is None]
    if len(missing) == len(texts):
        vectors = embedder.embed(texts, show_progress=show_progress)
        cache.put(texts, vectors)
        return vectors
    if missing:
        todo = list(dict.fromkeys(texts[i] for i in missing))
        fresh = dict(zip(todo, embedder.embed(todo, show_progress=show_progress)))
        cache.put(todo, np.stack([fresh[t] for t in todo]))
        for i in missing:
            stored[i] = fresh[texts[i]]
    return np.stack(stored).astype(np.float32, copy=False)


def cache_for(settings, embedder) -> EmbeddingCache | None:
    """The settings' chunk-vector cache for this embedder, or None when ``EMBEDDING_CACHE`` is off."""
    if not settings.retrieval.EMBEDDING_CACHE:
        return None
    return open_cache(str(cache_folder(settings) / CACHE_FILE), embedder.identity)


def cache_folder(settings) -> Path:
    """The folder of the chunk-vector cache: ``EMBEDDING_CACHE_DIR``, by default the index cache's."""
    return Path(settings.paths.EMBEDDING_CACHE_DIR or settings.cache_dir).expanduser().resolve()
