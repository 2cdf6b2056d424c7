"""Graph node: the confidence gate between the Supervisor and the generator."""

from __future__ import annotations

from typing import Any

from langchain_core.runnables import RunnableConfig

from agentic_rag.budget import question_deadline
from agentic_rag.configuration import Settings
from agentic_rag.llm.calls import model_from
from agentic_rag.llm.usage import LLMUnavailableError, llm_deadline
from agentic_rag.nodes import Node, timed
from agentic_rag.state import RAGState
from agentic_rag.supervisor.confidence_gate import confidence_gate
from agentic_rag.supervisor.cross_encoder import rerank_scores
from agentic_rag.supervisor.grader import llm_grades


@timed(Node.CONFIDENCE_GATE)
def confidence_gate_node(state: RAGState, config: RunnableConfig) -> dict[str, Any]:
    settings = Settings.from_runnable_config(config)
    bundle = state.get("bundle") or {}
    passages = bundle.get("passages", [])
    rerank, usage = None, {}
    if settings.confidence_gate.GATE_ENABLED and settings.confidence_gate.USE_RERANKER and passages:
        if settings.confidence_gate.RERANKER_KIND == "llm":
            # fewer grades than passages: the rest were not graded (budget), not graded low
            try:
                with llm_deadline(question_deadline(state, settings)):
                    rerank, usage = llm_grades(state["question"], passages, state, settings,
                                               model_from(config, settings), answer_cost=bundle.get("generation_cost", 0))
            except LLMUnavailableError as exc:  # BAUG refuses: the grade tier 1 asked for cannot be read
                return {"confidence": confidence_gate(passages, settings, None).to_dict(), "llm_error": exc.to_dict()}
            rerank = rerank or None  # nothing graded: tier 2 decides
        else:
            rerank = rerank_scores(settings.confidence_gate.RERANKER_MODEL, state["question"], [p["text"] for p in passages])
    result = confidence_gate(passages, settings, rerank).to_dict()
    if rerank is not None:
        result["grader"] = settings.confidence_gate.RERANKER_KIND
    return {"confidence": result, "usage": usage}
