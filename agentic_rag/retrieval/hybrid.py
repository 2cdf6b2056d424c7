"""Hybrid retrieval: FAISS (cosine) and BM25 rankings fused by reciprocal rank, then MMR.

Why fuse ranks rather than scores: cosine and BM25 live on unrelated scales that change per query, and
RRF needs no calibration. Every passage still carries its raw vector and BM25 scores, because the
gates downstream (confidence gating, BAUG) read them. A per-passage ``bonus`` hook lets callers add a
score after fusion (the anchor boost) without touching this module.
"""

from __future__ import annotations

import functools
import glob
import json
import os
import re
import shutil
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterable

import bm25s
import faiss
import numpy as np

from agentic_rag.errors import FolderMark, UserError, replaceable_folder
from agentic_rag.retrieval.chunks import Chunk, Page, chunk_page
from agentic_rag.retrieval.embedding_cache import EmbeddingCache, embed_with_cache
from agentic_rag.retrieval.embeddings import Embedder
from agentic_rag.retrieval.vectorstore import build_store, nearest_rows
from agentic_rag.text import fold, tokenize

INDEX_FORMAT = 1
# what tells an index folder from any folder that holds a manifest.json (a web app's): the keys save writes
INDEX_FOLDER = FolderMark("an index folder", "manifest.json", frozenset({"format", "embedding_model", "files"}))

BonusFn = Callable[[Chunk], float]
_QUALIFIER = re.compile(r"\s*\([^)]*\)\s*$")  # "Alien (film)" is named "Alien"
MIN_TITLE_CHARS = 4  # a shorter title ("Jaws" passes, "It" not) is named by chance too often (characters)


class BrokenIndexError(UserError, ValueError):
    """An index folder exists but cannot be used: a killed writer, a truncated file, a race."""


@dataclass
class Passage:
    chunk: Chunk
    vector_score: float
    bm25_score: float
    fused_score: float
    bonus: float = 0.0
    rank: int = 0
    sources: list[str] = field(default_factory=list)

    @property
    def chunk_id(self) -> str:
        return self.chunk.chunk_id

    @property
    def text(self) -> str:
        return self.chunk.text

    def to_dict(self) -> dict[str, Any]:
        return {
            "rank": self.rank,
            "chunk_id": self.chunk.chunk_id,
            "page_name": self.chunk.page_name,
            "page_url": self.chunk.page_url,
            "page_last_modified": self.chunk.page_last_modified,
            "start": self.chunk.start,
            "end": self.chunk.end,
            "text": self.chunk.text,
            "vector_score": round(self.vector_score, 6),
            "bm25_score": round(self.bm25_score, 6),
            "fused_score": round(self.fused_score, 6),
            "bonus": round(self.bonus, 6),
            "page_untrusted": self.chunk.page_untrusted,
        }


