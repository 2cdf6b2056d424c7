"""Adapter for the official CRAG starter kit (``local_evaluation.py`` imports ``UserModel``).

Copy or import this class in the kit's ``models/user_config.py``::

    from agentic_rag.crag_adapter import UserModel

The kit calls ``get_batch_size()`` and then ``batch_generate_answer(batch)`` with a dict of lists
(``interaction_id``, ``query``, ``search_results``, ``query_time``) and expects one answer string per
question. CRAG's rules are kept: an abstention is answered "i don't know", every answer is trimmed to
``MAX_ANSWER_TOKENS`` tokens, and a batch never runs past its time limit (questions left when the
limit nears are answered "i don't know" rather than risk the whole batch).
"""

from __future__ import annotations

import time
from typing import Any

from agentic_rag.configuration import Settings
from agentic_rag.datasets.crag import CragRecord
from agentic_rag.llm.factory import get_tokenizer
from agentic_rag.runner import answer

CRAG_IDK = "i don't know"
MAX_ANSWER_TOKENS = 75  # CRAG trims predictions to 75 tokens (tokens)
SECONDS_PER_QUESTION = 10.0  # the kit's budget: batch_size x 10 s per batch (s)
MIN_SECONDS_TO_START = 2.0  # do not start a question with less time than this left in the batch (s)


class UserModel:
    def __init__(self, system: str = "agent", settings: Settings | None = None, batch_size: int = 4, llm: Any = None):
        self.system = system
        self.settings = settings or Settings.load()
        self.batch_size = batch_size
        self._extra = {"llm": llm} if llm is not None else None

    def get_batch_size(self) -> int:
        return self.batch_size

    def batch_generate_answer(self, batch: dict[str, list[Any]]) -> list[str]:
        n = len(batch["query"])
        deadline = time.monotonic() + SECONDS_PER_QUESTION * n
        answers = []
        for i in range(n):
            left = deadline - time.monotonic()
            if left < MIN_SECONDS_TO_START:
                answers.append(CRAG_IDK)
                continue
            record = CragRecord(
                interaction_id=str(batch.get("interaction_id", [str(j) for j in range(n)])[i]),
                query=batch["query"][i],
                query_time=str(batch.get("query_time", [""] * n)[i] or ""),
                search_results=batch["search_results"][i] or [],
            )
            settings = self.settings.replace(WALL_TIME_S=max(1.0, left - 1.0))
            result = answer(self.system, settings, record=record, extra_config=self._extra)
            answers.append(self._trim(result.answer) if result.status == "ok" else CRAG_IDK)
        return answers

    def _trim(self, text: str) -> str:
        tok = get_tokenizer(self.settings)
        ids = tok.encode(text, add_special_tokens=False)
        return text if len(ids) <= MAX_ANSWER_TOKENS else tok.decode(ids[:MAX_ANSWER_TOKENS]).strip()
