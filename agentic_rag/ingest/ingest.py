"""Build indexes: per question (CRAG Task 1) or one persistent corpus index.

Per-question mode indexes each question's own pages on the fly; the result is cached on disk keyed by
the pages' content and the chunking/embedding settings, so a second run over the same questions does
no embedding work. Corpus mode pools pages from a dataset, a prepared corpus file or a folder of
.html/.txt/.md/.pdf files into one FAISS + BM25 index under ``artifacts/``.

Run as ``agentic-rag ingest`` or ``python -m agentic_rag.ingest.ingest --input SRC --out DIR``.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
import threading
import time
from collections import OrderedDict
from pathlib import Path
from typing import Iterator

from tqdm import tqdm

from agentic_rag.configuration import Settings
from agentic_rag.datasets.crag import CragRecord, DataError, iter_records, open_text
from agentic_rag.ingest.pages import Page, make_page
from agentic_rag.retrieval.embeddings import get_embedder
from agentic_rag.retrieval.hybrid import HybridIndex

FOLDER_SUFFIXES = {".html", ".htm", ".txt", ".md", ".pdf"}
_MEMORY: "OrderedDict[str, HybridIndex]" = OrderedDict()
_MEMORY_MAX = 16
_LOCK = threading.Lock()


def pages_from_record(record: CragRecord, settings: Settings) -> list[Page]:
    return [
        make_page(
            r.page_result or r.page_snippet,
            page_name=r.page_name,
            page_url=r.page_url,
            page_last_modified=r.page_last_modified,
            page_index=i,
            source=record.interaction_id,
            max_chars=settings.MAX_PAGE_CHARS,
        )
        for i, r in enumerate(record.search_results)
    ]


def _chunking_key(settings: Settings) -> dict:
    return {
        "chunk_size": settings.CHUNK_SIZE_CHARS,
        "overlap": settings.CHUNK_OVERLAP_CHARS,
        "min_chars": settings.MIN_CHUNK_CHARS,
        "max_page_chars": settings.MAX_PAGE_CHARS,
        "embedding": settings.EMBEDDING_MODEL,
    }


def record_cache_key(record: CragRecord, settings: Settings) -> str:
    h = hashlib.sha256()
    h.update(json.dumps(_chunking_key(settings), sort_keys=True).encode())
    for r in record.search_results:
        h.update(r.page_url.encode())
        h.update(hashlib.sha256(r.page_result.encode()).digest())
        h.update(r.page_snippet.encode())
    return h.hexdigest()[:24]


def index_for_record(record: CragRecord, settings: Settings) -> HybridIndex:
    """The question's own pages as a hybrid index (memory, then disk cache, then built)."""
    key = record_cache_key(record, settings)
    with _LOCK:
        if key in _MEMORY:
            _MEMORY.move_to_end(key)
            return _MEMORY[key]
    embedder = get_embedder(settings)
    cache_dir = Path(settings.ARTIFACTS_DIR) / "cache" / "questions" / key
    index = None
    if (cache_dir / "manifest.json").is_file():
        try:
            index = HybridIndex.load(cache_dir, embedder)
        except (OSError, ValueError, json.JSONDecodeError):
            index = None  # a stale or broken cache entry is rebuilt, never trusted
    if index is None:
        index = HybridIndex.build(
            pages_from_record(record, settings),
            embedder,
            settings.CHUNK_SIZE_CHARS,
            settings.CHUNK_OVERLAP_CHARS,
            settings.MIN_CHUNK_CHARS,
        )
        try:
            index.save(cache_dir, {"mode": "question", "interaction_id": record.interaction_id, **_chunking_key(settings)})
        except OSError as exc:
            print(f"warning: could not cache index for {record.interaction_id}: {exc}", file=sys.stderr)
    with _LOCK:
        _MEMORY[key] = index
        while len(_MEMORY) > _MEMORY_MAX:
            _MEMORY.popitem(last=False)
    return index


# -- corpus mode ---------------------------------------------------------------------------------
def pages_from_source(source: str | Path, settings: Settings) -> Iterator[Page]:
    """Pages of a CRAG dataset, a prepared ``crag_corpus.jsonl``, or a folder of documents."""
    src = Path(source)
    if str(source) != "example" and src.is_dir():
        yield from _pages_from_folder(src, settings)
        return
    if str(source) != "example" and not src.exists():
        raise DataError(f"ingest source {src} does not exist")
    if str(source) != "example" and _is_pages_file(src):
        yield from _pages_from_corpus_file(src, settings)
        return
    seen: set[str] = set()
    for record in iter_records(source, on_bad=settings.BAD_RECORDS, on_bad_record=_warn):
        for page in pages_from_record(record, settings):
            if page.page_id in seen:
                continue
            seen.add(page.page_id)
            page.page_index = len(seen) - 1
            yield page


