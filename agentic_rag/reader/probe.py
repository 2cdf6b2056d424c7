"""Answerability probe: a linear read-out of the generator's own hidden state.

Why this layer exists: SQuAD 2.0-style unanswerable questions change one entity or add a negation,
and the 0.5B generator answers them from a real, quotable sentence, so every check on the *text*
(verified quotes, overlap, faithfulness, anchors) passes. The model's hidden state at the end of the
prompt still encodes whether the context answers the question (Slobodkin et al., 2023, "The Curious
Case of Hallucinatory (Un)answerability"); a logistic regression on that one vector reads it out.
It costs no extra tokens: the state comes from the generation call's own prefill. A probe is fitted
offline (training/fitting.py, run by `agentic-rag train probe`); this module only reads it, and
reader/read.py decides whose prefill it reads.

A probe belongs to one model: its file records the model's source key (the GGUF SHA-256 of the
packaged model) and hidden size, and is refused for any other model. Each packaged generator ships
its own probe; the one read is chosen by the source key of the folder the generator loads from.
"""

from __future__ import annotations

import json
import math
from dataclasses import asdict, dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any, Mapping, Sequence

import numpy as np

from agentic_rag.errors import UserError
from agentic_rag.prompts import answer_messages
from agentic_rag.reader import PROBES_DIR
from agentic_rag.state import support_of
from agentic_rag.telemetry import parse_json

PACKAGED_PROBE = PROBES_DIR / "answerability-qwen2.5-coder-0.5b.json"
# what a probe may read of the answer prompt's prefill at its layer: the last token's state, or the mean
# state over the question's tokens (which reads multi-hop questions better: benchmarks/probe/features.md)
VIEWS = ("last", "question")


def asked_question(views: Sequence[str], question: str) -> str:
    """The question a prefill must locate for a probe of ``views`` ("" where none reads its tokens)."""
    return question if "question" in views else ""


class ProbeMismatchError(UserError, ValueError):
    """The probe was trained on another model's hidden states."""


@dataclass
class AnswerabilityProbe:
    layer: int  # index into hidden_states: 0 = embeddings, n = output of block n
    mean: list[float]
    scale: list[float]
    coef: list[float]
    intercept: float
    model_key: str  # the source key of the model whose states it reads
    hidden_size: int
    meta: dict[str, Any] = field(default_factory=dict)
    view: str = "last"  # one of VIEWS

    @property
    def views(self) -> tuple[str, ...]:
        return (self.view,)

    def read(self, states: Mapping[str, Sequence[float]]) -> float:
        """P(the context answers the question) from a prefill's states at ``layer``, by view."""
        return self.score(states[self.view])

    def score(self, state: Sequence[float]) -> float:
        """P(the context answers the question) for one state of its view at ``layer``."""
        x = np.asarray(state, dtype=np.float64)
        if x.shape != (self.hidden_size,):
            raise ProbeMismatchError(f"probe expects a state of size {self.hidden_size}, got {x.shape}")
        z = float(((x - self._mean) / self._scale) @ self._coef + self.intercept)
        return 1.0 / (1.0 + math.exp(-z)) if z > -700 else 0.0

    def __post_init__(self) -> None:
        self._mean = np.asarray(self.mean, dtype=np.float64)
        self._scale = np.asarray(self.scale, dtype=np.float64)
        self._coef = np.asarray(self.coef, dtype=np.float64)
        if not (len(self.mean) == len(self.scale) == len(self.coef) == self.hidden_size):
            raise ValueError("probe file is inconsistent: mean, scale and coef must all have hidden_size entries")
        if self.view not in VIEWS:
            raise ValueError(f"probe file reads view {self.view!r}; a probe reads one of {', '.join(VIEWS)}")

    def check_model(self, model_key: str | None, hidden_size: int | None = None) -> None:
        if model_key != self.model_key or (hidden_size is not None and hidden_size != self.hidden_size):
            raise ProbeMismatchError(
                f"this answerability probe reads the states of model {self.model_key[:12]}... "
                f"(hidden size {self.hidden_size}); the configured model is {str(model_key)[:12]}... "
                f"(hidden size {hidden_size}). Train one for it (`agentic-rag train views`, then `train probe`) or set PROBE_ENABLED=false."
            )

    def to_dict(self) -> dict[str, Any]:
        return {k: v for k, v in asdict(self).items() if not k.startswith("_")}

    def saved(self) -> dict[str, Any]:
        """As a file keeps it: the weights to six places."""
        data = self.to_dict()
        for key in ("mean", "scale", "coef"):
            data[key] = [round(float(v), 6) for v in data[key]]
        return data

    def save(self, path: str | Path) -> Path:
        return _write(path, self.saved())


