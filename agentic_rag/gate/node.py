"""Graph nodes: BAUG (signals, decision, telemetry) and the routing that follows it."""

from __future__ import annotations

import re
import time
from typing import Any

from langchain_core.runnables import RunnableConfig
from langgraph.types import Send

from agentic_rag.anchors.predictor import Anchor
from agentic_rag.budget import can_afford, llm_calls, time_left, tokens_used
from agentic_rag.configuration import Settings
from agentic_rag.gate.policy import ABSTAIN, REFLECT, RETRIEVE_MORE, STOP, Flags, decide
from agentic_rag.gate.crossencoder import entailment_probability
from agentic_rag.gate.judge import (
    COMBINE_PARTS, VERIFY_STAGE, in_gray_zone, judge_messages, needs_verdict, run_judge, verified_score,
    verify_messages, yes_no_cost, yes_probability,
)
from agentic_rag.gate.probe import QUOTE_PROBE_OUTPUT_TOKENS, probe_request, quote_probe_messages, read_quote_probe
from agentic_rag.gate.signals import collect_signals, supported_quotes
from agentic_rag.generator.citations import strip_markup
from agentic_rag.generator.generate import model_from
from agentic_rag.prompts import is_hedging
from agentic_rag.generator.generate import prompt_cost
from agentic_rag.generator.node import reflect_request
from agentic_rag.retrieval.embeddings import get_embedder
from agentic_rag.retrievers.node import dispatch_workers
from agentic_rag.state import RAGState, merge_usage
from agentic_rag.supervisor.validators import PERIOD_TYPES, validate
from agentic_rag.telemetry import telemetry_path, write_row
from agentic_rag.utils import timed

SYSTEM = "agent"
FINALIZE, REFLECT_NODE = "finalize", "reflect"
_PERIOD = re.compile(r"\b(?:q[1-4]\s+)?(?:1[89]|20)\d{2}\b", re.IGNORECASE)


def _round_paths(state: RAGState) -> list[dict[str, Any]]:
    return [p for p in state.get("paths", []) if p["round"] == state.get("round", 1)]


def _charge(state: RAGState, signals: dict[str, Any], call_usage: dict[str, Any], settings: Settings) -> RAGState:
    """Book a check's LLM call made inside BAUG: the signals' token figures and the state the next
    affordability check reads both include it (the node's update still returns it for the reducer)."""
    usage = merge_usage(state.get("usage", {}), call_usage)
    used = tokens_used(usage)
    signals.update(tokens_used=used, tokens_left=settings.TOKEN_BUDGET - used)
    return {**state, "usage": usage}


def _final_check(state: RAGState, config: RunnableConfig, settings: Settings, signals: dict[str, Any],
                 cited_text: str) -> tuple[RAGState, dict[str, Any]]:
    """The readings ``VERIFIER_COMBINE`` asks for on a draft every other check let through: the quote
    probe and/or the support verifier, each checked against the budget before its call. Their mean
    becomes ``verified_score`` (None when nothing could be read, and then nothing is withheld)."""
    model = model_from(config, settings)
    usage: dict[str, Any] = {}
    if "quote_answerability" in COMBINE_PARTS[settings.VERIFIER_COMBINE]:
        messages = quote_probe_messages(state["question"], signals.get("sentences", []), state.get("bundle") or {})
        capped = settings.replace(MAX_OUTPUT_TOKENS=QUOTE_PROBE_OUTPUT_TOKENS)
        if messages and can_afford(state, settings, prompt_cost(messages, capped)):
            reading, call_usage = read_quote_probe(messages, probe_request(model, settings), settings, VERIFY_STAGE, model)
            if reading.get("status") == "scored":
                signals["quote_answerability"] = reading["answerability"]
            state, usage = _charge(state, signals, call_usage, settings), merge_usage(usage, call_usage)
    if needs_verdict(signals, settings):
        request = verify_messages(state["question"], state.get("draft", ""), signals, cited_text)
        if can_afford(state, settings, yes_no_cost(request, settings)):
            verdict, call_usage = yes_probability(request, settings, VERIFY_STAGE, model)
            signals["support_verdict"] = round(verdict, 4)
            state, usage = _charge(state, signals, call_usage, settings), merge_usage(usage, call_usage)
        else:
            signals["support_verdict_skipped"] = "budget"
    signals["verified_score"] = verified_score(signals, settings)
    return state, usage