class HybridIndex:
    """Chunks of a set of pages with their embeddings, a FAISS inner-product index and a BM25 index."""

    def __init__(
        self,
        pages: list[Page],
        chunks: list[Chunk],
        embeddings: np.ndarray,
        embedder: Embedder,
        vector_index: faiss.Index | None = None,
        bm25: bm25s.BM25 | None = None,
        vector_store: str = "faiss",
    ):
        self.pages = pages
        self.chunks = chunks
        self.embeddings = embeddings.astype(np.float32, copy=False)
        self.embedder = embedder
        self._pages_by_id = {p.page_id: p for p in pages}
        self._page_by_url = {p.page_url: p.page_id for p in pages if p.page_url}
        self._row = {c.chunk_id: i for i, c in enumerate(chunks)}
        if vector_index is None:
            vector_index = faiss.IndexFlatIP(embedder.dim)
            if len(chunks):
                vector_index.add(self.embeddings)
        self.faiss = vector_index  # what is saved, whatever store searches (see retrieval/vectorstore.py)
        self.store = build_store(vector_store, [c.text for c in chunks], self.embeddings, embedder, vector_index)
        if bm25 is None:
            bm25 = bm25s.BM25()
            if chunks:
                bm25.index([tokenize(c.text) or ["_empty_"] for c in chunks], show_progress=False)
        self.bm25 = bm25

    # -- construction ---------------------------------------------------------------------------
    @classmethod
    def build(
        cls,
        pages: list[Page],
        embedder: Embedder,
        chunk_size: int,
        overlap: int,
        min_chars: int,
        show_progress: bool = False,
        vector_cache: EmbeddingCache | None = None,
        vector_store: str = "faiss",
    ) -> "HybridIndex":
        """Chunk every page and embed all chunks in one call (vectors already in ``vector_cache`` are
        read back instead)."""
        chunks: list[Chunk] = []
        for page in pages:
            chunks.extend(chunk_page(page, chunk_size, overlap, min_chars))
        embeddings = embed_with_cache(embedder, [c.text for c in chunks], vector_cache, show_progress=show_progress)
        return cls(pages, chunks, embeddings, embedder, vector_store=vector_store)

    def page(self, page_id: str) -> Page | None:
        return self._pages_by_id.get(page_id)

    def vector(self, chunk_id: str) -> np.ndarray:
        return self.embeddings[self._row[chunk_id]]

    def chunk(self, chunk_id: str) -> Chunk | None:
        row = self._row.get(chunk_id)
        return None if row is None else self.chunks[row]

    def neighbours(self, chunk_id: str) -> list[Chunk]:
        """The chunks just before and after in the same page: the 'section' hop."""
        page_id, _, pos = chunk_id.rpartition(":")
        out = []
        for step in (-1, 1):
            near = self.chunk(f"{page_id}:{int(pos) + step}")
            if near is not None:
                out.append(near)
        return out

    def linked_chunks(self, page_id: str, per_page: int = 2) -> list[Chunk]:
        """First chunks of pages in this index that the given page links to: the hyperlink hop."""
        page = self.page(page_id)
        if page is None or not page.links:
            return []
        out = []
        for url in page.links:
            target = self._page_by_url.get(url)
            if target and target != page_id:
                out.extend(c for c in (self.chunk(f"{target}:{i}") for i in range(per_page)) if c is not None)
        return out

    def named_pages(self, text: str, exclude: str = "") -> list[str]:
        """Ids of the pages of this index whose title ``text`` names as whole words (a title's qualifier in
        brackets aside), other than ``exclude``: the links a plain-text page does not carry. A name that
        several of those pages carry names none of them: "Computational complexity theory (paragraph 4)"
        and "(paragraph 13)" are one article's paragraphs, "Double Jeopardy (1999 film)" and "(1955 film)"
        two films."""
        folded = fold(text)
        found: dict[str, list[str]] = {}
        for page_id, title, whole_words in self._titles:
            if page_id != exclude and title in folded and whole_words.search(folded):
                found.setdefault(title, []).append(page_id)
        return [pages[0] for pages in found.values() if len(pages) == 1]

    @functools.cached_property
    def _titles(self) -> list[tuple[str, str, re.Pattern[str]]]:
        """(page id, title as a text names it, its whole-word pattern): folded and compiled once per index,
        not for every passage a worker reads (a corpus index has more titles than ``re`` caches)."""
        titles = []
        for page in self.pages:
            title = fold(_QUALIFIER.sub("", page.page_name or ""))
            if len(title) >= MIN_TITLE_CHARS:
                titles.append((page.page_id, title, re.compile(rf"(?<!\w){re.escape(title)}(?!\w)")))
        return titles

    def score_chunks(
        self, chunks: list[tuple[Chunk, float]], query: str, query_vector: np.ndarray
    ) -> list[Passage]:
        """Passages for chunks reached by a hop rather than by search (each with its given fused score),
        with their raw scores; the query's BM25 scores are computed once for all of them."""
        if not chunks:
            return []
        bm25 = self._bm25_scores(query)
        return [
            Passage(chunk=c, vector_score=float(self.vector(c.chunk_id) @ query_vector),
                    bm25_score=float(bm25[self._row[c.chunk_id]]), fused_score=fused)
            for c, fused in chunks
        ]

    def __len__(self) -> int:
        return len(self.chunks)

    # -- search ---------------------------------------------------------------------------------
    def search(
        self,
        query: str,
        k: int = 8,
        pool_k: int = 24,
        mmr_lambda: float = 0.45,
        rrf_k: int = 60,
        vector_weight: float = 1.0,
        bm25_weight: float = 1.0,
        bonus: BonusFn | None = None,
        query_vector: np.ndarray | None = None,
    ) -> list[Passage]:
        n = len(self.chunks)
        if n == 0 or not query.strip():
            return []
        pool_k = min(max(pool_k, k), n)
        qv = query_vector if query_vector is not None else self.embedder.embed_each([query])[0]
        vec_top = nearest_rows(self.store, qv.astype(np.float32, copy=False), pool_k)
        bm25_scores = self._bm25_scores(query)
        bm25_top = [i for i in _top(bm25_scores, pool_k) if bm25_scores[i] > 0]
        # RRF, scaled so 1.0 means "ranked first by every weighted retriever": thresholds and
        # bonuses on the fused score then mean the same thing whatever RRF_K and the weights are.
        top_possible = (vector_weight + bm25_weight) / (rrf_k + 1) or 1.0
        fused: dict[int, float] = {}
        for weight, ranking in ((vector_weight, vec_top), (bm25_weight, bm25_top)):
            for rank, idx in enumerate(ranking):
                fused[idx] = fused.get(idx, 0.0) + weight / (rrf_k + rank + 1) / top_possible

        candidates = []
        for idx, score in fused.items():
            extra = float(bonus(self.chunks[idx])) if bonus else 0.0
            candidates.append(
                Passage(
                    chunk=self.chunks[idx],
                    vector_score=float(self.embeddings[idx] @ qv),
                    bm25_score=float(bm25_scores[idx]),
                    fused_score=score + extra,
                    bonus=extra,
                )
            )
        candidates.sort(key=lambda p: (-p.fused_score, p.chunk.chunk_id))
        chosen = self._mmr(candidates, k, mmr_lambda)
        for rank, passage in enumerate(chosen, start=1):
            passage.rank = rank
        return chosen

    def _bm25_scores(self, query: str) -> np.ndarray:
        if not self.chunks:  # an empty BM25 was never indexed and has no vocabulary
            return np.zeros(0, dtype=np.float32)
        tokens = [t for t in tokenize(query) if t in self.bm25.vocab_dict]
        if not tokens:
            return np.zeros(len(self.chunks), dtype=np.float32)
        return np.asarray(self.bm25.get_scores(tokens), dtype=np.float32)

    def _mmr(self, candidates: list[Passage], k: int, lam: float) -> list[Passage]:
        """Greedy maximal marginal relevance over the fused pool (relevance scaled to [0, 1])."""
        if len(candidates) <= 1 or lam >= 1.0:
            return candidates[:k]
        top = candidates[0].fused_score or 1.0
        rel = np.array([c.fused_score / top for c in candidates], dtype=np.float32)
        vecs = self.embeddings[[self._row[c.chunk.chunk_id] for c in candidates]]
        sims = vecs @ vecs.T
        chosen: list[int] = []
        remaining = list(range(len(candidates)))
        while remaining and len(chosen) < k:
            if chosen:
                redundancy = sims[np.ix_(remaining, chosen)].max(axis=1)
            else:
                redundancy = np.zeros(len(remaining), dtype=np.float32)
            scores = lam * rel[remaining] - (1.0 - lam) * redundancy
            best = remaining[int(np.argmax(scores))]
            chosen.append(best)
            remaining.remove(best)
        return [candidates[i] for i in chosen]

    # -- persistence ----------------------------------------------------------------------------
    def save(self, out_dir: str | Path, manifest: dict[str, Any] | None = None) -> Path:
        """Write the index to a fresh temporary folder beside ``out_dir`` and rename it into place.

        Readers therefore see the old index, no index, or the new one, never a half-written folder; a
        writer killed mid-way leaves only a hidden temporary folder (swept by the next save once its
        process is gone). The manifest, written last, lists every file's size so a file truncated
        later is caught at load instead of crashing inside FAISS or bm25s. A folder at ``out_dir`` that is not an
        index (``INDEX_FOLDER``) is refused, never replaced."""
        out = replaceable_folder(Path(out_dir), INDEX_FOLDER)
        out.parent.mkdir(parents=True, exist_ok=True)
        _sweep_stale(out)
        tmp = Path(tempfile.mkdtemp(prefix=f".{out.name}.{os.getpid()}.", suffix=".tmp", dir=out.parent))
        try:
            _write_jsonl(tmp / "pages.jsonl", (p.to_dict() for p in self.pages))
            _write_jsonl(tmp / "chunks.jsonl", (c.to_dict() for c in self.chunks))
            np.save(tmp / "embeddings.npy", self.embeddings)
            # FAISS's own writer reports a full disk as a RuntimeError; its bytes written here, as an OSError
            (tmp / "faiss.index").write_bytes(faiss.serialize_index(self.faiss))
            if self.chunks:  # an empty index has no BM25 to save (bm25s cannot save an unindexed model)
                self.bm25.save(str(tmp / "bm25"), show_progress=False)
            meta = {
                "format": INDEX_FORMAT,
                "embedding_model": self.embedder.identity,
                "pages": len(self.pages),
                "chunks": len(self.chunks),
                **(manifest or {}),
                "files": {str(f.relative_to(tmp)): f.stat().st_size for f in sorted(tmp.rglob("*")) if f.is_file()},
            }
            (tmp / "manifest.json").write_text(json.dumps(meta, indent=2))
            _publish(tmp, out)
        finally:
            shutil.rmtree(tmp, ignore_errors=True)  # gone already unless publishing failed
        return out

    @classmethod
    def load(cls, index_dir: str | Path, embedder: Embedder, vector_store: str = "faiss") -> "HybridIndex":
        d = Path(index_dir)
        manifest_path = d / "manifest.json"
        if not manifest_path.is_file():
            raise FileNotFoundError(f"{d} is not an index folder (no manifest.json); build one with `agentic-rag ingest`")
        try:
            manifest = json.loads(manifest_path.read_text(encoding="utf-8"))
            if not isinstance(manifest, dict):
                raise ValueError("manifest.json is not a JSON object")
        except (OSError, ValueError) as exc:
            raise BrokenIndexError(f"index {d} has an unreadable manifest ({exc}): rebuild it") from None
        if manifest.get("format") != INDEX_FORMAT:
            raise ValueError(f"index {d} has format {manifest.get('format')}, expected {INDEX_FORMAT}: rebuild it")
        if manifest.get("embedding_model") != embedder.identity:
            raise ValueError(
                f"index {d} was built with embeddings {manifest.get('embedding_model')!r}, "
                f"not {embedder.identity!r}: rebuild it or set EMBEDDING_MODEL"
            )
        try:
            for name, size in (manifest.get("files") or {}).items():
                found = (d / name).stat().st_size
                if found != size:
                    raise ValueError(f"{name} has {found} bytes, the manifest says {size}")
            pages = [Page(**row) for row in _read_jsonl(d / "pages.jsonl")]
            chunks = [Chunk(**row) for row in _read_jsonl(d / "chunks.jsonl")]
            embeddings = np.load(d / "embeddings.npy")
            vector_index = faiss.read_index(str(d / "faiss.index"))
            bm25 = bm25s.BM25.load(str(d / "bm25"), show_progress=False) if chunks else None
            if len(embeddings) != len(chunks) or vector_index.ntotal != len(chunks):
                raise ValueError(f"{len(chunks)} chunks but {len(embeddings)} embeddings and {vector_index.ntotal} vectors")
        except (OSError, ValueError, TypeError, KeyError, RuntimeError, EOFError) as exc:
            # RuntimeError is what FAISS raises on a cut or vanished file
            raise BrokenIndexError(f"index {d} is damaged or incomplete ({exc}): rebuild it") from None
        return cls(pages, chunks, embeddings, embedder, vector_index=vector_index, bm25=bm25, vector_store=vector_store)


