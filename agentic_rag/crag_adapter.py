"""Adapter for the official CRAG starter kit (``local_evaluation.py`` imports ``UserModel``).

Import this class in the kit's ``models/user_config.py``::

    from agentic_rag.crag_adapter import UserModel

The kit calls ``get_batch_size()`` and then ``batch_generate_answer(batch)`` with a dict of lists
(``interaction_id``, ``query``, ``search_results``, ``query_time``) and takes one answer string per
question. The adapter keeps the kit's rules:

- everything a question needs is loaded and run once in ``__init__``, which the kit does not time,
  so no batch pays for loading;
- each question has ``CRAG_SECONDS_PER_QUERY`` (the kit's per-query limit) less ``CRAG_MARGIN_S`` as a
  hard deadline: embedding and local decoding stop there, and a question cut by it answers
  "i don't know", never with the partial text the clock left (an answer that finished in time is
  the one an unconstrained run gives);
- a question that fails answers "i don't know" and is logged (a malformed record in one line, like any
  bad record; an unexpected error with its traceback); the batch goes on;
- answers are cut to ``KIT_ANSWER_TOKENS`` tokens of the kit's own tokenizer, at a word boundary, so
  the kit's trim does not cut them again;
- per-question indexes and telemetry go to ``CRAG_ARTIFACTS_DIR``, not the kit's working directory.

Like the CLI, this module is an entry point (the kit imports it), so it sits above ``graphs/`` and
imports it; nothing else in ``agentic_rag`` does (docs/architecture.md).
"""

from __future__ import annotations

import logging
import time
from typing import Any

from pydantic import ValidationError

import graphs  # noqa: F401  (the app layer: registers the agent and baseline graphs with the runner)
from agentic_rag.budget import DeadlineExceeded, hard_deadline
from agentic_rag.configuration import Settings
from agentic_rag.datasets.crag import CragRecord, why_bad
from agentic_rag.ingest.ingest import index_for_record
from agentic_rag.runner import answer, warm_up
from agentic_rag.telemetry import write_row

CRAG_IDK = "i don't know"
KIT_ANSWER_TOKENS = 75  # the kit trims every prediction to this many of its tokenizer's tokens (tokens)
KIT_BATCH_SIZE = 4  # questions per batch asked of the kit, which allows 1-16 (questions); UserModel(batch_size=...)


def kit_logger() -> Any:
    """loguru when installed (the kit logs with it, so our lines sit among its own), else logging."""
    try:
        from loguru import logger
    except ImportError:
        return logging.getLogger(__name__)
    return logger


def kit_tokenizer(settings: Settings) -> Any | None:
    """The tokenizer the kit trims predictions with, or None when it cannot be had.

    ``CRAG_TOKENIZER_PATH`` names its folder; otherwise, inside the kit, its ``models/utils.py`` holds
    the loaded tokenizer its own trim uses.
    """
    if settings.crag.CRAG_TOKENIZER_PATH is not None:
        from transformers import AutoTokenizer

        return AutoTokenizer.from_pretrained(str(settings.crag.CRAG_TOKENIZER_PATH))
    try:
        from models.utils import tokenizer  # the kit's module; absent outside the kit
    except Exception:  # not inside the kit, or its tokenizer folder is missing
        return None
    return tokenizer


class AnswerTrimmer:
    """Cuts an answer to the kit's token cap at a word boundary, counted in the kit's own units.

    Without the kit's tokenizer the count is in UTF-8 bytes plus one: the kit's Llama tokenizer never
    makes a token shorter than one byte (it falls back to byte tokens), and adds one leading space
    marker, so that many bytes is a cap the kit cannot cut further.
    """

    def __init__(self, settings: Settings) -> None:
        self.cap = KIT_ANSWER_TOKENS
        self.tokenizer = kit_tokenizer(settings)
        self.unit = "kit tokens" if self.tokenizer is not None else "UTF-8 bytes (kit tokenizer not found)"

    def size(self, text: str) -> int:
        if self.tokenizer is None:
            return len(text.encode("utf-8")) + 1
        return len(self.tokenizer.encode(text, add_special_tokens=False))

    def __call__(self, text: str) -> str:
        text = text.strip()
        if self.size(text) <= self.cap:
            return text
        words = text.split(" ")
        lo, hi = 0, len(words)  # the longest word prefix that fits
        while lo < hi:
            mid = (lo + hi + 1) // 2
            if self.size(" ".join(words[:mid])) <= self.cap:
                lo = mid
            else:
                hi = mid - 1
        if lo:
            return " ".join(words[:lo]).rstrip()
        head = words[0][: self.cap * 8]  # a single word longer than the cap: cut inside it
        while head and self.size(head) > self.cap:
            head = head[:-1]
        return head


