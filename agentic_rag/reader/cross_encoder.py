"""The cross-encoder reader: P(the sources answer the question) from the packaged MiniLM, fine-tuned.

Why a second reader: the probe needs a generator's prefill (a packaged model in this process, or the
packaged reader run beside a server), which costs about a second of CPU per question for the 1.5B. The
cross-encoder reads the question and the very sources of the answer prompt with the 22M-parameter
MiniLM the retriever already loads, so it serves every backend at a few tens of ms, and it is trained
on question types (multi-hop pages missing a supporting paragraph, near-miss news) the probe's rows lack.

What ships is small: only the top encoder layers and the head were fine-tuned, so the reader file holds
those tensors (fp16, safetensors) and the packaged MiniLM supplies the rest. The file records the base
weights' SHA-256 and is refused for any other base. It is fitted offline (training/cross_encoder.py,
run by `agentic-rag train reader`).
"""

from __future__ import annotations

import json
import math
import threading
from functools import lru_cache
from pathlib import Path
from typing import Any

from agentic_rag.errors import UserError
from agentic_rag.reader import PROBES_DIR

PACKAGED_CROSS_READER = PROBES_DIR / "answerability-minilm-cross.safetensors"
CROSS_READER_NAME = "minilm-cross"  # how readings and reports name it
MAX_TOKENS = 512  # MiniLM's position limit (tokens): the sources are cut, never the question


class CrossReaderError(UserError, ValueError):
    """The cross-encoder reader file cannot be read with this base model."""


def base_sha256(base_dir: str | Path) -> str:
    return _sha256(str(Path(base_dir) / "model.safetensors"))


@lru_cache(maxsize=4)
def _sha256(path: str) -> str:
    from agentic_rag.llm.packaged import sha256_file

    return sha256_file(Path(path))


def join_readings(*readings: float) -> float:
    """P(answerable) of several readers together (a probe and the cross-encoder, or a probe per view):
    the mean of their logits (fixed, not fitted: each is a calibrated P(answerable) on its own, and a
    fitted weight would need rows every reader read)."""
    def logit(p: float) -> float:
        p = min(max(p, 1e-6), 1 - 1e-6)
        return math.log(p / (1 - p))

    return 1.0 / (1.0 + math.exp(-sum(logit(p) for p in readings) / len(readings)))


def build_model(base_dir: str | Path):
    """The cross-encoder's network: the MiniLM encoder, mean-pooled (as it was trained to embed
    sentences), and one logit. Training and reading build it here, so they cannot drift apart."""
    import torch
    from transformers import AutoModel

    class CrossEncoder(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            # float32 whatever the file holds: a half-precision copy (carried to a GPU) must still train in fp32
            self.encoder = AutoModel.from_pretrained(str(base_dir), dtype=torch.float32)
            self.head = torch.nn.Linear(self.encoder.config.hidden_size, 1)

        def forward(self, input_ids, attention_mask, token_type_ids=None):
            out = self.encoder(input_ids=input_ids, attention_mask=attention_mask, token_type_ids=token_type_ids)
            mask = attention_mask.unsqueeze(-1).to(out.last_hidden_state.dtype)
            pooled = (out.last_hidden_state * mask).sum(1) / mask.sum(1).clamp(min=1.0)
            return self.head(pooled).squeeze(-1)

    return CrossEncoder()


def tokenize(tokenizer: Any, questions: list[str], sources: list[str]):
    return tokenizer(questions, sources, truncation="only_second", max_length=MAX_TOKENS,
                     padding=True, return_tensors="pt")


def trainable_names(model: Any, top_layers: int) -> list[str]:
    """The parameters fine-tuning changes (and the reader file holds): the top encoder layers and the head."""
    n = model.encoder.config.num_hidden_layers
    keep = tuple(f"encoder.encoder.layer.{i}." for i in range(n - top_layers, n)) + ("head.",)
    return [name for name, _ in model.named_parameters() if name.startswith(keep)]


def save_reader(path: str | Path, model: Any, names: list[str], meta: dict[str, Any]) -> Path:
    from safetensors.torch import save_file

    params = dict(model.named_parameters())
    tensors = {name: params[name].detach().to("cpu").half().contiguous() for name in names}
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    save_file(tensors, str(path), metadata={"meta": json.dumps(meta)})
    return path


class CrossReader:
    """A loaded cross-encoder reader; ``score`` is P(answerable) for one question and its sources."""

    def __init__(self, path: str | Path, base_dir: str | Path, threads: int = 0) -> None:
        import torch
        from safetensors import safe_open
        from transformers import AutoTokenizer

        path = Path(path)
        if not path.is_file():
            raise CrossReaderError(f"cross-encoder reader {path} not found; train one with `agentic-rag train reader`")
        try:
            with safe_open(str(path), framework="pt") as fh:
                self.meta = json.loads((fh.metadata() or {}).get("meta", "{}"))
                tensors = {name: fh.get_tensor(name) for name in fh.keys()}
        except Exception as exc:  # safetensors raises its own error types for a foreign file
            raise CrossReaderError(f"{path} is not a cross-encoder reader file: {exc}") from None
        if self.meta.get("base_sha256") != base_sha256(base_dir):
            raise CrossReaderError(f"{path} was fine-tuned from another base model than {base_dir}")
        self.model = build_model(base_dir).eval()
        own = dict(self.model.named_parameters())
        unknown = sorted(set(tensors) - set(own))
        if unknown:
            raise CrossReaderError(f"{path} holds tensors this network does not have: {unknown[:3]}")
        with torch.no_grad():
            for name, value in tensors.items():
                own[name].copy_(value.float())
        self.tokenizer = AutoTokenizer.from_pretrained(str(base_dir))
        if threads:  # once, at load, as the local generator sets them (llm/local.py)
            torch.set_num_threads(threads)
        self._lock = threading.Lock()

    def score(self, question: str, sources: str) -> float:
        import torch

        batch = tokenize(self.tokenizer, [question], [sources])
        with self._lock, torch.inference_mode():
            return float(torch.sigmoid(self.model(**batch))[0])


def load_cross_reader(path: str | Path | None = None, base_dir: str | Path | None = None, threads: int = 0) -> CrossReader:
    """The reader of ``path`` (default: the shipped one) on ``base_dir`` (default: the packaged MiniLM),
    loaded once per process."""
    from agentic_rag.retrieval.embeddings import packaged_embedding_path

    return _load(str(Path(path or PACKAGED_CROSS_READER).resolve()), str(base_dir or packaged_embedding_path()), threads)


_LOAD_LOCK = threading.Lock()


def _load(path: str, base_dir: str, threads: int) -> CrossReader:
    with _LOAD_LOCK:
        return _load_once(path, base_dir, threads)


@lru_cache(maxsize=4)
def _load_once(path: str, base_dir: str, threads: int) -> CrossReader:
    return CrossReader(path, base_dir, threads)