def _publish(tmp: Path, out: Path) -> None:
    """Move a finished index folder to ``out``, replacing what is there."""
    old = None
    if out.exists() or out.is_symlink():
        old = Path(tempfile.mkdtemp(prefix=f".{out.name}.{os.getpid()}.", suffix=".old", dir=out.parent))
        try:
            os.replace(out, old / out.name)
        except FileNotFoundError:
            pass  # a concurrent writer replaced it first
    try:
        os.rename(tmp, out)
    except OSError:
        if not (out / "manifest.json").is_file():
            raise
        # a concurrent writer published the same index a moment ago; this copy is dropped
    finally:
        if old is not None:
            shutil.rmtree(old, ignore_errors=True)


def _sweep_stale(out: Path) -> None:
    """Remove the folders beside ``out`` that writers killed mid-save left (their process is gone): a
    half-written new index, or the old one being replaced (about to be replaced again by this save)."""
    for leftover in out.parent.glob(f".{glob.escape(out.name)}.*"):
        pid = leftover.name[len(out.name) + 2 :].split(".", 1)[0]
        if leftover.suffix in (".tmp", ".old") and pid.isdigit() and not _alive(int(pid)):
            shutil.rmtree(leftover, ignore_errors=True)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)  # signal 0: existence check only
    except ProcessLookupError:
        return False
    except PermissionError:  # someone else's live process
        return True
    return True


def _top(scores: np.ndarray, k: int) -> list[int]:
    if k >= len(scores):
        order = np.argsort(-scores, kind="stable")
    else:
        part = np.argpartition(-scores, k - 1)[:k]
        order = part[np.argsort(-scores[part], kind="stable")]
    return [int(i) for i in order[:k]]


def _write_jsonl(path: Path, rows: Iterable[dict[str, Any]]) -> None:
    with open(path, "w", encoding="utf-8") as fh:
        for row in rows:
            fh.write(json.dumps(row, ensure_ascii=False) + "\n")


def _read_jsonl(path: Path) -> list[dict[str, Any]]:
    with open(path, encoding="utf-8") as fh:
        return [json.loads(line) for line in fh if line.strip()]
