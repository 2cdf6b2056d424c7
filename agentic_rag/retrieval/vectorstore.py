"""The dense half of hybrid retrieval behind LangChain's ``VectorStore`` interface.

``VECTOR_STORE`` picks the store: ``faiss`` (the default: a thin ``VectorStore`` over the index's own
FAISS inner-product index, so its rankings are exactly FAISS's), ``inmemory`` (langchain_core's
``InMemoryVectorStore``) or the dotted path of any other LangChain store class (``package.module:Class``)
that implements ``from_texts`` and ``similarity_search_by_vector``. Whatever the store, the chunk vectors
are the ones the index already holds: a store is filled through an ``Embeddings`` adapter that hands
back those vectors instead of embedding the chunks again, and queries are embedded by the same model.

The index folder on disk is the same for every store (the FAISS file is always written), so switching
stores needs no rebuild: a non-default store is filled from ``embeddings.npy`` when the index loads.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Iterable

import numpy as np
from langchain_core.documents import Document
from langchain_core.embeddings import Embeddings
from langchain_core.vectorstores import InMemoryVectorStore, VectorStore

from agentic_rag.configuration import import_store_class

if TYPE_CHECKING:
    import faiss

    from agentic_rag.retrieval.embeddings import Embedder

ROW = "row"  # metadata key of a document's position in the index's chunk list


class KnownVectors(Embeddings):
    """LangChain ``Embeddings`` over an ``Embedder``, answering a store's request for the index's own
    chunks with the vectors the index already holds (no second embedding pass, identical vectors)."""

    def __init__(self, embedder: "Embedder", texts: list[str] | None = None, vectors: np.ndarray | None = None):
        self.embedder = embedder
        self._texts, self._vectors = texts, vectors

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        if self._texts is not None and list(texts) == self._texts:
            return self._vectors.tolist()
        return self.embedder.embed(list(texts)).tolist()

    def embed_query(self, text: str) -> list[float]:
        return self.embedder.embed_each([text])[0].tolist()


class FaissVectorStore(VectorStore):
    """A ``VectorStore`` over an existing FAISS inner-product index whose row i is chunk i.

    Written here rather than taken from langchain-community's FAISS wrapper, which is being retired;
    this one keeps no second copy of the texts and searches with one ``index.search`` call, so the
    default ranking is FAISS's own, bit for bit."""

    def __init__(self, index: "faiss.Index", texts: list[str], ids: list[str], embedding: Embeddings):
        self.index, self._texts, self._ids, self._embedding = index, texts, ids, embedding

    @property
    def embeddings(self) -> Embeddings:
        return self._embedding

    def add_texts(self, texts: Iterable[str], metadatas: list[dict] | None = None, *, ids: list[str] | None = None,
                  **kwargs: Any) -> list[str]:
        texts = list(texts)
        ids = list(ids) if ids else [str(len(self._ids) + i) for i in range(len(texts))]
        vectors = np.asarray(self._embedding.embed_documents(texts), dtype=np.float32)
        if len(texts):
            self.index.add(vectors)
        self._texts.extend(texts)
        self._ids.extend(ids)
        return ids

    @classmethod
    def from_texts(cls, texts: list[str], embedding: Embeddings, metadatas: list[dict] | None = None, *,
                   ids: list[str] | None = None, **kwargs: Any) -> "FaissVectorStore":
        import faiss

        if not texts:
            raise ValueError("FaissVectorStore.from_texts needs at least one text (to know the dimension)")
        vectors = np.asarray(embedding.embed_documents(list(texts)), dtype=np.float32)
        index = faiss.IndexFlatIP(int(vectors.shape[1]))
        index.add(vectors)
        return cls(index, list(texts), list(ids) if ids else [str(i) for i in range(len(texts))], embedding)

    def similarity_search_with_score_by_vector(self, embedding: list[float], k: int = 4,
                                               **kwargs: Any) -> list[tuple[Document, float]]:
        if self.index.ntotal == 0:
            return []
        scores, found = self.index.search(np.asarray(embedding, dtype=np.float32)[None, :], k)
        return [(Document(page_content=self._texts[i], id=self._ids[i], metadata={ROW: int(i)}), float(s))
                for s, i in zip(scores[0], found[0]) if i >= 0]

    def similarity_search_by_vector(self, embedding: list[float], k: int = 4, **kwargs: Any) -> list[Document]:
        return [doc for doc, _ in self.similarity_search_with_score_by_vector(embedding, k, **kwargs)]

    def similarity_search(self, query: str, k: int = 4, **kwargs: Any) -> list[Document]:
        return self.similarity_search_by_vector(self._embedding.embed_query(query), k, **kwargs)


def store_class(name: str) -> type[VectorStore]:
    if name == "faiss":
        return FaissVectorStore
    if name == "inmemory":
        return InMemoryVectorStore
    return import_store_class(name)


def build_store(name: str, texts: list[str], vectors: np.ndarray, embedder: "Embedder",
                faiss_index: "faiss.Index") -> VectorStore | None:
    """The store ``name`` holding the index's chunks (row i = chunk i) with their existing vectors;
    None for an index without chunks (nothing to search, and some stores cannot be empty)."""
    embedding = KnownVectors(embedder, list(texts), vectors)
    ids = [str(i) for i in range(len(texts))]
    if name == "faiss":
        return FaissVectorStore(faiss_index, list(texts), ids, embedding)
    cls = store_class(name)
    if not len(texts):
        return None
    return cls.from_texts(list(texts), embedding, metadatas=[{ROW: i} for i in range(len(texts))], ids=ids)


def nearest_rows(store: VectorStore | None, query_vector: np.ndarray, k: int) -> list[int]:
    """Rows of the ``k`` chunks nearest the query vector, best first, by the store's own ranking.

    The vector goes in as the interface's list of floats; float32 survives the round trip exactly."""
    if store is None or k <= 0:
        return []
    return [int(doc.metadata[ROW]) for doc in store.similarity_search_by_vector(query_vector.tolist(), k=k)]