@timed("baug")
def baug_node(state: RAGState, config: RunnableConfig) -> dict[str, Any]:
    settings = Settings.from_runnable_config(config)
    anchors = [Anchor(**a) for a in state.get("anchors", [])]
    bundle = state.get("bundle") or {}
    draft = state.get("draft", "")
    usage = state.get("usage", {})
    round_no = state.get("round", 1)
    paths = _round_paths(state)
    new_hits = sum(p["new_hits_ratio"] for p in paths) / len(paths) if paths else 0.0
    stagnation = round_no > 1 and new_hits < settings.NEW_HITS_EPS
    signals = collect_signals(
        state["question"], draft, bundle, anchors, usage, settings, get_embedder(settings) if draft else None,
        new_hits_ratio=new_hits, rounds=round_no, stagnation=stagnation, kind=state.get("kind", "other"),
    )
    probe = state.get("probe") or {}
    if draft and probe.get("status") == "scored":
        signals["answerability"] = probe["answerability"]
    cited_text = signals.pop("_cited_text")
    windows = signals.pop("_support_windows")
    judge_usage: dict[str, Any] = {}
    if draft and settings.JUDGE_POLICY == "gray_zone" and in_gray_zone(signals, settings):
        judged = int(usage.get("judge", {}).get("calls", 0))
        request = judge_messages(state["question"], draft, cited_text)
        if judged < settings.JUDGE_MAX_CALLS_PER_Q and can_afford(state, settings, yes_no_cost(request, settings)):
            score, judge_usage = run_judge(request, settings, model_from(config, settings))
            signals["judge_score"] = score
            signals["faith_est"] = round((signals["faith_est"] + score) / 2, 4)
            state = _charge(state, signals, judge_usage, settings)
    # periods are checked where PERIOD_SCOPE says, around the supporting sentences; with no support,
    # against the cited text
    claims = " ".join(supported_quotes(signals.get("sentences", [])))
    validation = validate(state.get("kind", "other"), anchors, cited_text, period_text=windows or None,
                          claim_text=claims or None)
    if draft and settings.NLI_MODEL and cited_text:
        signals["nli_entailment"] = entailment_probability(settings.NLI_MODEL, cited_text[:4000], strip_markup(draft))
    found_periods = [m for m in dict.fromkeys(_PERIOD.findall(cited_text)) if m not in validation.missing]
    next_call = prompt_cost(reflect_request(state), settings) if draft else bundle.get("generation_cost", 0)
    flags = Flags(
        has_evidence=bool(bundle.get("passages")),
        has_draft=bool(draft),
        kind=state.get("kind", "other"),
        validators_ok=validation.ok,
        one_shot_done=state.get("one_shot_done", False),
        reflected=state.get("reflected", False),
        no_new_hits=state.get("no_new_hits", False),
        can_generate=can_afford(state, settings, next_call),
        can_retrieve=round_no < settings.MAX_ROUNDS and time_left(state, settings),
        gate_reason="" if (state.get("confidence") or {}).get("passed", True) else state["confidence"]["reason"],
        hedging=bool(draft) and is_hedging(draft),
        ood=bool(state.get("ood")),
        too_long=bool(state.get("too_long")),
        ambiguity=(state.get("ambiguity") or {}).get("status", "") if not draft else "",
    )
    decision = decide(signals, flags, settings)
    verify_usage: dict[str, Any] = {}
    if decision.reason == "STOP_OVERLAP_OK" and settings.VERIFIER_ENABLED and settings.GROUNDING_ENABLED:
        state, verify_usage = _final_check(state, config, settings, signals, cited_text)
        if signals.get("verified_score") is not None:
            decision = decide(signals, flags, settings)
    write_row(telemetry_path(settings, SYSTEM), _telemetry(state, settings, signals, decision, paths, validation))
    update: dict[str, Any] = {
        "usage": merge_usage(judge_usage, verify_usage),
        "signals": signals,
        "validation": {
            "name": validation.name,
            "ok": validation.ok,
            "missing": validation.missing,
            "found_periods": found_periods if any(a.type in PERIOD_TYPES for a in anchors) else [],
            "conflicting_periods": validation.conflicting,
        },
        "decision": {**decision.to_dict(), "flags": flags.__dict__},
    }
    if decision.action == RETRIEVE_MORE:
        missing = list(dict.fromkeys(signals["missing_anchors"] + validation.missing))
        update.update(round=round_no + 1, one_shot_done=True, extra_terms=missing)
    return update


def _telemetry(state, settings, signals, decision, paths, validation) -> dict[str, Any]:
    usage = state.get("usage", {})
    return {
        "question_id": state.get("question_id", ""),
        "round": state.get("round", 1),
        "action": decision.action,
        "reason": decision.reason,
        "stop_reason": decision.reason if decision.action in (STOP, ABSTAIN) else "",
        "anchors_proposed": [a["text"] for a in state.get("anchors_proposed", [])],
        "anchors_selected": [a["text"] for a in state.get("anchors", [])],
        "kind": state.get("kind", "other"),
        "path_count": len(paths),
        "pruned_count": sum(p.get("pruned_count", 0) for p in paths),
        "terminated_by": [p.get("terminated_by") for p in paths],
        "new_hits_ratio": signals["new_hits_ratio"],
        "anchor_coverage": signals["anchor_coverage"],
        "overlap_est": signals["overlap_est"],
        "faith_est": signals["faith_est"],
        "answerability": signals.get("answerability"),
        "support_verdict": signals.get("support_verdict"),
        "quote_answerability": signals.get("quote_answerability"),
        "verified_score": signals.get("verified_score"),
        "untrusted_sources": [u["n"] for u in signals.get("untrusted_sources", [])],
        "probe": state.get("probe"),
        "confidence_gate": state.get("confidence"),
        "validator": validation.name,
        "validator_ok": validation.ok,
        "context_tokens": (state.get("bundle") or {}).get("context_tokens", 0),
        "tokens_used": tokens_used(usage),
        "tokens_left": settings.TOKEN_BUDGET - tokens_used(usage),
        "tokens_by_stage": {k: v.get("total_tokens", 0) for k, v in usage.items()},
        "llm_calls": llm_calls(usage),
        "latency_ms": round((time.time() - state.get("started_at", time.time())) * 1000.0, 1),
        # per node up to this decision (this BAUG run itself is in the result row's figures)
        "latency_by_node_ms": dict(state.get("latency_ms") or {}),
        "cpu_by_node_ms": dict(state.get("cpu_ms") or {}),
        "llm_by_node_ms": dict(state.get("llm_ms") or {}),
    }


def route_after_baug(state: RAGState, config: RunnableConfig) -> str | list[Send]:
    action = (state.get("decision") or {}).get("action", ABSTAIN)
    if action == RETRIEVE_MORE:
        return dispatch_workers(state, config)
    if action == REFLECT:
        return REFLECT_NODE
    return FINALIZE
