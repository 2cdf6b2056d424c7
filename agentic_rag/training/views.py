"""What the answerability probe may read from one prefill, beyond the last prompt token at one layer.

Why more than one vector: the shipped probe reads the last prompt token at one layer, and its AUC
stops short of what the refusal targets need. The same prefill also holds every layer, the tokens of
the evidence and of the question, and, once the draft is decoded, the state after the drafted answer.
``prefill_states`` keeps those four views per layer (mean-pooled over their tokens); ``feature_sets``
and ``ensembles`` name what a probe can be fitted on, so collecting, fitting and the report share one
definition. scripts/compare_probe_features.py collects the views and compares the sets.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

import numpy as np

STORED = ("last", "evidence", "question")  # the views a collection keeps per row (the draft view needs decoding)
# what a whole collection shares, kept in every chunk and checked on resume
META = ("layers", "n_layers", "dtype", "model_key", "packed")


def prefill_states(model: Any, messages: list, question: str, sources: str, draft_tokens: int = 0,
                   layers: tuple[int, ...] | None = None) -> dict[str, Any]:
    """Per layer (0 = embeddings): the last prompt token's state, the mean state over the sources'
    tokens and over the question's tokens, and with ``draft_tokens`` > 0 the state of the last token
    of a greedy draft of at most that many tokens (the position that predicts the draft's end).

    ``layers`` keeps those layers only, and the forward pass stops after the deepest of them: a probe
    that reads layer 18 of 28 needs two thirds of a prefill, which on a CPU is most of a training
    row's cost. ``model`` is a ChatLocalTransformers; the prompt is templated exactly as its
    generation call does."""
    import torch

    from agentic_rag.llm.local import _load, _to_chat, question_tokens, token_span

    net, tokenizer, lock = _load(model.model_path, model.dtype)
    text = tokenizer.apply_chat_template(_to_chat(messages), add_generation_prompt=True, tokenize=False)
    enc = tokenizer(text, return_offsets_mapping=True, add_special_tokens=False, return_tensors="pt")
    offsets = [tuple(map(int, o)) for o in enc.pop("offset_mapping")[0].tolist()]
    s0 = text.find(sources)
    if s0 < 0 or text.rfind(question) < s0 + len(sources):
        raise ValueError("the prompt does not hold the given sources and question")
    ev = token_span(offsets, s0, s0 + len(sources))
    qs = question_tokens(text, offsets, question)  # the span the answer-time reader averages
    if layers is not None:
        if draft_tokens:
            raise ValueError("a draft needs the whole forward pass: give draft_tokens or layers, not both")
        with lock, torch.inference_mode():
            hidden = _states_at(net, enc, layers)
        views = {"last": torch.stack([h[-1] for h in hidden]),
                 "evidence": torch.stack([h[ev[0]:ev[1]].mean(0) for h in hidden]),
                 "question": torch.stack([h[qs[0]:qs[1]].mean(0) for h in hidden])}
        arrays = {k: v.float().numpy().astype(np.float16) for k, v in views.items()}
        return {**arrays, "layers": np.array(layers), "prompt_tokens": int(enc["input_ids"].shape[1])}
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


class _StopForward(Exception):
    """Raised from the deepest layer a reading needs: the blocks above it are not computed."""


def _states_at(net: Any, enc: Any, layers: tuple[int, ...]) -> list[Any]:
    """The prompt's states [tokens, hidden] at each of ``layers``, numbered as ``output_hidden_states``
    numbers them (0 = the embeddings, L = the output of block L, the last one after the final norm)."""
    base = net.get_decoder()
    blocks = base.layers
    if not layers or not all(0 <= layer <= len(blocks) for layer in layers):
        raise ValueError(f"layers {list(layers)} are not all within 0..{len(blocks)} for this model")
    deepest, got = max(layers), {}

    def keep(layer: int):
        def hook(_module: Any, _args: Any, output: Any) -> None:
            got[layer] = (output[0] if isinstance(output, tuple) else output)[0]
            if layer == deepest and layer < len(blocks):
                raise _StopForward
        return hook

    modules = {layer: base.embed_tokens if layer == 0 else base.norm if layer == len(blocks) else blocks[layer - 1]
               for layer in set(layers)}
    handles = [module.register_forward_hook(keep(layer)) for layer, module in modules.items()]
    try:
        net(**enc, use_cache=False, logits_to_keep=1)
    except _StopForward:
        pass
    finally:
        for handle in handles:
            handle.remove()
    return [got[layer] for layer in layers]


def _end_ids(tokenizer: Any, net: Any) -> set[int]:
    ids = net.generation_config.eos_token_id
    ends = set(ids if isinstance(ids, list) else [ids]) | {tokenizer.eos_token_id}
    return {int(i) for i in ends if i is not None}


def at_layer(views: dict[str, np.ndarray], view: str, layer: int) -> np.ndarray:
    """[rows, hidden] of one view at one layer, from a collection of every layer or of some (``layers``)."""
    if "layers" not in views:
        return views[view][:, layer]
    where = np.flatnonzero(views["layers"] == layer)
    if not where.size:
        raise KeyError(f"layer {layer} was not collected (layers {views['layers'].tolist()})")
    return views[view][:, int(where[0])]


def probe_readings(probe: Any, views: dict[str, np.ndarray]) -> np.ndarray:
    """A probe's (or a probe set's) P(answerable) for every row of a collection, each view at its layer."""
    at = {view: at_layer(views, view, probe.layer).astype(np.float64) for view in probe.views}
    return np.array([probe.read({view: x[i] for view, x in at.items()}) for i in range(len(views["y"]))])


def _concat(*parts: tuple[str, int]) -> Callable[[dict[str, np.ndarray]], np.ndarray]:
    """The (view, layer) vectors side by side: [rows, hidden x len(parts)]."""
    return lambda a: np.concatenate([at_layer(a, view, layer) for view, layer in parts], axis=-1)


def _mean_over(name: str, lo: int, hi: int) -> Callable[[dict[str, np.ndarray]], np.ndarray]:
    return lambda a: np.mean([at_layer(a, name, layer).astype(np.float32) for layer in range(lo, hi + 1)], axis=0)


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
    """The answer prompt of a reader pair (`agentic-rag train pairs`): an evaluation pair keeps the
    exact prompt the agent sent; a training pair holds its rendered sources and question."""
    from langchain_core.messages import convert_to_messages

    from agentic_rag.prompts import messages_for

    if row.get("prompt"):  # [[message type, text], ...] as the pairs step wrote it
        return convert_to_messages([tuple(m) for m in row["prompt"]])
    return messages_for("answer", sources=row["sources"], question=row["question"], query_time="unknown")


def done_ids(folder: Path) -> set[str]:
    """The pair ids a (possibly stopped) collection in ``folder`` already holds."""
    return {str(i) for chunk in sorted(Path(folder).glob("chunk_*.npz")) for i in np.load(chunk)["ids"]}


def collect_views(model: Any, rows: Iterable[dict[str, Any]], folder: Path, chunk: int = 25, progress: bool = False,
                  layers: tuple[int, ...] | None = None, views: tuple[str, ...] = STORED, total: int | None = None,
                  packed: bool = False) -> int:
    """Read ``views`` of each pair (at ``layers`` only, or at every layer) and save them ``chunk`` rows at a
    time, so a stopped run loses at most one chunk and a rerun skips what is saved. ``rows`` may be built
    as they are read (a pair's prompt costs a retrieval); ``total`` is how many the progress bar counts
    to. ``packed`` keeps each value in one byte (``pack``): a collection small enough to commit, so that
    one which takes longer than a session goes on in the next. A folder is one collection: resuming it
    with another dtype, other layers, views or packing is refused. Returns the rows read."""
    from tqdm import tqdm

    from agentic_rag.llm.packaged import converted_source_key

    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    meta = {"layers": np.array(layers if layers is not None else [], dtype=int), "dtype": np.array(model.dtype),
            "n_layers": np.array(_n_layers(model)), "packed": np.array(packed),
            "model_key": np.array(converted_source_key(Path(model.model_path)) or Path(model.model_path).name)}
    _check_same_collection(folder, meta, views)
    done = done_ids(folder)
    batch: list[dict[str, Any]] = []
    bar = tqdm(total=total, initial=len(done), desc="prefill views", unit="row", disable=not progress, smoothing=0.05)
    read_now = 0
    for row in rows:
        if row["id"] in done:
            continue
        t0 = time.perf_counter()
        read = prefill_states(model, pair_messages(row), row["question"], row["sources"], layers=layers)
        batch.append({**{v: read[v] for v in views}, "ids": row["id"], "y": int(row["label"]), "groups": row["group"],
                      "sources": row["source"], "prompt_tokens": read["prompt_tokens"],
                      "ms": round((time.perf_counter() - t0) * 1000)})
        done.add(row["id"])
        read_now += 1
        bar.update(1)
        if len(batch) == chunk:
            _save_chunk(folder, batch, views, meta)
            batch = []
    if batch:
        _save_chunk(folder, batch, views, meta)
    bar.close()
    return read_now


def pack(x: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``x`` [rows, ...] as one byte per value: (codes, lo, step) with value = lo + step * code, lo and step per
    (layer, dimension) over these rows (a chunk's). The rounding, at most step / 2, is under 1% of a
    dimension's spread across the rows: far below what a linear probe on standardised features can tell apart."""
    x = x.astype(np.float32)
    lo = x.min(axis=0)
    step = np.maximum(x.max(axis=0) - lo, 1e-12) / 255
    return np.rint((x - lo) / step).astype(np.uint8), lo, step.astype(np.float32)


def _n_layers(model: Any) -> int:
    from agentic_rag.llm.local import _load

    return int(_load(model.model_path, model.dtype)[0].config.num_hidden_layers)


def _check_same_collection(folder: Path, meta: dict[str, np.ndarray], views: tuple[str, ...]) -> None:
    first = next(iter(sorted(folder.glob("chunk_*.npz"))), None)
    if first is None:
        return
    with np.load(first) as old:
        # a collection from before these were kept: every layer, computed in bfloat16
        was = {k: old[k] if k in old else {"layers": np.array([], dtype=int), "dtype": np.array("bfloat16"),
                                           "packed": np.array(False)}.get(k) for k in META}
        kept = tuple(v for v in STORED if v in old)
    differ = [f"{k} {was[k].tolist()} (now {meta[k].tolist()})" for k in META
              if was[k] is not None and was[k].tolist() != meta[k].tolist()]
    if kept != tuple(v for v in STORED if v in views):
        differ.append(f"views {list(kept)} (now {list(views)})")
    if differ:
        raise ValueError(f"{folder} holds a collection of other {', '.join(differ)}: resume it as it was begun, "
                         "or collect into another folder")


def _save_chunk(folder: Path, rows: list[dict[str, Any]], views: tuple[str, ...], meta: dict[str, np.ndarray]) -> None:
    """One chunk file, written under a temporary name and renamed: a kill never leaves half a chunk."""
    chunks = sorted(folder.glob("chunk_*.npz"))
    n = len(chunks)
    arrays = {v: np.stack([r[v] for r in rows]) for v in views}
    if bool(meta["packed"]):
        for v in views:
            arrays[v], arrays[f"{v}_lo"], arrays[f"{v}_step"] = pack(arrays[v])
    per_row = {k: np.array([r[k] for r in rows]) for k in ("ids", "y", "groups", "sources", "prompt_tokens", "ms")}
    tmp = folder / f".chunk_{n:04d}.tmp.npz"
    (np.savez_compressed if bool(meta["packed"]) else np.savez)(tmp, **arrays, **per_row, **meta)
    os.replace(tmp, folder / f"chunk_{n:04d}.npz")


def load_views(folder: Path) -> dict[str, np.ndarray]:
    """Every saved row of a collection, each array stacked over its chunks (what the collection shares,
    its layers and dtype, once)."""
    chunks = sorted(Path(folder).glob("chunk_*.npz"))
    if not chunks:
        raise FileNotFoundError(f"{folder}: no views collected there (run the collect step)")
    parts = [dict(np.load(c)) for c in chunks]
    for part in parts:  # packed: one byte per value, back to numbers by the chunk's own scale
        for view in [v for v in STORED if f"{v}_lo" in part]:
            part[view] = part.pop(f"{view}_lo") + part.pop(f"{view}_step") * part[view].astype(np.float32)
    out = {k: np.concatenate([p[k] for p in parts]) for k in parts[0] if k not in META}
    return out | {k: parts[0][k] for k in META if k in parts[0] and (k != "layers" or parts[0][k].size)}


def named_views(specs: list[str]) -> dict[str, dict[str, np.ndarray]]:
    """Collections named on a command line as NAME=FOLDER (the test splits a comparison scores on)."""
    out = {}
    for spec in specs:
        name, _, folder = spec.partition("=")
        if not folder:
            raise ValueError(f"{spec!r}: write NAME=FOLDER")
        out[name] = load_views(Path(folder))
    return out
