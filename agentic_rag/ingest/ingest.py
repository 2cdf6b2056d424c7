"""Build indexes: per question (CRAG Task 1) or one persistent corpus index.

Per-question mode indexes each question's own pages on the fly; the result is cached on disk keyed by
the pages' content and the chunking/embedding settings, so a second run over the same questions does
no embedding work. A cache entry that cannot be read (cut by a kill, raced by another writer) is
rebuilt, never trusted. Corpus mode pools pages from a dataset, a prepared corpus file or a folder of
.html/.txt/.md/.pdf files into one FAISS + BM25 index under ``artifacts/``; a file in the folder that
is not text (an executable named ``x.html``) is skipped with a warning and counted, and so is a link
that leads out of the folder (the folder is untrusted: ``users.md -> /etc/passwd`` is never read).

Run as ``agentic-rag ingest``.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import sys
import threading
import time
from collections import OrderedDict
from contextlib import nullcontext
from functools import partial
from pathlib import Path
from typing import Any, Iterable, Iterator

import numpy as np
from tqdm import tqdm

from agentic_rag.budget import check_deadline
from agentic_rag.configuration import Settings
from agentic_rag.datasets.crag import (
    SNIFF_BYTES,
    BadRecordWarner,
    CragRecord,
    DataError,
    SearchResult,
    iter_lines,
    iter_records,
    iter_validated,
    looks_binary,
    resolve_dataset,
    warn,
)
from agentic_rag.errors import replaceable_folder, writable_folder
from agentic_rag.ingest.pages import EXTRACTOR_VERSION, make_page
from agentic_rag.retrieval.chunks import Page
from agentic_rag.retrieval.embedding_cache import cache_for
from agentic_rag.retrieval.embeddings import Embedder, get_embedder
from agentic_rag.retrieval.hybrid import INDEX_FOLDER, HybridIndex
from agentic_rag.telemetry import parse_json
from agentic_rag.timing import part, startup_step

FOLDER_SUFFIXES = {".html", ".htm", ".txt", ".md", ".pdf"}
_UTF8_SEQUENCE = re.compile(rb"[\xc2-\xf4][\x80-\xbf]+")
INDEXES_IN_MEMORY = 16  # loaded per-question indexes kept for the next question or system (indexes)
_MEMORY: "OrderedDict[str, HybridIndex]" = OrderedDict()
_IN_FLIGHT: dict[str, threading.Lock] = {}  # index key -> lock held while one thread loads or builds it
_LOCK = threading.Lock()
PageJob = tuple[str, dict[str, Any]]  # a page's raw text and the rest of make_page's arguments


def pages_from_record(record: CragRecord, settings: Settings) -> list[Page]:
    return made_pages(record_page_jobs(record, settings))


def made_pages(jobs: Iterable[PageJob]) -> list[Page]:
    """The pages of ``jobs``; one whose extraction still fails is skipped with a warning, never the run."""
    pages = []
    for raw, meta in jobs:
        check_deadline("page extraction")  # a record of many pages ends with its question's WALL_TIME_S
        try:
            pages.append(make_page(raw, **meta))
        except Exception as exc:  # noqa: BLE001 - one page of untrusted HTML must not end a run or a request
            warn(f"warning: skipped page {meta.get('page_url') or meta.get('page_name') or meta.get('page_index')}: "
                 f"its text could not be extracted ({type(exc).__name__}: {exc})")
    return pages


def record_page_jobs(record: CragRecord, settings: Settings) -> list[PageJob]:
    """The ``make_page`` arguments of a record's pages (extracted here, or on Ray workers by an ingest)."""
    return [
        (
            r.page_result or r.page_snippet,
            dict(
                page_name=r.page_name,
                page_url=r.page_url,
                page_last_modified=r.page_last_modified,
                page_index=i,
                source=record.interaction_id,
                max_chars=settings.retrieval.MAX_PAGE_CHARS,
                max_raw_chars=settings.retrieval.MAX_PAGE_RAW_CHARS,
            ),
        )
        for i, r in enumerate(record.search_results)
    ]