@dataclass
class ProbeSet:
    """Probes of one model at one layer, each reading its own view of the same prefill, their readings
    joined by the mean of their logits as two readers are (``join_readings``). Fitted one view at a time,
    the set has no more weights per row than its largest member; read, it costs no more than one
    prefill. A file holds one probe or a set; ``load_probe`` returns either, and both read alike."""

    members: list[AnswerabilityProbe]
    meta: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        first = self.members[0] if self.members else None
        def shape(m):
            return (m.layer, m.model_key, m.hidden_size)

        if first is None or any(shape(m) != shape(first) for m in self.members):
            raise ValueError("a probe set needs probes of one model, layer and hidden size")
        if len(set(self.views)) != len(self.members):
            raise ValueError(f"a probe set reads each view once (it reads {', '.join(self.views)})")

    layer = property(lambda self: self.members[0].layer)
    model_key = property(lambda self: self.members[0].model_key)
    hidden_size = property(lambda self: self.members[0].hidden_size)

    @property
    def views(self) -> tuple[str, ...]:
        return tuple(m.view for m in self.members)

    def read(self, states: Mapping[str, Sequence[float]]) -> float:
        from agentic_rag.reader.cross_encoder import join_readings

        return join_readings(*(m.read(states) for m in self.members))

    def check_model(self, model_key: str | None, hidden_size: int | None = None) -> None:
        self.members[0].check_model(model_key, hidden_size)

    def save(self, path: str | Path) -> Path:
        return _write(path, {"members": [m.saved() for m in self.members], "meta": self.meta})


def _write(path: str | Path, data: dict[str, Any]) -> Path:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data, indent=1) + "\n")
    return path


def load_probe(path: str | Path | None) -> AnswerabilityProbe | ProbeSet:
    return _load_probe(str(Path(path or PACKAGED_PROBE).resolve()))


@lru_cache(maxsize=4)
def _load_probe(path: str) -> AnswerabilityProbe | ProbeSet:
    p = Path(path)
    if not p.is_file():
        raise FileNotFoundError(f"answerability probe {p} not found (PROBE_PATH); train one with `agentic-rag train probe`")
    try:
        data = parse_json(p.read_text())
        if isinstance(data, dict) and "members" in data:
            return ProbeSet([AnswerabilityProbe(**m) for m in data["members"]], data.get("meta", {}))
        return AnswerabilityProbe(**data)
    except (json.JSONDecodeError, TypeError) as exc:
        raise ValueError(f"{p} is not an answerability probe file: {exc}") from exc


def configured_probe_path(settings: Any, model_path: str) -> Path:
    """The probe file a run reads: ``PROBE_PATH``, else the shipped probe of the loaded model."""
    return Path(settings.baug.PROBE_PATH) if settings.baug.PROBE_PATH else packaged_probe_for(model_path)


@lru_cache(maxsize=8)
def packaged_probe_for(model_path: str) -> Path:
    """The shipped probe of the packaged model a folder was converted from (the 0.5B's otherwise,
    which the model check then turns down for a foreign model)."""
    from agentic_rag.llm.packaged import converted_source_key

    return packaged_probe_for_key(converted_source_key(Path(model_path))) or PACKAGED_PROBE


def packaged_probe_for_key(source_key: str | None) -> Path | None:
    """The shipped probe of the packaged model with this source key (None for a model that ships none)."""
    from agentic_rag.llm.packaged import packaged_model_for_key

    spec = packaged_model_for_key(source_key)
    return PROBES_DIR / spec.probe_file if spec else None


@lru_cache(maxsize=8)
def _mismatch(probe_path: str, model_path: str, hidden_size: int) -> str:
    """Why the probe does not fit the model ("" when it does), checked once per pair: the check reads
    the model folder's conversion marker, which the answer call should not re-read per question."""
    from agentic_rag.llm.packaged import converted_source_key

    try:
        load_probe(probe_path).check_model(converted_source_key(Path(model_path)), hidden_size)
    except ProbeMismatchError as exc:
        return str(exc)
    return ""


def quote_bundle(sentences: list[dict[str, Any]], bundle: dict[str, Any]) -> dict[str, Any]:
    """An evidence bundle that holds only the sentences the draft quotes, grouped under their own
    source's name and date and renumbered as the generator numbers sources."""
    by_source: dict[Any, list[str]] = {}
    for row in sentences:
        for n, quote in support_of(row) if row.get("supported") else ():
            quotes = by_source.setdefault(n, [])
            if quote not in quotes:
                quotes.append(quote)
    meta = {p["n"]: p for p in bundle.get("passages", [])}
    keep = ("page_name", "page_url", "page_last_modified")
    return {"passages": [
        {**{k: meta.get(n, {}).get(k) for k in keep}, "n": i, "text": " ".join(quotes)}
        for i, (n, quotes) in enumerate(by_source.items(), 1)
    ]}


def quote_probe_messages(question: str, sentences: list[dict[str, Any]], bundle: dict[str, Any]) -> list | None:
    """The answer prompt with the quoted sentences as its only sources (None when nothing is quoted).

    Why the answer prompt: the probe was trained on the states of that prompt, so on this one it still
    reads "do these sources answer this question", now asked of the quoted sentences alone."""
    quoted = quote_bundle(sentences, bundle)
    return answer_messages(question, quoted) if quoted["passages"] else None
