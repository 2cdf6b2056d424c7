"""Signals tried for the decision before any is built into the graph (issue 70).

Each is read from what a run already kept (a result row's question, short answer and the chunks it
cited) or, for self-consistency, from replies sampled afterwards from the run's own answer prompts, so
leave-one-family-out (scripts/bench_lofo.py) can say whether a signal raises the worst left-out family
before it costs a question anything. One that does is then built into the graph's signals.

The three read the answer, not the evidence's layout: a short answer stated in one cited sentence does
not depend on how many distractor paragraphs surround it, nor on whether the page is HTML; agreement
among sampled drafts depends on the model and the question alone.
"""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any, Iterable

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage

AGREEMENT_F1 = 0.5  # token F1 (the judge's) from which a sampled draft's short answer agrees with the draft's
STATED_WINDOW = 1  # sentences either side of the one holding the answer, where the question's terms may stand


def _short(row: dict[str, Any]) -> str | None:
    """The draft's short answer, or None where it is yes/no (it is never written in a source)."""
    short = (row.get("short_answer") or "").strip(" .,;:\"'")
    return None if not short or short.lower() in ("yes", "no") else short


def _holds(short: str, sentence: str) -> bool:
    from agentic_rag.baug.signals import claim_in
    from agentic_rag.text import fold

    return fold(short) in fold(sentence) or claim_in(short, sentence)


def answer_in_sources(row: dict[str, Any]) -> float | None:
    """1 when a chunk the draft cited holds its short answer, else 0 (None: a yes/no answer)."""
    short = _short(row)
    if short is None:
        return None
    return float(any(_holds(short, text) for text in (row.get("quoted_chunks") or {}).values()))


def answer_stated(row: dict[str, Any], window: int = STATED_WINDOW) -> float | None:
    """The largest share of the question's content words (by stem) found within ``window`` sentences of a
    cited sentence holding the short answer: the answer stated together with what was asked. 0 when no cited
    sentence holds it; None for a yes/no answer."""
    from agentic_rag.baug.signals import unmatched_question_terms
    from agentic_rag.text import split_sentences

    short = _short(row)
    if short is None:
        return None
    terms = len(unmatched_question_terms(row["query"], ""))  # the question's content words
    best = 0.0
    for text in (row.get("quoted_chunks") or {}).values():
        sentences = split_sentences(text, loose=True) or [text]
        for i, sentence in enumerate(sentences):
            if _holds(short, sentence):
                near = " ".join(sentences[max(0, i - window): i + window + 1])
                best = max(best, 1 - len(unmatched_question_terms(row["query"], near)) / terms if terms else 1.0)
    return round(best, 4)


def self_consistency(row: dict[str, Any], samples: list[str] | None) -> float | None:
    """The share of sampled drafts whose short answer agrees with the draft's (token F1 >= ``AGREEMENT_F1``,
    both normalised as the judge normalises them). None without samples."""
    from agentic_rag.eval.judge import token_f1
    from agentic_rag.generator.short_answer import short_answer

    if not samples:
        return None
    mine = row.get("short_answer") or short_answer(row["query"], row["draft"])
    agree = [token_f1(short_answer(row["query"], s), mine) >= AGREEMENT_F1 for s in samples]
    return round(sum(agree) / len(agree), 4)


# each candidate: what it reads from a result row and the sampled replies of its draft (None where absent)
CANDIDATES = {
    "answer_in_sources": lambda row, samples: answer_in_sources(row),
    "answer_stated": lambda row, samples: answer_stated(row),
    "self_consistency": lambda row, samples: self_consistency(row, samples),
}


def candidate_readings(rows: Iterable[dict[str, Any]], samples: dict[str, list[str]] | None = None) -> dict[str, dict[str, Any]]:
    """Every candidate's reading of every row, by question id; self-consistency only where samples exist."""
    samples = samples or {}
    return {row["id"]: {name: read(row, samples.get(row["id"])) for name, read in CANDIDATES.items()
                        if name != "self_consistency" or samples} for row in rows}


def _message(data: dict[str, Any]) -> BaseMessage:
    kwargs = data["kwargs"]
    kind = {"system": SystemMessage, "human": HumanMessage, "ai": AIMessage}[kwargs["type"]]
    return kind(content=kwargs["content"])


def cached_answer_prompts(cache: Path) -> dict[str, list[list[BaseMessage]]]:
    """The answer prompts a run sent its in-process generator, by the reply it got (stripped), read from the
    run's LLM cache (``LLM_CACHE_PATH``): an answer call is the one that asked for log-probabilities and the
    prompt's hidden state (the reader's and verifier's calls ask for neither)."""
    out: dict[str, list[list[BaseMessage]]] = {}
    with sqlite3.connect(f"file:{cache}?mode=ro", uri=True) as db:
        for prompt, llm, response in db.execute("SELECT prompt, llm, response FROM full_llm_cache"):
            if "prompt_state_question" not in llm or "('logprobs', True)" not in llm:
                continue
            reply = json.loads(response)["kwargs"]["text"].strip()
            out.setdefault(reply, []).append([_message(m) for m in json.loads(prompt)])
    return out