def _chunking_key(settings: Settings) -> dict:
    return {
        "chunk_size": settings.retrieval.CHUNK_SIZE_CHARS,
        "overlap": settings.retrieval.CHUNK_OVERLAP_CHARS,
        "min_chars": settings.retrieval.MIN_CHUNK_CHARS,
        "max_page_chars": settings.retrieval.MAX_PAGE_CHARS,
        "max_page_raw_chars": settings.retrieval.MAX_PAGE_RAW_CHARS,
        "extractor": EXTRACTOR_VERSION,
        "embedding": settings.retrieval.EMBEDDING_MODEL,
    }


def record_cache_key(record: CragRecord, settings: Settings) -> str:
    h = hashlib.sha256()
    h.update(json.dumps(_chunking_key(settings), sort_keys=True).encode())
    for r in record.search_results:
        # every field a chunk carries into the index: two records with the same page text but other
        # names or dates must not share chunks that carry the first one's metadata
        for field in (r.page_url, r.page_name, r.page_last_modified or "", r.page_snippet):
            h.update(field.encode())
            h.update(b"\0")
        h.update(hashlib.sha256(r.page_result.encode()).digest())
    return h.hexdigest()[:24]


def index_for_record(record: CragRecord, settings: Settings) -> HybridIndex:
    """The question's own pages as a hybrid index (memory, then disk cache, then built).

    Single flight: the agent's parallel workers (and the baseline, and a repeated question) all ask
    for the same index at once; the first builds or loads it, the others wait for it instead of each
    extracting and embedding the same pages."""
    key = record_cache_key(record, settings)
    memory_key = f"{key}:{settings.retrieval.VECTOR_STORE}"  # the disk folder serves every store
    with _LOCK:
        if memory_key in _MEMORY:
            _MEMORY.move_to_end(memory_key)
            return _MEMORY[memory_key]
        flight = _IN_FLIGHT.setdefault(memory_key, threading.Lock())
    try:
        with flight:
            with _LOCK:
                if memory_key in _MEMORY:  # built by the thread this one waited for
                    _MEMORY.move_to_end(memory_key)
                    return _MEMORY[memory_key]
            with startup_step("first index"):
                index = _load_or_build(record, settings, key)
            with _LOCK:
                _MEMORY[memory_key] = index
                while len(_MEMORY) > INDEXES_IN_MEMORY:
                    _MEMORY.popitem(last=False)
            return index
    finally:
        with _LOCK:
            if _IN_FLIGHT.get(memory_key) is flight and not flight.locked():
                del _IN_FLIGHT[memory_key]


def _load_or_build(record: CragRecord, settings: Settings, key: str) -> HybridIndex:
    embedder = get_embedder(settings)
    cache_dir = settings.cache_dir / "questions" / key
    if (cache_dir / "manifest.json").is_file():
        try:
            index = HybridIndex.load(cache_dir, embedder, vector_store=settings.retrieval.VECTOR_STORE)
            os.utime(cache_dir)  # used now: the last to be evicted
            return index
        except Exception as exc:  # noqa: BLE001 - whatever is wrong with a cache entry, it is rebuilt, never trusted
            print(f"warning: rebuilding the cached index of {record.interaction_id}: {exc}", file=sys.stderr)
    with part("extract"):
        pages = pages_from_record(record, settings)
    index = HybridIndex.build(
        pages,
        embedder,
        settings.retrieval.CHUNK_SIZE_CHARS,
        settings.retrieval.CHUNK_OVERLAP_CHARS,
        settings.retrieval.MIN_CHUNK_CHARS,
        vector_cache=cache_for(settings, embedder),
        vector_store=settings.retrieval.VECTOR_STORE,
    )
    try:
        index.save(cache_dir, {"mode": "question", "interaction_id": record.interaction_id, **_chunking_key(settings)})
        evict_indexes(cache_dir.parent, settings.paths.INDEX_CACHE_MAX)
    except OSError as exc:
        print(f"warning: could not cache index for {record.interaction_id}: {exc}", file=sys.stderr)
    return index