def _warn(bad) -> None:
    print(f"skipped bad record {bad}", file=sys.stderr)


def _is_pages_file(path: Path) -> bool:
    with open_text(path) as fh:
        for line in fh:
            if line.strip():
                try:
                    row = json.loads(line)
                except json.JSONDecodeError:
                    return False
                return isinstance(row, dict) and "page_result" in row and "query" not in row
    return False


def _pages_from_corpus_file(path: Path, settings: Settings) -> Iterator[Page]:
    with open_text(path) as fh:
        for lineno, line in enumerate(fh, start=1):
            if not line.strip():
                continue
            try:
                row = json.loads(line)
            except json.JSONDecodeError as exc:
                if settings.BAD_RECORDS == "fail":
                    raise DataError(f"{path}:{lineno}: bad JSON ({exc.msg})") from None
                print(f"skipped bad page {path}:{lineno}: bad JSON ({exc.msg})", file=sys.stderr)
                continue
            yield make_page(
                row.get("page_result") or row.get("page_snippet") or "",
                page_name=row.get("page_name", ""),
                page_url=row.get("page_url", ""),
                page_last_modified=row.get("page_last_modified", "") or "",
                page_index=lineno - 1,
                source=str(path),
                max_chars=settings.MAX_PAGE_CHARS,
            )


def _pages_from_folder(folder: Path, settings: Settings) -> Iterator[Page]:
    files = sorted(p for p in folder.rglob("*") if p.is_file() and p.suffix.lower() in FOLDER_SUFFIXES)
    if not files:
        raise DataError(f"{folder} holds no {sorted(FOLDER_SUFFIXES)} files")
    for i, path in enumerate(files):
        try:
            raw = _read_pdf(path) if path.suffix.lower() == ".pdf" else path.read_text(encoding="utf-8", errors="replace")
        except Exception as exc:  # a broken file is reported, never silently dropped
            if settings.BAD_RECORDS == "fail":
                raise DataError(f"cannot read {path}: {exc}") from None
            print(f"skipped unreadable file {path}: {exc}", file=sys.stderr)
            continue
        yield make_page(
            raw,
            page_name=path.stem,
            page_url=path.resolve().as_uri(),
            page_last_modified=time.strftime("%Y-%m-%d", time.gmtime(path.stat().st_mtime)),
            page_index=i,
            source=str(path),
            max_chars=settings.MAX_PAGE_CHARS,
        )


def _read_pdf(path: Path) -> str:
    from pypdf import PdfReader

    return "\n\n".join(page.extract_text() or "" for page in PdfReader(str(path)).pages)


def build_corpus_index(source: str | Path, out_dir: str | Path, settings: Settings, progress: bool = True) -> dict:
    """Ingest a whole source into a persistent index; returns throughput figures."""
    t0 = time.perf_counter()
    pages = list(tqdm(pages_from_source(source, settings), desc="extract pages", unit="page", disable=not progress))
    t_extract = time.perf_counter() - t0
    if not pages:
        raise DataError(f"no pages found in {source}")
    embedder = get_embedder(settings)
    t1 = time.perf_counter()
    index = HybridIndex.build(
        pages, embedder, settings.CHUNK_SIZE_CHARS, settings.CHUNK_OVERLAP_CHARS, settings.MIN_CHUNK_CHARS,
        show_progress=progress,
    )
    t_index = time.perf_counter() - t1
    index.save(out_dir, {"mode": "corpus", "source": str(source), **_chunking_key(settings)})
    total = time.perf_counter() - t0
    return {
        "pages": len(pages),
        "chunks": len(index),
        "extract_s": round(t_extract, 3),
        "index_s": round(t_index, 3),
        "total_s": round(total, 3),
        "pages_per_s": round(len(pages) / total, 2),
        "chunks_per_s": round(len(index) / total, 2),
        "out": str(out_dir),
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--input", required=True, help="CRAG dataset, prepared corpus .jsonl, folder, or 'example'")
    ap.add_argument("--out", required=True, help="index folder to write")
    ap.add_argument("--backend", default=None, help="ignored: embeddings are always the packaged offline model")
    ap.add_argument("--override", nargs="*", default=[], metavar="KEY=VALUE")
    args = ap.parse_args(argv)
    settings = Settings.load(overrides=args.override)
    print(json.dumps(build_corpus_index(args.input, args.out, settings), indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
