"""Finalize: the displayed answer with its citations, or an abstention that says why and what is missing
(worded by BAUG's room, baug/refusal.py, from what the nodes before it computed).

The short answer is extracted for EM/F1 scoring only; it never replaces the cited answer a person
reads. An abstention carries no citations (the "IDK with citations" count must be 0).
"""

from __future__ import annotations

import time
from typing import Any

from langchain_core.runnables import RunnableConfig

from agentic_rag.baug.refusal import INPUT_EXPLANATIONS, worded_refusal
from agentic_rag.budget import llm_calls, tokens_summary
from agentic_rag.checks import ABSTAIN, INPUT_LAYERS
from agentic_rag.configuration import Settings
from agentic_rag.events import quoted_chunks
from agentic_rag.generator.citations import citations_from_support, extract_citations
from agentic_rag.generator.short_answer import short_answer
from agentic_rag.nodes import Node, timed
from agentic_rag.prompts import IDK_ANSWER
from agentic_rag.state import AnswerRecord
from agentic_rag.text import strip_markup


def build_record(state: dict[str, Any], system: str, settings, tokens: dict[str, Any], calls: int) -> AnswerRecord:
    decision = state.get("decision") or {"action": "STOP", "reason": "STOP_SINGLE_PASS"}
    signals = dict(state.get("signals") or {})
    common = dict(
        question_id=state.get("question_id", ""),
        question=state["question"],
        system=system,
        reason=decision["reason"],
        tokens=tokens,
        llm_calls=calls,
        signals=signals,
        draft=state.get("draft", ""),
        chain=signals.get("chain") or [],
        p_right=decision.get("p_right"),
    )
    ambiguity = state.get("ambiguity") or {}
    if decision["reason"] == "AMBIGUOUS_OPTIONS":
        explanation = INPUT_EXPLANATIONS["AMBIGUOUS_OPTIONS"](state)
        return AnswerRecord(**common, status="ambiguous", answer=explanation, explanation=explanation,
                            options=ambiguity.get("options", []), missing=["which of the options is meant"])
    if decision["reason"] in INPUT_LAYERS:
        explanation = INPUT_EXPLANATIONS[decision["reason"]](state)
        return AnswerRecord(**common, status="refuse", answer=f"{IDK_ANSWER} {explanation}", short_answer="i don't know",
                            explanation=explanation, options=ambiguity.get("options", []), citations=[],
                            abstention_layer=INPUT_LAYERS[decision["reason"]])
    if decision["action"] == ABSTAIN:
        explanation, missing, layer = worded_refusal(state, decision, settings)
        skipped = not state.get("draft") and (state.get("confidence") or {}).get("passed") is False
        return AnswerRecord(
            **common, status="refuse", answer=f"{IDK_ANSWER} {explanation}", short_answer="i don't know",
            explanation=explanation, missing=missing, citations=[], abstention_layer=layer,
            tokens_saved=int((state.get("bundle") or {}).get("generation_cost", 0)) if skipped else 0,
        )
    draft = state.get("draft", "")
    answer = strip_markup(draft, [p["text"] for p in (state.get("bundle") or {}).get("passages", [])]) or draft
    kind = state.get("kind", "other")
    rows = (state.get("signals") or {}).get("sentences")
    citations = citations_from_support(rows, state.get("bundle") or {}) if rows else extract_citations(
        draft, state.get("bundle") or {}, state["question"], kind)
    return AnswerRecord(
        **common,
        status="ok",
        answer=answer,
        short_answer=short_answer(state["question"], answer, kind) if settings.agent.USE_FACTOID_FINALIZER else answer,
        citations=citations,
        explanation=decision.get("explanation", ""),
    )


def make_finalize_node(system: str):
    """The last node of a graph: the state becomes an ``AnswerRecord`` (same shape for every system)."""

    @timed(Node.FINALIZE)
    def finalize_node(state: dict, config: RunnableConfig) -> dict[str, Any]:
        settings = Settings.from_runnable_config(config)
        usage = state.get("usage", {})
        record = build_record(state, system, settings, tokens_summary(usage), llm_calls(usage))
        # so a served graph's output carries its timings too (the runner re-measures, finalize included)
        record.latency_by_node_ms = dict(state.get("latency_ms") or {})
        record.cpu_by_node_ms = dict(state.get("cpu_ms") or {})
        record.llm_by_node_ms = dict(state.get("llm_ms") or {})
        record.llm_ms = round(sum(record.llm_by_node_ms.values()), 1)
        starts = [e["start"] for e in state.get("events") or [] if "start" in e]
        record.latency_ms = round((time.time() - min(starts)) * 1000.0, 1) if starts else 0.0
        record.quoted_chunks = quoted_chunks(state, [c.model_dump() for c in record.citations])
        return {"result": record.model_dump()}

    return finalize_node