def evict_indexes(folder: Path, keep: int) -> int:
    """Remove the least recently used per-question indexes of ``folder`` past the ``keep`` newest (by the
    time each was built or last loaded); returns how many went. A scan of names and times only, then the
    mark of each folder about to go: one that is not an index (``INDEX_FOLDER``; the cache is a setting,
    and may be set to a folder holding others) is left alone."""
    entries = []
    with os.scandir(folder) as found:
        for entry in found:
            if entry.is_dir(follow_symlinks=False) and not entry.name.startswith("."):
                entries.append((entry.stat(follow_symlinks=False).st_mtime, entry.path))
    if len(entries) <= keep:
        return 0
    entries.sort()
    gone = [path for _, path in entries[: len(entries) - keep] if INDEX_FOLDER.marks(Path(path))]
    for path in gone:
        shutil.rmtree(path, ignore_errors=True)
    return len(gone)


# -- corpus mode ---------------------------------------------------------------------------------
class IngestReport:
    """What a corpus ingest skipped, reported as it happens and counted in the stats."""

    def __init__(self, settings: Settings):
        self.fail = settings.eval.BAD_RECORDS == "fail"
        self.bad_records = BadRecordWarner(settings.eval.BAD_RECORDS_SHOWN)
        self.skipped_files: list[str] = []
        self.skipped_links: list[str] = []

    def skip_file(self, path: Path, why: str) -> None:
        if self.fail:
            raise DataError(f"{path}: {why}")
        warn(f"warning: skipped {path}: {why}")
        self.skipped_files.append(str(path))

    def skip_link(self, path: Path, folder: Path) -> None:
        """A link out of the ingested folder: said and counted, whatever BAD_RECORDS says (it is no damage)."""
        warn(f"warning: skipped {path}: a link that leads out of {folder} (to {os.readlink(path)}); "
             "a link out of an ingested folder is never followed")
        self.skipped_links.append(str(path))

    def skipped(self) -> str:
        """What was skipped, for a line that says nothing was left to index."""
        parts = [f"{len(found)} {what} skipped" for what, found in (("files", self.skipped_files),
                                                                     ("links out of the folder", self.skipped_links)) if found]
        return f" ({', '.join(parts)})" if parts else ""


def pages_from_source(
    source: str | Path, settings: Settings, report: IngestReport | None = None, executor: Any = None,
) -> Iterator[Page]:
    """Pages of a CRAG dataset, a prepared ``crag_corpus.jsonl``, or a folder of documents; extracted
    here one by one, or in batches on the workers of ``executor`` (a Ray executor)."""
    report = report or IngestReport(settings)
    src = Path(source)
    if str(source) != "example" and src.is_dir():
        yield from _made(_jobs_from_folder(src, settings, report), settings, executor)
        return
    src = resolve_dataset(source)
    if str(source) != "example" and _is_pages_file(src):
        yield from _made(_jobs_from_corpus_file(src, settings, report), settings, executor)
        return
    jobs = (job for record in iter_records(src, on_bad=settings.eval.BAD_RECORDS, on_bad_record=report.bad_records,
                                           max_record_bytes=settings.eval.MAX_RECORD_BYTES)
            for job in record_page_jobs(record, settings))
    seen: set[str] = set()
    for page in _made(jobs, settings, executor):
        if page.page_id in seen:
            continue
        seen.add(page.page_id)
        page.page_index = len(seen) - 1
        yield page


def _made(jobs: Iterator[PageJob], settings: Settings, executor: Any) -> Iterator[Page]:
    if executor is None:
        for job in jobs:
            yield from made_pages([job])
        return
    batches = _batches(list(jobs), settings.scale.RAY_INGEST_BATCH)
    done: dict[int, list[Page]] = {}
    for i, pages, _ in executor.map(_make_pages, batches, partial(get_embedder, settings)):
        done[i] = pages
    yield from (page for i in range(len(batches)) for page in done[i])


def _make_pages(jobs: list[PageJob]) -> list[Page]:
    return made_pages(jobs)


def _batches(items: list, size: int) -> list[list]:
    return [items[i : i + size] for i in range(0, len(items), size)]


def _is_pages_file(path: Path) -> bool:
    for _, line, _ in iter_lines(path):
        if line is None:
            continue
        try:
            row = parse_json(line)
        except json.JSONDecodeError:
            return False
        return isinstance(row, dict) and "page_result" in row and "query" not in row
    return False