def _item(batch: dict[str, list[Any]], key: str, i: int, default: Any) -> Any:
    values = batch.get(key) or []
    return values[i] if i < len(values) and values[i] is not None else default


class UserModel:
    def __init__(self, system: str = "agent", settings: Settings | None = None, batch_size: int | None = None, llm: Any = None):
        given = settings or Settings.load()
        self.settings = given.replace(ARTIFACTS_DIR=str(given.paths.CRAG_ARTIFACTS_DIR))
        self.system = system
        self.batch_size = batch_size or KIT_BATCH_SIZE
        self._extra = {"llm": llm} if llm is not None else None
        self.log = kit_logger()
        self.last_batch: list[dict[str, Any]] = []  # one row per question of the last batch (status, seconds)
        self._telemetry = self.settings.paths.ARTIFACTS_DIR / "telemetry" / "crag_kit.jsonl"
        t0 = time.perf_counter()
        self.trim = AnswerTrimmer(self.settings)
        warm_up(system, self.settings, llm)
        self.load_seconds = round(time.perf_counter() - t0, 2)
        self.log.info(f"agentic-rag {system} loaded in {self.load_seconds} s; answers trimmed in {self.trim.unit}")

    def get_batch_size(self) -> int:
        return self.batch_size

    def batch_generate_answer(self, batch: dict[str, list[Any]]) -> list[str]:
        s = self.settings
        n = len(batch["query"])
        batch_end = time.monotonic() + n * s.crag.CRAG_SECONDS_PER_QUERY - s.crag.CRAG_MARGIN_S
        answers, self.last_batch = [], []
        for i in range(n):
            started = time.monotonic()
            # each question its own share: one slow question cannot take a later one's time
            deadline = min(started + s.crag.CRAG_SECONDS_PER_QUERY - s.crag.CRAG_MARGIN_S, batch_end)
            text, row = self._answer_one(batch, i, deadline)
            row["seconds"] = round(time.monotonic() - started, 3)
            answers.append(text)
            self.last_batch.append(row)
            write_row(self._telemetry, row)
        return answers

    def _answer_one(self, batch: dict[str, list[Any]], i: int, deadline: float) -> tuple[str, dict[str, Any]]:
        qid = str(_item(batch, "interaction_id", i, i))
        left = deadline - time.monotonic()
        row: dict[str, Any] = {"interaction_id": qid, "budget_s": round(left, 3)}
        if left < self.settings.crag.CRAG_MIN_START_S:
            self.log.warning(f"{qid}: {left:.1f} s left in the batch, not started; answered \"{CRAG_IDK}\"")
            return CRAG_IDK, {**row, "status": "not_started"}
        try:
            record = CragRecord(
                interaction_id=qid,
                query=_item(batch, "query", i, ""),
                query_time=str(_item(batch, "query_time", i, "")),
                search_results=_item(batch, "search_results", i, []),
            )
        except ValidationError as exc:  # the batch's data, not a fault of ours: one line, as for any bad record
            why = f"bad record: {why_bad(exc)}"
            self.log.warning(f"{qid}: failed ({why}); answered \"{CRAG_IDK}\"")
            return CRAG_IDK, {**row, "status": "failed", "error": why}
        try:
            with hard_deadline(deadline):
                if record.search_results:
                    index_for_record(record, self.settings)  # once here, not once per parallel worker
                settings = self.settings.replace(WALL_TIME_S=max(deadline - time.monotonic(), 1e-3))
                result = answer(self.system, settings, record=record, extra_config=self._extra)
        except DeadlineExceeded as exc:
            self.log.info(f"{qid}: {exc}; answered \"{CRAG_IDK}\"")
            return CRAG_IDK, {**row, "status": "deadline"}
        except Exception as exc:  # one bad question must not cost the batch
            self.log.exception(f"{qid}: failed ({type(exc).__name__}: {exc}); answered \"{CRAG_IDK}\"")
            return CRAG_IDK, {**row, "status": "failed", "error": f"{type(exc).__name__}: {exc}"}
        row.update(latency_by_node_ms=result.latency_by_node_ms, cpu_by_node_ms=result.cpu_by_node_ms,
                   llm_ms=result.llm_ms)
        if time.monotonic() > deadline:  # a budget check the clock tripped may have shaped this answer
            self.log.info(f"{qid}: finished after its deadline; answered \"{CRAG_IDK}\"")
            return CRAG_IDK, {**row, "status": "deadline"}
        if result.status != "ok" or not result.answer.strip():
            return CRAG_IDK, {**row, "status": "refused", "reason": result.reason}
        return self.trim(result.answer), {**row, "status": "answered"}
