"""Retrieval benchmark: SQuAD 2.0 corpus mode and CRAG ingestion throughput.

1. Corpus mode over every paragraph of ``squad2_dev_half.jsonl`` (646 paragraphs): for each answerable
   question, is its own paragraph among the pages of the top-1 / top-5 passages? Measured for
   vector-only, BM25-only and hybrid (RRF), each without MMR, and hybrid with the default MMR.
2. Per-query latency (p50, p95) of the default hybrid search on that corpus.
3. Ingestion throughput (pages/s, chunks/s) of the 10 bundled CRAG records (50 HTML pages).

Usage: python scripts/bench_retrieval.py [--squad PATH] [--limit N] [--out benchmarks/retrieval.json]
"""

from __future__ import annotations

import argparse
import json
import platform
import statistics
import sys
import tempfile
import time
from pathlib import Path

from tqdm import tqdm

from agentic_rag.configuration import Settings
from agentic_rag.ingest.ingest import build_corpus_index
from agentic_rag.ingest.pages import make_page
from agentic_rag.retrieval.embeddings import get_embedder
from agentic_rag.retrieval.hybrid import HybridIndex

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_SQUAD = ROOT.parent / "shared" / "data" / "squad2" / "squad2_dev_half.jsonl"

CONFIGS = {
    "vector_only": {"vector_weight": 1.0, "bm25_weight": 0.0, "mmr_lambda": 1.0},
    "bm25_only": {"vector_weight": 0.0, "bm25_weight": 1.0, "mmr_lambda": 1.0},
    "hybrid": {"vector_weight": 1.0, "bm25_weight": 1.0, "mmr_lambda": 1.0},
    "hybrid_mmr": {"vector_weight": 1.0, "bm25_weight": 1.0, "mmr_lambda": None},  # None = settings default
}


def squad_corpus(path: Path):
    pages, page_of_context, questions = [], {}, []
    with open(path, encoding="utf-8") as fh:
        for line in fh:
            row = json.loads(line)
            ctx = row["context"]
            if ctx not in page_of_context:
                idx = len(pages)
                page = make_page(ctx, page_name=f"{row['title']} #{idx}", page_url=f"squad2://{row['title']}/{idx}", page_index=idx)
                page_of_context[ctx] = page.page_id
                pages.append(page)
            if not row.get("is_impossible"):
                questions.append((row["question"], page_of_context[ctx]))
    return pages, questions


def bench_squad(settings: Settings, squad: Path, limit: int | None) -> dict:
    pages, questions = squad_corpus(squad)
    if limit:
        questions = questions[:limit]
    t0 = time.perf_counter()
    index = HybridIndex.build(
        pages, get_embedder(settings), settings.retrieval.CHUNK_SIZE_CHARS, settings.retrieval.CHUNK_OVERLAP_CHARS,
        settings.retrieval.MIN_CHUNK_CHARS,
    )
    build_s = time.perf_counter() - t0
    qvecs = index.embedder.embed([q for q, _ in questions], show_progress=False)
    results = {}
    latencies = []
    for name, cfg in CONFIGS.items():
        hits1 = hits5 = 0
        lam = settings.retrieval.MMR_LAMBDA if cfg["mmr_lambda"] is None else cfg["mmr_lambda"]
        for (question, gold), qv in tqdm(list(zip(questions, qvecs)), desc=name, unit="q", file=sys.stderr):
            t = time.perf_counter()
            found = index.search(
                question, k=5, pool_k=settings.retrieval.RETRIEVAL_POOL_K, mmr_lambda=lam, rrf_k=settings.retrieval.RRF_K,
                vector_weight=cfg["vector_weight"], bm25_weight=cfg["bm25_weight"], query_vector=qv,
            )
            if name == "hybrid_mmr":
                latencies.append((time.perf_counter() - t) * 1000.0)
            page_ids = [p.chunk.page_id for p in found]
            hits1 += bool(page_ids[:1] == [gold])
            hits5 += gold in page_ids[:5]
        results[name] = {"recall@1": round(hits1 / len(questions), 4), "recall@5": round(hits5 / len(questions), 4)}
    # end-to-end latency including the query embedding, on a sample
    e2e = []
    for question, _ in questions[:200]:
        t = time.perf_counter()
        index.search(question, k=settings.retrieval.RETRIEVAL_K, pool_k=settings.retrieval.RETRIEVAL_POOL_K,
                     mmr_lambda=settings.retrieval.MMR_LAMBDA)
        e2e.append((time.perf_counter() - t) * 1000.0)
    latencies.sort()
    e2e.sort()
    return {
        "dataset": str(squad.name),
        "paragraphs": len(pages),
        "chunks": len(index),
        "answerable_questions": len(questions),
        "index_build_s": round(build_s, 2),
        "recall": results,
        "search_latency_ms_excluding_query_embedding": {
            "p50": round(statistics.median(latencies), 2),
            "p95": round(latencies[int(0.95 * (len(latencies) - 1))], 2),
        },
        "search_latency_ms_end_to_end": {"p50": round(statistics.median(e2e), 2), "p95": round(e2e[int(0.95 * (len(e2e) - 1))], 2)},
    }


def bench_ingest(settings: Settings) -> dict:
    get_embedder(settings)  # load weights outside the timing
    with tempfile.TemporaryDirectory() as tmp:
        return build_corpus_index("example", Path(tmp) / "idx", settings, progress=False)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--squad", type=Path, default=DEFAULT_SQUAD)
    ap.add_argument("--limit", type=int, default=None, help="only the first N answerable questions")
    ap.add_argument("--out", type=Path, default=None)
    args = ap.parse_args()
    settings = Settings.load()
    report = {
        "machine": {"cpus": __import__("os").cpu_count(), "python": platform.python_version()},
        "settings": {k: settings.value(k)
                     for k in ("CHUNK_SIZE_CHARS", "CHUNK_OVERLAP_CHARS", "RETRIEVAL_POOL_K", "RETRIEVAL_K", "MMR_LAMBDA", "RRF_K")},
        "squad2_corpus": bench_squad(settings, args.squad, args.limit),
        "crag_example_ingest": bench_ingest(settings),
    }
    text = json.dumps(report, indent=2)
    print(text)
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(text + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