def _jobs_from_corpus_file(path: Path, settings: Settings, report: IngestReport) -> Iterator[PageJob]:
    for lineno, page in iter_validated(path, SearchResult, settings.eval.BAD_RECORDS, report.bad_records,
                                       max_record_bytes=settings.eval.MAX_RECORD_BYTES):
        yield page.page_result or page.page_snippet, dict(
            page_name=page.page_name,
            page_url=page.page_url,
            page_last_modified=page.page_last_modified,
            page_index=lineno - 1,
            source=str(path),
            max_chars=settings.retrieval.MAX_PAGE_CHARS,
            max_raw_chars=settings.retrieval.MAX_PAGE_RAW_CHARS,
        )


def read_text_file(path: Path, max_chars: int) -> str:
    """A document's text: UTF-8 (with or without a byte-order mark), else Windows-1252, which decodes
    any byte. At most ``4 * max_chars`` bytes are read, room for ``max_chars`` characters of any UTF-8
    text (``make_page`` cuts the rest, after dropping scripts). Raises ``DataError`` for binary content."""
    limit = max_chars * 4
    with open(path, "rb", opener=_no_follow) as fh:
        data = fh.read(limit)
    if looks_binary(data[:SNIFF_BYTES]):
        raise DataError("not a text file (binary content)")
    if len(data) == limit:
        data = data[: limit - 3] + data[limit - 3 :].rstrip(bytes(range(0x80, 0x100)))  # a character cut in two
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError:
        # UTF-8 with a few bad bytes keeps its characters; a legacy single-byte file is read as one
        return data.decode("utf-8-sig" if _UTF8_SEQUENCE.search(data) else "cp1252", errors="replace")


def _no_follow(path: str, flags: int) -> int:
    """An ``open`` opener that will not follow a link: a file checked to be inside the folder cannot be
    swapped for a link out of it between the check and the read."""
    return os.open(path, flags | os.O_NOFOLLOW)


def folder_files(folder: Path, report: IngestReport) -> list[tuple[Path, Path]]:
    """The documents under ``folder``: (the name found, the file to read), by name. A link whose target is
    outside the folder (a file or a folder: ``users.md -> /etc/passwd``) is skipped and reported, never read;
    a file link that stays inside is read as its target, and a folder link inside is not walked twice."""
    root = folder.resolve()
    found = []
    for top, folders, files in os.walk(folder):  # a link to a folder is listed among the folders, not walked
        for name in folders + files:
            path = Path(top) / name
            real = path.resolve()
            if path.is_symlink() and real != root and root not in real.parents:
                report.skip_link(path, folder)
            elif name in files and real.is_file() and path.suffix.lower() in FOLDER_SUFFIXES:
                found.append((path, real))
    return sorted(found)


def _jobs_from_folder(folder: Path, settings: Settings, report: IngestReport) -> Iterator[PageJob]:
    files = folder_files(folder, report)
    if not files:
        raise DataError(f"{folder} holds no {sorted(FOLDER_SUFFIXES)} files{report.skipped()}")
    for i, (path, real) in enumerate(files):
        try:
            if path.suffix.lower() == ".pdf":
                raw = _read_pdf(real)
            else:
                raw = read_text_file(real, settings.retrieval.MAX_PAGE_RAW_CHARS)
        except DataError as exc:
            report.skip_file(path, str(exc))
            continue
        except Exception as exc:  # noqa: BLE001 - a broken file is reported, never silently dropped
            report.skip_file(path, f"unreadable ({exc})")
            continue
        yield raw, dict(
            page_name=path.stem,
            page_url=real.as_uri(),
            page_last_modified=time.strftime("%Y-%m-%d", time.gmtime(real.stat().st_mtime)),
            page_index=i,
            source=str(path),
            max_chars=settings.retrieval.MAX_PAGE_CHARS,
            max_raw_chars=settings.retrieval.MAX_PAGE_RAW_CHARS,
        )


def _read_pdf(path: Path) -> str:
    from pypdf import PdfReader

    with open(path, "rb", opener=_no_follow) as fh:
        return "\n\n".join(page.extract_text() or "" for page in PdfReader(fh).pages)


