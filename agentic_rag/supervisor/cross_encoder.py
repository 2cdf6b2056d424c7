"""Optional cross-encoder models: a relevance reranker (tier 1 of the confidence gate) and an NLI
grounding checker (layer 2 of the abstention stack).

No such weights ship offline, so both are off by default and load only from a local folder the user
names (``RERANKER_MODEL``, ``NLI_MODEL``), e.g. a saved ``cross-encoder/ms-marco-MiniLM-L-6-v2`` or
``cross-encoder/nli-deberta-v3-small``. Loading never touches a hub (``local_files_only``).
"""

from __future__ import annotations

import threading
from functools import lru_cache
from pathlib import Path

import numpy as np

_LOCK = threading.Lock()
RERANK_SCALE = 3.0  # reranker probabilities are mapped to the gate's 0-3 relevance scale


@lru_cache(maxsize=4)
def load_cross_encoder(path: str):
    from sentence_transformers import CrossEncoder

    folder = Path(path)
    if not (folder / "config.json").is_file():
        raise FileNotFoundError(f"cross-encoder folder {folder} has no config.json (save one with save_pretrained)")
    return CrossEncoder(str(folder), device="cpu", local_files_only=True)


def rerank_scores(path: str, query: str, texts: list[str]) -> list[float]:
    """Relevance of each text to the query on a 0-3 scale (sigmoid of a single-logit reranker, x3)."""
    if not texts:
        return []
    model = load_cross_encoder(path)
    with _LOCK:
        logits = np.asarray(model.predict([(query, t) for t in texts], apply_softmax=False), dtype=np.float64)
    if logits.ndim > 1:  # a multi-label model: use its last (positive) class
        logits = logits[:, -1]
    return [round(float(RERANK_SCALE / (1.0 + np.exp(-x))), 4) for x in logits]


def entailment_probability(path: str, premise: str, hypothesis: str) -> float:
    """P(entailment) from an NLI cross-encoder, read by its own label names (orders differ across models)."""
    model = load_cross_encoder(path)
    labels = {i: str(name).lower() for i, name in model.model.config.id2label.items()}
    entail = [i for i, name in labels.items() if name.startswith("entail")]
    if not entail:
        raise ValueError(f"NLI model {path} has no 'entailment' label (labels: {sorted(labels.values())})")
    with _LOCK:
        logits = np.asarray(model.predict([(premise, hypothesis)], apply_softmax=False), dtype=np.float64)[0]
    probs = np.exp(logits - logits.max())
    probs /= probs.sum()
    return round(float(probs[entail[0]]), 4)
