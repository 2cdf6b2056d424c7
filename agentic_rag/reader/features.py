"""What the answerability probe may read from one prefill, beyond the last prompt token at one layer.

Why more than one vector: the shipped probe reads the last prompt token at one layer, and its AUC
stops short of what the refusal targets need. The same prefill also holds every layer, the tokens of
the evidence and of the question, and, once the draft is decoded, the state after the drafted answer.
``prefill_states`` keeps those four views per layer (mean-pooled over their tokens); ``feature_sets``
and ``ensembles`` name what a probe can be fitted on, so collecting, fitting and the report share one
definition. scripts/compare_probe_features.py collects the views and compares the sets.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

import numpy as np

STORED = ("last", "evidence", "question")  # the views a collection keeps per row (the draft view needs decoding)


def token_span(offsets: list[tuple[int, int]], start: int, end: int) -> tuple[int, int]:
    """The tokens whose characters fall inside [start, end) of the templated prompt text."""
    inside = [i for i, (a, b) in enumerate(offsets) if b > a >= start and b <= end]
    if not inside:
        raise ValueError(f"no token lies inside characters {start}..{end} of the prompt")
    return inside[0], inside[-1] + 1


def prefill_states(model: Any, messages: list, question: str, sources: str, draft_tokens: int = 0) -> dict[str, Any]:
    """Per layer (0 = embeddings): the last prompt token's state, the mean state over the sources'
    tokens and over the question's tokens, and with ``draft_tokens`` > 0 the state of the last token
    of a greedy draft of at most that many tokens (the position that predicts the draft's end).

    ``model`` is a ChatLocalTransformers; the prompt is templated exactly as its generation call does."""
    import torch

    from agentic_rag.llm.local import _load, _to_chat

    net, tokenizer, lock = _load(model.model_path, model.dtype)
    text = tokenizer.apply_chat_template(_to_chat(messages), add_generation_prompt=True, tokenize=False)
    enc = tokenizer(text, return_offsets_mapping=True, add_special_tokens=False, return_tensors="pt")
    offsets = [tuple(map(int, o)) for o in enc.pop("offset_mapping")[0].tolist()]
    s0 = text.find(sources)
    q0 = text.find(question, s0 + len(sources))
    if s0 < 0 or q0 < 0:
        raise ValueError("the prompt does not hold the given sources and question")
    ev = token_span(offsets, s0, s0 + len(sources))
    qs = token_span(offsets, q0, q0 + len(question))
    with lock, torch.inference_mode():
        out = net(**enc, output_hidden_states=True, use_cache=draft_tokens > 0)
        hidden = out.hidden_states
        views = {
            "last": torch.stack([h[0, -1] for h in hidden]),
            "evidence": torch.stack([h[0, ev[0]:ev[1]].mean(0) for h in hidden]),
            "question": torch.stack([h[0, qs[0]:qs[1]].mean(0) for h in hidden]),
        }
        draft: list[int] = []
        if draft_tokens > 0:
            past, logits, ends = out.past_key_values, out.logits[0, -1], _end_ids(tokenizer, net)
            state = views["last"]
            for _ in range(draft_tokens):
                token = int(logits.argmax())
                if token in ends:
                    break
                draft.append(token)
                step = net(input_ids=torch.tensor([[token]]), cache=past, use_cache=True,
                           output_hidden_states=True)
                past, logits = step.past_key_values, step.logits[0, -1]
                state = torch.stack([h[0, -1] for h in step.hidden_states])
            views["draft"] = state
    arrays = {k: v.float().numpy().astype(np.float16) for k, v in views.items()}
    return {**arrays, "draft_text": tokenizer.decode(draft), "prompt_tokens": int(enc["input_ids"].shape[1])}


def _end_ids(tokenizer: Any, net: Any) -> set[int]:
    ids = net.generation_config.eos_token_id
    ends = set(ids if isinstance(ids, list) else [ids]) | {tokenizer.eos_token_id}
    return {int(i) for i in ends if i is not None}


def _concat(*parts: tuple[str, int]) -> Callable[[dict[str, np.ndarray]], np.ndarray]:
    """The (view, layer) vectors side by side: [rows, hidden x len(parts)]."""
    return lambda a: np.concatenate([a[view][:, layer] for view, layer in parts], axis=-1)


def _mean_over(name: str, lo: int, hi: int) -> Callable[[dict[str, np.ndarray]], np.ndarray]:
    return lambda a: a[name][:, lo:hi + 1].astype(np.float32).mean(axis=1)


def feature_sets(layer: int, n_layers: int) -> dict[str, Callable[[dict[str, np.ndarray]], np.ndarray]]:
    """The feature sets compared, around the shipped probe's ``layer`` of a model with ``n_layers``
    blocks. Each maps the stacked views ({view: [rows, layers + 1, hidden]}) to [rows, features]."""
    early, late = max(layer - 6, 1), min(layer + 6, n_layers)
    return {
        f"last@{layer}": _concat(("last", layer)),
        f"last@{early},{layer},{late}": _concat(("last", early), ("last", layer), ("last", late)),
        f"last mean@{early}-{late}": _mean_over("last", early, late),
        f"evidence@{layer}": _concat(("evidence", layer)),
        f"question@{layer}": _concat(("question", layer)),
        f"last+evidence+question@{layer}": _concat(("last", layer), ("evidence", layer), ("question", layer)),
        f"draft@{layer}": _concat(("draft", layer)),
        f"last+draft@{layer}": _concat(("last", layer), ("draft", layer)),
    }


def ensembles(layer: int) -> dict[str, tuple[str, ...]]:
    """Probes read side by side and joined by their mean logit (as ``join_readings`` joins two
    readers): each is fitted on its own view, so the pair has no more weights per row than either."""
    return {f"last@{layer} + question@{layer}, mean logit": (f"last@{layer}", f"question@{layer}")}


def pair_messages(row: dict[str, Any]) -> list:
    """The answer prompt of a reader pair (scripts/train_reader.py pairs): an evaluation pair keeps the
    exact prompt the agent sent; a training pair holds its rendered sources and question."""
    from langchain_core.messages import convert_to_messages

    from agentic_rag.prompts import messages_for

    if row.get("prompt"):  # [[message type, text], ...] as the pairs step wrote it
        return convert_to_messages([tuple(m) for m in row["prompt"]])
    return messages_for("answer", sources=row["sources"], question=row["question"], query_time="unknown")


def done_ids(folder: Path) -> set[str]:
    """The pair ids a (possibly stopped) collection in ``folder`` already holds."""
    return {str(i) for chunk in sorted(Path(folder).glob("chunk_*.npz")) for i in np.load(chunk)["ids"]}


def collect_views(model: Any, rows: list[dict[str, Any]], folder: Path, chunk: int = 25,
                  progress: Callable[[list], Iterable] = iter) -> None:
    """Read the stored views of each pair and save them ``chunk`` rows at a time, so a stopped run
    loses at most one chunk and a rerun skips what is saved."""
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    done, batch = done_ids(folder), []
    for row in progress([r for r in rows if r["id"] not in done]):
        t0 = time.perf_counter()
        views = prefill_states(model, pair_messages(row), row["question"], row["sources"])
        batch.append({**{v: views[v] for v in STORED}, "ids": row["id"], "y": int(row["label"]), "groups": row["group"],
                      "sources": row["source"], "prompt_tokens": views["prompt_tokens"],
                      "ms": round((time.perf_counter() - t0) * 1000)})
        if len(batch) == chunk:
            _save_chunk(folder, batch)
            batch = []
    if batch:
        _save_chunk(folder, batch)


def _save_chunk(folder: Path, rows: list[dict[str, Any]]) -> None:
    n = len(list(folder.glob("chunk_*.npz")))
    arrays = {v: np.stack([r[v] for r in rows]) for v in STORED}
    meta = {k: np.array([r[k] for r in rows]) for k in ("ids", "y", "groups", "sources", "prompt_tokens", "ms")}
    np.savez(folder / f"chunk_{n:04d}.npz", **arrays, **meta)


def load_views(folder: Path) -> dict[str, np.ndarray]:
    """Every saved row of a collection, each array stacked over its chunks."""
    chunks = sorted(Path(folder).glob("chunk_*.npz"))
    if not chunks:
        raise FileNotFoundError(f"{folder}: no views collected there (run the collect step)")
    parts = [dict(np.load(c)) for c in chunks]
    return {k: np.concatenate([p[k] for p in parts]) for k in parts[0]}