def build_corpus_index(
    source: str | Path, out_dir: str | Path, settings: Settings, progress: bool = True, executor: Any = None,
) -> dict:
    """Ingest a whole source into a persistent index; returns throughput figures and what was skipped.

    The index appears at ``out_dir`` only once complete (see ``HybridIndex.save``): a killed ingest
    leaves the previous index, or none, never a folder that loads half an index. With a Ray
    ``executor`` the pages are extracted and the chunks embedded on its workers, in batches; this
    process chunks, builds the FAISS and BM25 indexes and writes the folder."""
    with executor or nullcontext():
        return _build_corpus_index(source, Path(out_dir), settings, progress, executor)


def _build_corpus_index(source: str | Path, out: Path, settings: Settings, progress: bool, executor: Any) -> dict:
    replaceable_folder(out, INDEX_FOLDER)  # before the work: HybridIndex.save refuses it again, at the end
    writable_folder(out.parent, f"the index {out}")  # where HybridIndex.save writes it, once all is extracted and embedded
    t0 = time.perf_counter()
    report = IngestReport(settings)
    pages = list(tqdm(pages_from_source(source, settings, report, executor), desc="extract pages", unit="page",
                      disable=not progress))
    report.bad_records.finish()
    t_extract = time.perf_counter() - t0
    skipped = report.skipped()
    if not pages:
        raise DataError(f"no pages found in {source}{skipped}")
    if not any(p.text.strip() for p in pages):
        raise DataError(f"nothing to index: the {len(pages)} pages of {source} hold no text{skipped}")
    embedder = get_embedder(settings) if executor is None else _WorkerEmbedder(settings, executor)
    t1 = time.perf_counter()
    index = HybridIndex.build(
        pages, embedder, settings.retrieval.CHUNK_SIZE_CHARS, settings.retrieval.CHUNK_OVERLAP_CHARS, settings.retrieval.MIN_CHUNK_CHARS,
        show_progress=progress,
    )
    if not len(index):
        raise DataError(f"nothing to index: no page of {source} has a passage of at least "
                        f"{settings.retrieval.MIN_CHUNK_CHARS} characters (MIN_CHUNK_CHARS){skipped}")
    t_index = time.perf_counter() - t1
    index.save(out, {"mode": "corpus", "source": str(source), **_chunking_key(settings)})
    total = time.perf_counter() - t0
    return {
        "pages": len(pages),
        "chunks": len(index),
        "skipped_files": len(report.skipped_files),
        "skipped_links": len(report.skipped_links),
        "bad_records": report.bad_records.count,
        "untrusted_pages": sum(p.untrusted > 0 for p in pages),
        "extract_s": round(t_extract, 3),
        "index_s": round(t_index, 3),
        "total_s": round(total, 3),
        "pages_per_s": round(len(pages) / total, 2),
        "chunks_per_s": round(len(index) / total, 2),
        "out": str(out),
        "executor": executor.name if executor is not None else "local",
    }


class _WorkerEmbedder(Embedder):
    """The configured embedder with its forward passes on an executor's workers, a batch of chunks per
    task; the vectors come back in the chunks' order."""

    def __init__(self, settings: Settings, executor: Any) -> None:  # no model in this process
        self.model_name = settings.retrieval.EMBEDDING_MODEL
        self.batch_size = settings.retrieval.EMBEDDING_BATCH_SIZE
        self._settings, self._executor, self._dim = settings, executor, None

    @property
    def dim(self) -> int:
        if self._dim is None:
            self.embed(["dimension"])
        return self._dim

    def embed(self, texts: list[str], show_progress: bool = False) -> np.ndarray:
        batches = _batches(list(texts), self._settings.scale.RAY_INGEST_BATCH)
        if not batches:
            return np.zeros((0, self.dim), dtype=np.float32)
        done: dict[int, np.ndarray] = {}
        with tqdm(total=len(texts), desc="embed chunks", unit="chunk", disable=not show_progress) as bar:
            for i, vectors, _ in self._executor.map(partial(_embed_batch, self._settings), batches,
                                                     partial(get_embedder, self._settings)):
                done[i] = vectors
                bar.update(len(vectors))
        vectors = np.concatenate([done[i] for i in range(len(batches))])
        self._dim = vectors.shape[1]
        return vectors


def _embed_batch(settings: Settings, texts: list[str]) -> np.ndarray:
    return get_embedder(settings).embed(texts)
