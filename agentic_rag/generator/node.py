"""Graph nodes: generate the answer, and the one-shot Self-RAG-style critique-and-revise."""

from __future__ import annotations

from typing import Any

from langchain_core.runnables import RunnableConfig

from agentic_rag.budget import question_deadline
from agentic_rag.configuration import Settings
from agentic_rag.llm.calls import call_model, model_from
from agentic_rag.llm.logprobs import reply_signals, request_kwargs
from agentic_rag.llm.usage import LLMUnavailableError, llm_deadline, model_failed
from agentic_rag.nodes import Node, timed
from agentic_rag.prompts import answer_messages, reflect_request
from agentic_rag.reader.read import OFF, ReaderPlan, plan_for, reading_of_reply
from agentic_rag.state import RAGState

UNAVAILABLE = {"action": "ABSTAIN", "reason": "ABSTAIN_LLM_UNAVAILABLE"}
OUT_OF_TIME = {"action": "ABSTAIN", "reason": "ABSTAIN_LOW_BUDGET"}


def _generate(state: RAGState, config: RunnableConfig, with_probe: bool) -> dict[str, Any]:
    settings = Settings.from_runnable_config(config)
    messages = answer_messages(state["question"], state["bundle"], state.get("query_time", ""))
    model = model_from(config, settings)
    # the probe's state comes from this same call's prefill where the generator can give it (else the
    # reader node reads the prompt); a graph without BAUG has no use for it
    plan = plan_for(model, settings) if with_probe else ReaderPlan(OFF)
    scored = request_kwargs(model, settings) if with_probe else {}  # the draft's token log-probabilities
    try:
        with llm_deadline(question_deadline(state, settings)):
            message, usage = call_model(messages, settings, "generation", model, **plan.call_kwargs(state["question"]),
                                        **scored)
    except LLMUnavailableError as exc:
        return {"draft": "", "llm_error": exc.to_dict(), "probe": {"status": "skipped", "why": "llm_unavailable"}}
    return {"draft": str(message.content).strip(), "usage": usage, "probe": reading_of_reply(message, plan),
            **({"draft_logprobs": reply_signals(message, scored)} if with_probe else {})}


@timed(Node.GENERATE)
def generate_node(state: RAGState, config: RunnableConfig) -> dict[str, Any]:
    """The agent's answer call, read by the answerability probe (an unavailable model: BAUG refuses)."""
    return _generate(state, config, with_probe=True)


@timed(Node.GENERATE)
def generate_plain_node(state: RAGState, config: RunnableConfig) -> dict[str, Any]:
    """The baseline's answer call: vanilla RAG, no probe. It never abstains, except when there is no
    model to answer: then finalize has nothing but the refusal to return."""
    update = _generate(state, config, with_probe=False)
    if "llm_error" not in update:
        return update
    return {**update, "decision": UNAVAILABLE if model_failed(update["llm_error"]) else OUT_OF_TIME}


@timed(Node.REFLECT)
def reflect_node(state: RAGState, config: RunnableConfig) -> dict[str, Any]:
    settings = Settings.from_runnable_config(config)
    model = model_from(config, settings)
    scored = request_kwargs(model, settings)
    try:
        with llm_deadline(question_deadline(state, settings)):
            message, usage = call_model(reflect_request(state), settings, "reflect", model, **scored)
    except LLMUnavailableError as exc:  # the draft stays; BAUG refuses, as the revision it asked for is missing
        return {"reflected": True, "llm_error": exc.to_dict()}
    return {"draft": str(message.content).strip(), "usage": usage, "reflected": True,
            "draft_logprobs": reply_signals(message, scored)}
