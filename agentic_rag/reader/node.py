"""Graph node: the answerability reader's step after the draft (reader/read.py says how it reads).

Its own step, so the trace, the telemetry and the timing profile show what the reading cost: nothing
when it came with the generation call's prefill, one prefill of the packaged reader otherwise, plus
the cross-encoder's pass where it reads too."""

from __future__ import annotations

import time
from typing import Any

from langchain_core.runnables import RunnableConfig

from agentic_rag.budget import DeadlineExceeded, hard_deadline, question_deadline
from agentic_rag.configuration import Settings
from agentic_rag.llm.calls import model_from
from agentic_rag.nodes import Node, timed
from agentic_rag.prompts import answer_messages
from agentic_rag.reader.read import CROSS, LOCAL, plan_for, read_cross, read_prompt, with_cross
from agentic_rag.state import RAGState


@timed(Node.READ)
def read_answerability_node(state: RAGState, config: RunnableConfig) -> dict[str, Any]:
    """Read the prompt the draft was written from, when its generation call could not be read, and let
    the cross-encoder read it where the plan asks for it."""
    reading = state.get("probe") or {}
    if not state.get("draft") or reading.get("status") not in ("pending", "scored"):
        return {}
    settings = Settings.from_runnable_config(config)
    plan = plan_for(model_from(config, settings), settings)
    if not plan.cross_path and not (plan.how == LOCAL and reading.get("status") == "pending"):
        return {}  # read already (the generation call's prefill), or nothing to read with
    at = question_deadline(state, settings)
    try:
        with hard_deadline(None if at is None else time.monotonic() + (at - time.time())):
            if plan.how == CROSS:
                return {"probe": read_cross(state["question"], state["bundle"], plan, settings)}
            if reading.get("status") == "pending":
                messages = answer_messages(state["question"], state["bundle"], state.get("query_time", ""))
                reading = read_prompt(messages, plan, settings, state["question"])
            return {"probe": with_cross(reading, state["question"], state["bundle"], plan, settings)}
    except DeadlineExceeded:  # no reading: the decision reads what it has, as for a backend without one
        return {"probe": {"status": "skipped", "why": "out of time", "how": plan.how, "reader": plan.reader}}
