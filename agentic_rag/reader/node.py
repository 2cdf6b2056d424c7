"""Graph node: the answerability reader's step after the draft (reader/read.py says how it reads).

Its own step, so the trace, the telemetry and the timing profile show what the reading cost: nothing
when it came with the generation call's prefill, one prefill of the packaged reader otherwise."""

from __future__ import annotations

import time
from typing import Any

from langchain_core.runnables import RunnableConfig

from agentic_rag.budget import DeadlineExceeded, hard_deadline, question_deadline
from agentic_rag.configuration import Settings
from agentic_rag.llm.calls import model_from
from agentic_rag.nodes import Node
from agentic_rag.prompts import answer_messages
from agentic_rag.reader.read import LOCAL, plan_for, read_prompt
from agentic_rag.state import RAGState
from agentic_rag.utils import timed


@timed(Node.READ)
def read_answerability_node(state: RAGState, config: RunnableConfig) -> dict[str, Any]:
    """Read the prompt the draft was written from, when its generation call could not be read."""
    if (state.get("probe") or {}).get("status") != "pending" or not state.get("draft"):
        return {}
    settings = Settings.from_runnable_config(config)
    plan = plan_for(model_from(config, settings), settings)
    if plan.how != LOCAL:
        return {}
    messages = answer_messages(state["question"], state["bundle"], state.get("query_time", ""))
    at = question_deadline(state, settings)
    try:
        with hard_deadline(None if at is None else time.monotonic() + (at - time.time())):
            return {"probe": read_prompt(messages, plan, settings)}
    except DeadlineExceeded:  # no reading: the decision reads what it has, as for a backend without one
        return {"probe": {"status": "skipped", "why": "out of time", "how": LOCAL, "reader": plan.reader}}
