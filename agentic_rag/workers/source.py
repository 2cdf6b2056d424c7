"""Where a question's evidence comes from: its own pages (CRAG Task 1) or a persistent corpus index."""

from __future__ import annotations

import threading
from functools import lru_cache
from typing import Any

from agentic_rag.configuration import Settings
from agentic_rag.datasets.crag import CragRecord
from agentic_rag.errors import UserError
from agentic_rag.ingest.ingest import index_for_record
from agentic_rag.retrieval.embeddings import get_embedder
from agentic_rag.retrieval.hybrid import BonusFn, HybridIndex
from agentic_rag.timing import part

_LOCK = threading.Lock()


class NoCorpusError(UserError, ValueError):
    """The question came with neither pages nor an index to search."""


@lru_cache(maxsize=4)
def _load_corpus(index_dir: str, embedding_model: str, batch: int, memo: int, vector_store: str) -> HybridIndex:
    # the cache key is the embedding settings alone; a real Settings carries them (read flat or by section)
    settings = Settings.model_validate(
        {"retrieval": {"EMBEDDING_MODEL": embedding_model, "EMBEDDING_BATCH_SIZE": batch, "EMBEDDING_MEMO_SIZE": memo}})
    return HybridIndex.load(index_dir, get_embedder(settings), vector_store=vector_store)


def resolve_index(state: dict[str, Any], settings: Settings) -> HybridIndex:
    if state.get("record"):
        record = CragRecord.model_validate(state["record"])
        with part("index"):
            return index_for_record(record, settings)
    if state.get("index_dir"):
        with part("index"), _LOCK:
            return _load_corpus(str(state["index_dir"]), settings.retrieval.EMBEDDING_MODEL, settings.retrieval.EMBEDDING_BATCH_SIZE,
                                settings.retrieval.EMBEDDING_MEMO_SIZE, settings.retrieval.VECTOR_STORE)
    raise NoCorpusError("no evidence source: give a CRAG record (--dataset/--id) or an index folder (--index)")


def retrieve(index: HybridIndex, query: str, settings: Settings, bonus: BonusFn | None = None, k: int | None = None):
    """The settings-driven hybrid search every node uses."""
    with part("search"):
        return index.search(
            query,
            k=k or settings.retrieval.RETRIEVAL_K,
            pool_k=settings.retrieval.RETRIEVAL_POOL_K,
            mmr_lambda=settings.retrieval.MMR_LAMBDA,
            rrf_k=settings.retrieval.RRF_K,
            bonus=bonus,
        )
