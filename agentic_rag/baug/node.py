"""Graph nodes: BAUG in three steps, so a trace shows where each reading, call and decision came from.

``collect_signals`` reads the draft against its evidence (and may make the gray-zone judge call);
``decide`` applies the pure policy (baug/policy.py) to those readings and to any extension's request;
a draft about to be shown with the verifier on goes once through ``final_check`` (quote probe and
verifier calls, booked under stage ``verify``) and back to ``decide``. The decision that stands is
written to telemetry, one row per round. Where the graph goes next is graphs/agent.py's business.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, replace
from typing import Any

from langchain_core.runnables import RunnableConfig

from agentic_rag.anchors.matching import RE_PERIOD_MENTION, Anchor
from agentic_rag.baug.chain import draft_chain, hops_found, next_hop_query
from agentic_rag.baug.policy import ABSTAIN, RETRIEVE_MORE, STOP, Decision, Flags, decide, requested
from agentic_rag.baug.signals import DraftReading, read_draft, supported_quotes
from agentic_rag.baug.verifier import (
    COMBINE_PARTS,
    VERIFY_STAGE,
    in_gray_zone,
    judge_messages,
    needs_verdict,
    run_judge,
    verified_score,
    verify_messages,
)
from agentic_rag.budget import can_afford, llm_calls, question_deadline, time_left, tokens_per_pass, tokens_used
from agentic_rag.checks import DRAFT_CHECKS
from agentic_rag.configuration import Settings
from agentic_rag.llm.calls import model_from, prompt_cost
from agentic_rag.llm.choices import yes_no_cost, yes_probability
from agentic_rag.llm.usage import LLMUnavailableError, llm_deadline, model_failed
from agentic_rag.nodes import Node, timed
from agentic_rag.prompts import is_hedging, reflect_request
from agentic_rag.reader.probe import quote_bundle, quote_probe_messages
from agentic_rag.reader.read import GENERATION, QUOTE_READ_OUTPUT_TOKENS, plan_for, read_other_prompt
from agentic_rag.retrieval.embeddings import get_embedder
from agentic_rag.state import RAGState, merge_usage
from agentic_rag.supervisor.cross_encoder import entailment_probability
from agentic_rag.supervisor.validators import PERIOD_TYPES, validate
from agentic_rag.telemetry import telemetry_path, write_row
from agentic_rag.text import strip_markup

SYSTEM = "agent"


def _round_paths(state: RAGState) -> list[dict[str, Any]]:
    return [p for p in state.get("paths", []) if p["round"] == state.get("round", 1)]


def _charge(state: RAGState, signals: dict[str, Any], call_usage: dict[str, Any], settings: Settings) -> RAGState:
    """Book a check's LLM call made inside BAUG: the signals' token figures and the state the next
    affordability check reads both include it (the node's update still returns it for the reducer)."""
    usage = merge_usage(state.get("usage", {}), call_usage)
    used = tokens_used(usage)
    signals.update(tokens_used=used, tokens_left=settings.budget.TOKEN_BUDGET - used)
    return {**state, "usage": usage}


@timed(Node.COLLECT_SIGNALS)
def collect_signals_node(state: RAGState, config: RunnableConfig) -> dict[str, Any]:
    """BAUG's readings of this round: the draft read against its evidence, the gray-zone judge, the
    type validator, and the flags the policy reads (what has been done, what can still be afforded)."""
    settings = Settings.from_runnable_config(config)
    reading = read_round(state, settings)
    judged = gray_zone_judge(state, config, settings, reading)
    state = judged.state
    validation = validation_of(state, reading)
    return {
        **({"llm_error": state["llm_error"]} if state.get("llm_error") else {}),
        "usage": judged.usage,
        "signals": reading.signals,
        "cited_text": reading.cited_text,
        "validation": validation,
        "flags": flags_of(state, settings, validation["ok"]).to_dict(),
    }


def read_round(state: RAGState, settings: Settings) -> DraftReading:
    """The draft read against this round's bundle (baug/signals.read_draft), with the answerability
    reader's reading of the prompt that wrote it, and NLI when a model is configured."""
    draft = state.get("draft", "")
    passages = (state.get("bundle") or {}).get("passages", [])
    round_no = state.get("round", 1)
    paths = _round_paths(state)
    new_hits = sum(p["new_hits_ratio"] for p in paths) / len(paths) if paths else 0.0
    reading = read_draft(
        state["question"], draft, state.get("bundle") or {}, _anchors(state), state.get("usage", {}), settings,
        get_embedder(settings) if draft else None, new_hits_ratio=new_hits, rounds=round_no,
        stagnation=round_no > 1 and new_hits < settings.agent.NEW_HITS_EPS, kind=state.get("kind", "other"),
    )
    if draft:  # a multi-hop answer's chain, hop by hop (baug/chain.py); none for a single-hop question
        chain = draft_chain(state.get("hop_plan"), state["question"], strip_markup(draft, [p["text"] for p in passages]),
                            state.get("kind", "other"), passages)
        reading.signals.update(chain=chain, hops_found=hops_found(chain))
    probe = state.get("probe") or {}
    if draft and probe.get("status") == "scored":
        reading.signals["answerability"] = probe["answerability"]
    if draft and state.get("draft_logprobs"):  # the draft's token log-probabilities (llm/logprobs.py)
        reading.signals.update(state["draft_logprobs"])
    if draft and settings.baug.NLI_MODEL and reading.cited_text:
        reading.signals["nli_entailment"] = entailment_probability(
            settings.baug.NLI_MODEL, reading.cited_text[:4000], strip_markup(draft, [reading.cited_text]))
    return reading


def _anchors(state: RAGState) -> list[Anchor]:
    return [Anchor(**a) for a in state.get("anchors", [])]


@dataclass(frozen=True)
class Judged:
    """The gray-zone judge's outcome: the state as the next checks read it (its call booked, or the
    model's failure recorded as ``llm_error``) and the call's usage for the reducer."""

    state: RAGState
    usage: dict[str, Any]


def gray_zone_judge(state: RAGState, config: RunnableConfig, settings: Settings, reading: DraftReading) -> Judged:
    """At most ``JUDGE_MAX_CALLS_PER_Q`` LLM judge calls, only for a draft in the gray zone; its score
    is averaged into ``faith_est`` (``reading.signals`` is updated in place)."""
    signals, draft, usage = reading.signals, state.get("draft", ""), state.get("usage", {})
    if not (draft and not state.get("llm_error") and settings.baug.JUDGE_POLICY == "gray_zone"
            and in_gray_zone(signals, settings)):
        return Judged(state, {})
    request = judge_messages(state["question"], draft, reading.cited_text)
    if int(usage.get("judge", {}).get("calls", 0)) >= settings.baug.JUDGE_MAX_CALLS_PER_Q \
            or not can_afford(state, settings, yes_no_cost(request, settings)):
        return Judged(state, {})
    try:
        with llm_deadline(question_deadline(state, settings)):
            score, judge_usage = run_judge(request, settings, model_from(config, settings))
    except LLMUnavailableError as exc:
        return Judged({**state, "llm_error": exc.to_dict()}, {})
    signals["judge_score"] = score
    signals["faith_est"] = round((signals["faith_est"] + score) / 2, 4)
    return Judged(_charge(state, signals, judge_usage, settings), judge_usage)


def validation_of(state: RAGState, reading: DraftReading) -> dict[str, Any]:
    """The type validator on the text the draft rests on: periods are checked where PERIOD_SCOPE says,
    around the supporting sentences; with no support, against the cited text."""
    anchors, cited_text = _anchors(state), reading.cited_text
    claims = " ".join(supported_quotes(reading.signals.get("sentences", [])))
    validation = validate(state.get("kind", "other"), anchors, cited_text, period_text=reading.support_windows or None,
                          claim_text=claims or None, bridge_text=reading.bridge_text)
    found_periods = [m for m in dict.fromkeys(RE_PERIOD_MENTION.findall(cited_text)) if m not in validation.missing]
    return {
        "name": validation.name,
        "ok": validation.ok,
        "missing": validation.missing,
        "found_periods": found_periods if any(a.type in PERIOD_TYPES for a in anchors) else [],
        "conflicting_periods": validation.conflicting,
    }


def flags_of(state: RAGState, settings: Settings, validators_ok: bool = True) -> Flags:
    """What the graph has done and can still afford, from the state as this round's readings leave it
    (the model's availability and the extensions' requests are read by ``decide`` from the state itself)."""
    draft, bundle, usage = state.get("draft", ""), state.get("bundle") or {}, state.get("usage", {})
    # priced on the state before this round's checks: the reflect prompt the policy weighs
    next_call = prompt_cost(reflect_request(state), settings) if draft else bundle.get("generation_cost", 0)
    confidence = state.get("confidence") or {}
    return Flags(
        has_evidence=bool(bundle.get("passages")),
        has_draft=bool(draft),
        kind=state.get("kind", "other"),
        validators_ok=validators_ok,
        one_shot_done=state.get("one_shot_done", False),
        reflected=state.get("reflected", False),
        no_new_hits=state.get("no_new_hits", False),
        can_generate=can_afford(state, settings, next_call),
        can_retrieve=state.get("round", 1) < settings.budget.MAX_ROUNDS and time_left(state, settings),
        gate_reason="" if confidence.get("passed", True) else confidence["reason"],
        hedging=bool(draft) and is_hedging(draft),
        ood=bool(state.get("ood")),
        too_long=bool(state.get("too_long")),
        ambiguity=(state.get("ambiguity") or {}).get("status", "") if not draft else "",
        empty_draft=not draft and any(usage.get(stage, {}).get("calls", 0) for stage in ("generation", "reflect")),
    )


@timed(Node.FINAL_CHECK)
def final_check_node(state: RAGState, config: RunnableConfig) -> dict[str, Any]:
    """The readings ``VERIFIER_COMBINE`` asks for on a draft every other check let through: the quote
    probe and/or the support verifier, each checked against the budget before its call. Their mean
    becomes ``verified_score`` (None when nothing could be read, and then nothing is withheld)."""
    settings = Settings.from_runnable_config(config)
    signals = dict(state.get("signals") or {})
    booked: dict[str, Any] = {}  # what the calls made so far cost, kept if a later one fails
    try:
        with llm_deadline(question_deadline(state, settings)):
            _read_final_check(state, model_from(config, settings), settings, signals, booked)
    except LLMUnavailableError as exc:
        # tried and failed: decide refuses (llm_unavailable), the check the draft needed could not be made;
        # the time ran out first: as a check the budget cannot pay for, nothing is withheld
        if not exc.tried:
            signals["support_verdict_skipped"] = "budget"
        signals["verified_score"] = None
        return {"llm_error": exc.to_dict(), "signals": signals, "usage": booked["usage"] if booked else {}}
    signals["verified_score"] = verified_score(signals, settings)
    return {"signals": signals, "usage": booked.get("usage", {})}


def _read_final_check(state: RAGState, model, settings: Settings, signals: dict[str, Any], booked: dict[str, Any]) -> None:
    """Fill ``signals`` with the final check's readings; ``booked["usage"]`` holds the calls' cost so far."""
    if "quote_answerability" in COMBINE_PARTS[settings.baug.VERIFIER_COMBINE]:
        sentences, bundle = signals.get("sentences", []), state.get("bundle") or {}
        messages = quote_probe_messages(state["question"], sentences, bundle)
        plan = plan_for(model, settings)
        capped = settings.replace(MAX_OUTPUT_TOKENS=QUOTE_READ_OUTPUT_TOKENS)
        if messages and (plan.how != GENERATION or can_afford(state, settings, prompt_cost(messages, capped))):
            quoted = quote_bundle(sentences, bundle)
            reading, call_usage = read_other_prompt(state["question"], quoted, plan, settings, VERIFY_STAGE, model)
            if reading.get("status") == "scored":
                signals["quote_answerability"] = reading["answerability"]
            state, booked["usage"] = _charge(state, signals, call_usage, settings), merge_usage(booked.get("usage"), call_usage)
    if needs_verdict(signals, settings):
        request = verify_messages(state["question"], state.get("draft", ""), signals, state.get("cited_text", ""))
        if can_afford(state, settings, yes_no_cost(request, settings)):
            verdict, call_usage = yes_probability(request, settings, VERIFY_STAGE, model)
            signals["support_verdict"] = round(verdict, 4)
            state, booked["usage"] = _charge(state, signals, call_usage, settings), merge_usage(booked.get("usage"), call_usage)
        else:
            signals["support_verdict_skipped"] = "budget"


def needs_final_check(decision: Decision, signals: dict[str, Any], settings: Settings) -> bool:
    """A draft about to be shown goes through the final check once, when the verifier is on."""
    about_to_stop = decision.reason == "STOP_OVERLAP_OK" or getattr(decision, "verify", False)  # fitted: the grey zone
    return (about_to_stop and settings.baug.VERIFIER_ENABLED and settings.baug.GROUNDING_ENABLED
            and "verified_score" not in signals)


@timed(Node.DECIDE)
def decide_node(state: RAGState, config: RunnableConfig) -> dict[str, Any]:
    """The policy on this round's signals, flags and extension requests; a decision that stands is
    written to telemetry (one row per round) and, for a retrieval, sets up the next round."""
    settings = Settings.from_runnable_config(config)
    signals = state.get("signals") or {}
    flags = decided_flags(state)
    decision = decide(signals, flags, settings)
    if needs_final_check(decision, signals, settings):
        return {"decision": {**decision.to_dict(), "flags": flags.to_dict(), "final_check": True}}
    validation = state.get("validation") or {}
    write_row(telemetry_path(settings, SYSTEM), _telemetry(state, settings, signals, decision, validation))
    update: dict[str, Any] = {"decision": {**decision.to_dict(), "flags": flags.to_dict()}}
    if decision.action == RETRIEVE_MORE:
        request = requested(decision.reason, flags.requests) or {}
        missing = signals["missing_anchors"] + validation.get("missing", []) + list(request.get("terms", []))
        # the next hop: the page of the entity the draft names, searched by its name and what it lacks
        hop = signals.get("hop_names", []) if signals["missing_anchors"] or validation.get("missing") else []
        hop_query = " ".join(dict.fromkeys(hop + missing)) if hop else ""
        if decision.reason == "RETRIEVE_MISSING_HOP":  # the chain's missing hop, searched from the hop before it
            hop_query = next_hop_query(signals.get("chain") or [], state["question"])
        update.update(round=state.get("round", 1) + 1, one_shot_done=True, extra_terms=list(dict.fromkeys(missing)),
                      hop_query=hop_query)
    return update


def decided_flags(state: RAGState) -> Flags:
    """The flags collect_signals recorded, with what only the state as it stands now can say: whether
    a call this question needed failed on every attempt (in any node, the final check's included), and
    the extensions' latest requests."""
    llm_error = state.get("llm_error") or {}
    requests = tuple({**r, "by": name} for name, r in (state.get("extension_flags") or {}).items() if r)
    # no attempt at all, and no server known to be down: the time ran out, not the model
    return replace(Flags.from_dict(state.get("flags") or {}), llm_unavailable=model_failed(llm_error),
                   requests=requests)


def _telemetry(state, settings, signals, decision, validation) -> dict[str, Any]:
    usage = state.get("usage", {})
    paths = _round_paths(state)
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
        # every draft check's reading (agentic_rag/checks.py), and the readings the final check averages
        **{c.signal: signals.get(c.signal) for c in DRAFT_CHECKS},
        "support_verdict": signals.get("support_verdict"),
        "quote_answerability": signals.get("quote_answerability"),
        "p_right": getattr(decision, "p_right", None),  # GATE_POLICY=fitted (baug/fitted.py)
        "untrusted_sources": [u["n"] for u in signals.get("untrusted_sources", [])],
        "chain": [{k: h.get(k) for k in ("hop", "role", "found", "n")} for h in signals.get("chain") or []],
        "probe": state.get("probe"),
        "confidence_gate": state.get("confidence"),
        "llm_error": state.get("llm_error"),
        "validator": validation.get("name"),
        "validator_ok": validation.get("ok"),
        "context_tokens": (state.get("bundle") or {}).get("context_tokens", 0),
        "tokens_used": tokens_used(usage),
        "tokens_left": settings.budget.TOKEN_BUDGET - tokens_used(usage),
        "tokens_by_stage": {k: v.get("total_tokens", 0) for k, v in usage.items()},
        "llm_calls": llm_calls(usage),
        "tokens_per_pass": tokens_per_pass(usage),  # speculative decoding's gain (LLM_SPECULATION)
        "latency_ms": round((time.time() - state.get("started_at", time.time())) * 1000.0, 1),
        # per node up to this decision (this BAUG run itself is in the result row's figures)
        "latency_by_node_ms": dict(state.get("latency_ms") or {}),
        "cpu_by_node_ms": dict(state.get("cpu_ms") or {}),
        "llm_by_node_ms": dict(state.get("llm_ms") or {}),
    }