def answer_prompt(row: dict[str, Any], prompts: dict[str, list[list[BaseMessage]]]) -> list[BaseMessage] | None:
    """The prompt that gave this row's draft: the reply is the draft and the prompt asks the row's question
    (the last such, the round the draft came from)."""
    found = [m for m in prompts.get((row.get("draft") or "").strip(), []) if row["query"] in str(m[-1].content)]
    return found[-1] if found else None


SAMPLES = 4  # sampled drafts per draft: what self-consistency compares
SAMPLE_TEMPERATURE = 0.7
SAMPLE_MAX_TOKENS = 40  # a short answer's sentence; longer replies are cut, their first sentence is what counts


def read_samples(path: Path) -> dict[str, dict[str, Any]]:
    """The sampled replies written so far (``sample_drafts``), by question id."""
    if not path.is_file():
        return {}
    return {r["id"]: r for r in (json.loads(line) for line in path.read_text().splitlines() if line.strip())}


def sample_drafts(rows: list[dict[str, Any]], prompts: dict[str, list[list[BaseMessage]]], model: Any, out: Path,
                  n: int = SAMPLES, temperature: float = SAMPLE_TEMPERATURE, max_new_tokens: int = SAMPLE_MAX_TOKENS,
                  progress=print) -> dict[str, int]:
    """For each drafted row, ``n`` replies sampled from the answer prompt that gave its draft, sharing its prefill
    (``ChatLocalTransformers.sample_replies``), appended to ``out`` (JSON lines: id, samples, seconds, tokens) as
    they come, so an interrupted study resumes where it stopped. The seed is the row's id: a rerun samples the
    same replies. A row whose prompt is not in the cache is written with no samples. Returns the counts."""
    import time
    import zlib

    done = read_samples(out)
    todo = [r for r in rows if (r.get("draft") or "").strip() and r["id"] not in done]
    counts = {"sampled": 0, "no_prompt": 0, "already": len(done)}
    started = time.monotonic()
    with out.open("a", encoding="utf-8") as f:
        for i, row in enumerate(todo, 1):
            messages = answer_prompt(row, prompts)
            record: dict[str, Any] = {"id": row["id"], "samples": None}
            if messages is None:
                counts["no_prompt"] += 1
            else:
                t = time.monotonic()
                texts, usage = model.sample_replies(messages, n, temperature, max_new_tokens, seed=zlib.crc32(row["id"].encode()))
                record.update(samples=texts, seconds=round(time.monotonic() - t, 3), tokens=usage)
                counts["sampled"] += 1
            f.write(json.dumps(record) + "\n")
            f.flush()
            if progress and (i % 10 == 0 or i == len(todo)):
                progress(f"{i}/{len(todo)} drafts sampled, {_time_left(started, i, len(todo))}")
    return counts


def _time_left(started: float, done: int, total: int) -> str:
    """How long the rest of a study's rows will take at the pace so far (``started``: ``time.monotonic()``)."""
    import time

    return f"about {(time.monotonic() - started) / done * (total - done) / 60:.0f} min left"


def collect_prompt_states(rows: list[dict[str, Any]], prompts: dict[str, list[list[BaseMessage]]], model: Any, out: Path,
                          layer: int | None = None, progress=print) -> dict[str, int]:
    """The answer prompt's states at ``layer`` (by default the layer of the probe the model ships) for each
    drafted row (the last token's and the question tokens' mean, as the reader reads them), saved to ``out``
    (.npz: ids, state, question_state), so the reader can be refitted per left-out family
    (``transfer.reader_refit``). Rows already in ``out`` are kept."""
    import time

    import numpy as np

    from agentic_rag.reader.probe import load_probe, packaged_probe_for

    if layer is None:
        layer = load_probe(packaged_probe_for(model.model_path)).layer

    have = dict(np.load(out, allow_pickle=False)) if out.is_file() else {"ids": np.array([], dtype=str)}
    ids, last, question = list(have["ids"]), list(have.get("state", [])), list(have.get("question_state", []))
    kept = set(ids)
    todo = [r for r in rows if (r.get("draft") or "").strip() and r["id"] not in kept]
    counts = {"read": 0, "no_prompt": 0, "already": len(ids)}

    def save() -> None:
        np.savez(out, ids=np.array(ids), state=np.stack(last), question_state=np.stack(question), layer=layer)

    started = time.monotonic()
    for i, row in enumerate(todo, 1):
        messages = answer_prompt(row, prompts)
        if messages is None:
            counts["no_prompt"] += 1
            continue
        states, _ = model.prompt_state(messages, layer, row["query"])
        ids.append(row["id"])
        last.append(np.asarray(states["last"], dtype=np.float32))
        question.append(np.asarray(states["question"], dtype=np.float32))
        counts["read"] += 1
        if i % 25 == 0 and i < len(todo):  # the last rows are saved once, below
            save()
            if progress:
                progress(f"{i}/{len(todo)} prompts read, {_time_left(started, i, len(todo))}")
    if counts["read"]:
        save()
    return counts
