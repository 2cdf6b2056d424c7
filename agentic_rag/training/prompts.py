"""The exact answer prompts the agent would send its generator, without generating: what a probe is
trained on (`agentic-rag train views`) and what the readers are timed and scored on (scripts/bench_reader.py)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from langchain_core.language_models.chat_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from pydantic import Field


class RecordingChat(BaseChatModel):
    """A chat model that records the prompts it is sent and answers with a fixed reply: injected as
    ``configurable.llm``, the real graph runs (anchors, workers, packing, the confidence gate) and the
    exact generator prompts are collected without paying for decoding."""

    reply: str = "I don't know."
    prompts: list[list[BaseMessage]] = Field(default_factory=list)

    @property
    def _llm_type(self) -> str:
        return "recording"

    def _generate(self, messages: list[BaseMessage], stop=None, run_manager=None, **kwargs) -> ChatResult:
        self.prompts.append(list(messages))
        usage = {"input_tokens": 0, "output_tokens": 0, "total_tokens": 0}
        return ChatResult(generations=[ChatGeneration(message=AIMessage(content=self.reply, usage_metadata=usage))])


def generator_prompt(record: Any, settings: Any) -> list[BaseMessage] | None:
    """The prompt the agent's first generation call sends for this CRAG record (None: refused before
    generation). The caller has imported ``graphs``, which registers the agent graph."""
    first = generator_inputs(record, settings)
    return first[0] if first else None


def generator_inputs(record: Any, settings: Any) -> tuple[list[BaseMessage], dict[str, Any]] | None:
    """The first generation call's prompt and the evidence bundle it was rendered from (None: refused
    before generation): the cross-encoder reader reads the bundle's sources as that prompt shows them."""
    from agentic_rag.runner import answer

    recorder = RecordingChat()
    bundles: list[dict[str, Any]] = []

    def before_generation(node: str, update: dict[str, Any]) -> None:
        if not recorder.prompts and isinstance(update, dict) and update.get("bundle"):
            bundles.append(update["bundle"])

    answer("agent", settings.replace(PROBE_ENABLED=False), record=record, extra_config={"llm": recorder},
           on_update=before_generation)
    return (recorder.prompts[0], bundles[-1]) if recorder.prompts and bundles else None


def reader_pair(record: Any, settings: Any, source: str | None = None) -> dict[str, Any] | None:
    """The reader pair of one record (None when it is refused before generation, so no reader sees it): the
    question, the sources as its answer prompt shows them, the prompt itself, the label (1 = the sources
    answer it), its cross-validation group and source (``source`` names an evaluation file's rows). The
    caller has imported ``graphs``."""
    from agentic_rag.datasets.crag import IDK
    from agentic_rag.prompts import render_sources
    from agentic_rag.training.sets import group_of, source_of

    first = generator_inputs(record, settings)
    if first is None:
        return None
    prompt, bundle = first
    group = group_of(record)
    return {"id": record.interaction_id, "question": record.query, "sources": render_sources(bundle),
            "label": int(record.answer != IDK), "group": group, "source": source or source_of(record.interaction_id, group),
            "prompt": [[m.type, m.content] for m in prompt]}


def write_pairs(records: list[Any], settings: Any, out: Path, source: str | None = None, progress: bool = True) -> tuple[int, int]:
    """Append to ``out`` (JSON lines) the reader pair of each record not already in it. Resumable: a rerun
    skips the ids ``out`` holds. Returns (pairs in ``out``, records refused before generation this time)."""
    from tqdm import tqdm

    from agentic_rag.telemetry import read_rows

    done = {r["id"] for r in read_rows(out)}
    out.parent.mkdir(parents=True, exist_ok=True)
    skipped = 0
    with out.open("a", encoding="utf-8") as fh:
        for record in tqdm([r for r in records if r.interaction_id not in done], desc="reader pairs", unit="q",
                           disable=not progress):
            row = reader_pair(record, settings, source)
            if row is None:
                skipped += 1
                continue
            fh.write(json.dumps(row, ensure_ascii=False) + "\n")
            fh.flush()
            done.add(record.interaction_id)
    return len(done), skipped
