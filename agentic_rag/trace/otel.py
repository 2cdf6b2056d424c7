"""A question's trace as OpenTelemetry spans with OpenInference attributes, for Phoenix, Langfuse or
any OTLP/HTTP collector (docs/opentelemetry.md).

The spans are built from what a run records, the per-node events (agentic_rag/events.py) with their
LLM calls (``llm.usage.call_record``), never from a second instrumentation: a question sent live
(``OTLP_ENDPOINT``, once it is answered) and one re-sent from a run folder (``trace RUN --otlp URL``)
are the same spans with the same recorded times, and the parallel Retriever-Workers, which LangGraph
runs in threads of their own, sit side by side under the question's span as they ran.

One trace per question: a CHAIN span for the graph, a child per node run (CHAIN; RETRIEVER for a
worker, with its kept passages as ``retrieval.documents``; GUARDRAIL for the confidence gate and for
BAUG's ``decide``, with the decision, reason code, signals and the thresholds they were held to) and
an LLM span per model call under its node. What OpenInference has no name for goes under
``agentic_rag.*``. The packages are the optional extra ``otel``; this module imports without them.
"""

from __future__ import annotations

import json
import re
import threading
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from agentic_rag.configuration import missing_otel_packages
from agentic_rag.nodes import Node

PROJECT = "agentic-rag"  # the Phoenix project (resource attribute openinference.project.name)
NS = "agentic_rag"

RETRIEVERS = frozenset({Node.WORKER, Node.RETRIEVE})
GUARDRAILS = frozenset({Node.CONFIDENCE_GATE, Node.DECIDE})
ROLES = {"human": "user", "ai": "assistant", "system": "system", "tool": "tool"}


class OtelUnavailable(RuntimeError):
    """The OpenTelemetry packages are not installed."""


def _require() -> None:
    why = missing_otel_packages()
    if why:
        raise OtelUnavailable(why)


def traces_url(endpoint: str) -> str:
    """The OTLP/HTTP traces URL of a collector's base URL (``http://127.0.0.1:6006``, Langfuse's
    ``https://HOST/api/public/otel``) or of one that already names ``/v1/traces``."""
    url = endpoint.rstrip("/")
    return url if url.endswith("/v1/traces") else f"{url}/v1/traces"


# -- spans ------------------------------------------------------------------------------------------
@dataclass
class Question:
    """What the spans of one question are built from: a result row of a run folder or an AnswerRecord."""

    id: str
    system: str
    question: str
    answer: str
    events: list[dict[str, Any]]
    facts: dict[str, Any]  # the question's own attributes: status, reason, tokens, judgement...


FACTS = ("status", "reason", "abstention_layer", "llm_calls", "latency_ms")  # of an answer, as attributes


def _facts(values: dict[str, Any], tokens: dict[str, Any] | None) -> dict[str, Any]:
    return {**{k: v for k, v in values.items() if v not in (None, "")}, "tokens": (tokens or {}).get("total", 0)}


def question_from_row(row: dict[str, Any], system: str) -> Question:
    facts = _facts({k: row.get(k) for k in (*FACTS, "judgement", "gold")}, row.get("tokens"))
    return Question(row["id"], system, row.get("query", ""), row.get("prediction", ""), row.get("events") or [], facts)


def question_from_record(result) -> Question:
    facts = _facts({k: getattr(result, k) for k in FACTS}, result.tokens)
    return Question(result.question_id, result.system, result.question, result.answer, list(result.events), facts)


def _ns(seconds: float) -> int:
    return int(seconds * 1e9)


def _end(item: dict[str, Any]) -> float:
    return item["start"] + item.get("ms", 0.0) / 1000.0


def _json(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, default=str)


def _scalar(value: Any) -> bool:
    return isinstance(value, (int, float, str, bool))


def _documents(event: dict[str, Any]) -> list[dict[str, Any]]:
    """The passages a retriever node kept, each with the score it was ranked by."""
    if "paths" in event:
        passages = [p for path in event["paths"] for p in path.get("kept", [])]
        score = "path_score"
    else:
        passages, score = event.get("passages", []), "fused_score"
    return [{"id": p.get("chunk_id", ""), "content": p.get("text", ""), "score": p.get(score, p.get("fused_score")),
             "metadata": {k: v for k, v in p.items() if k not in ("chunk_id", "text")}} for p in passages]


def _retriever(event: dict[str, Any]) -> dict[str, Any]:
    from openinference.semconv.trace import DocumentAttributes as D
    from openinference.semconv.trace import SpanAttributes as S

    out: dict[str, Any] = {}
    paths = event.get("paths") or []
    if paths:
        path = paths[0]
        out[S.INPUT_VALUE] = path.get("query") or path.get("anchor", "")
        out.update({f"{NS}.anchor": path.get("anchor", ""), f"{NS}.anchor_type": path.get("anchor_type", "")})
        out.update({f"{NS}.{k}": path[k] for k in ("path_score", "new_hits_ratio", "candidates", "pruned_count",
                                                    "terminated_by") if _scalar(path.get(k))})
    for i, doc in enumerate(_documents(event)):
        prefix = f"{S.RETRIEVAL_DOCUMENTS}.{i}."
        out[prefix + D.DOCUMENT_ID] = str(doc["id"])
        out[prefix + D.DOCUMENT_CONTENT] = doc["content"]
        if isinstance(doc["score"], (int, float)):
            out[prefix + D.DOCUMENT_SCORE] = float(doc["score"])
        out[prefix + D.DOCUMENT_METADATA] = _json(doc["metadata"])
    return out


def _checks(prefix: str, checks: list[dict[str, Any]]) -> dict[str, Any]:
    """Each check as its value, the setting it is held to, that setting's value and whether it passed."""
    out: dict[str, Any] = {}
    for c in checks:
        key = f"{prefix}.{re.sub(r'[^A-Za-z0-9_]+', '_', c['signal']).strip('_')}"
        out[f"{key}.value"] = c["value"]
        out[f"{key}.setting"] = c["setting"]
        if c["threshold"] is not None:
            out[f"{key}.threshold"] = c["threshold"]
        if c["passed"] is not None:
            out[f"{key}.passed"] = c["passed"]
    failed = [c["signal"] for c in checks if c["passed"] is False]
    if failed:
        out[f"{NS}.gate.failed"] = failed
    return out


def _guardrail(event: dict[str, Any], signals: dict[str, Any] | None, settings: dict[str, Any]) -> dict[str, Any]:
    from agentic_rag.trace.run import gate_checks, signal_checks

    out: dict[str, Any] = {}
    if "confidence" in event:
        gate = event["confidence"]
        passed = gate.get("passed", True)
        out.update({f"{NS}.gate.decision": "PASS" if passed else "REFUSE", f"{NS}.gate.passed": passed})
        if gate.get("reason"):
            out[f"{NS}.gate.reason"] = str(gate["reason"])
        if gate.get("tier"):
            out[f"{NS}.gate.tier"] = str(gate["tier"])
        out.update(_checks(f"{NS}.gate.check", gate_checks(gate, settings)))
    if "decision" in event:
        decision = event["decision"]
        out.update({f"{NS}.gate.decision": str(decision.get("action", "")),
                    f"{NS}.gate.reason": str(decision.get("reason", ""))})
        if decision.get("explanation"):
            out[f"{NS}.gate.explanation"] = str(decision["explanation"])
        if decision.get("final_check"):
            out[f"{NS}.gate.final_check_pending"] = True
        if signals:
            out.update(_checks(f"{NS}.gate.signal", signal_checks(signals, settings)))
    return out


def _node_attributes(event: dict[str, Any], signals: dict[str, Any] | None, settings: dict[str, Any],
                     system: str) -> dict[str, Any]:
    from openinference.semconv.trace import OpenInferenceMimeTypeValues as Mime
    from openinference.semconv.trace import OpenInferenceSpanKindValues as Kind
    from openinference.semconv.trace import SpanAttributes as S

    node = event["node"]
    kind = Kind.RETRIEVER if node in RETRIEVERS else Kind.GUARDRAIL if node in GUARDRAILS else Kind.CHAIN
    written = {k: v for k, v in event.items() if k not in ("llm", "start", "ms", "node", "round")}
    out: dict[str, Any] = {
        S.OPENINFERENCE_SPAN_KIND: kind.value, S.GRAPH_NODE_ID: node, S.GRAPH_NODE_NAME: node,
        S.GRAPH_NODE_PARENT_ID: system,
        S.OUTPUT_VALUE: _json(written), S.OUTPUT_MIME_TYPE: Mime.JSON.value,
        f"{NS}.node": node, f"{NS}.round": int(event.get("round", 1)),
    }
    out.update({f"{NS}.{k}": event[k] for k in ("tokens", "llm_calls", "cpu_ms", "llm_ms") if _scalar(event.get(k))})
    out.update({f"{NS}.parts_ms.{k}": v for k, v in (event.get("parts_ms") or {}).items()})
    if kind == Kind.RETRIEVER:
        out.update(_retriever(event))
    elif kind == Kind.GUARDRAIL:
        out.update(_guardrail(event, signals, settings))
    return out


def _llm_attributes(call: dict[str, Any]) -> dict[str, Any]:
    from openinference.semconv.trace import MessageAttributes as M
    from openinference.semconv.trace import OpenInferenceSpanKindValues as Kind
    from openinference.semconv.trace import SpanAttributes as S

    out: dict[str, Any] = {S.OPENINFERENCE_SPAN_KIND: Kind.LLM.value, S.LLM_MODEL_NAME: call.get("model", ""),
                           f"{NS}.stage": call.get("stage", "")}
    messages = call.get("messages") or []
    for i, m in enumerate(messages):
        out[f"{S.LLM_INPUT_MESSAGES}.{i}.{M.MESSAGE_ROLE}"] = ROLES.get(m.get("role"), m.get("role", ""))
        out[f"{S.LLM_INPUT_MESSAGES}.{i}.{M.MESSAGE_CONTENT}"] = m.get("content", "")
    if messages:
        out[S.INPUT_VALUE] = messages[-1].get("content", "")
    if "output" in call:
        out[f"{S.LLM_OUTPUT_MESSAGES}.0.{M.MESSAGE_ROLE}"] = "assistant"
        out[f"{S.LLM_OUTPUT_MESSAGES}.0.{M.MESSAGE_CONTENT}"] = call["output"]
        out[S.OUTPUT_VALUE] = call["output"]
    for key, name in (("input_tokens", S.LLM_TOKEN_COUNT_PROMPT), ("output_tokens", S.LLM_TOKEN_COUNT_COMPLETION),
                      ("total_tokens", S.LLM_TOKEN_COUNT_TOTAL)):
        if isinstance(call.get(key), int):
            out[name] = call[key]
    return out


def _root_attributes(q: Question) -> dict[str, Any]:
    from openinference.semconv.trace import OpenInferenceSpanKindValues as Kind
    from openinference.semconv.trace import SpanAttributes as S

    out: dict[str, Any] = {S.OPENINFERENCE_SPAN_KIND: Kind.CHAIN.value, S.INPUT_VALUE: q.question,
                           S.OUTPUT_VALUE: q.answer, S.GRAPH_NODE_ID: q.system, S.GRAPH_NODE_NAME: q.system,
                           f"{NS}.question_id": q.id, f"{NS}.system": q.system}
    out.update({f"{NS}.{k}": v for k, v in q.facts.items() if _scalar(v)})
    return out


def emit_question(tracer, q: Question, settings: dict[str, Any], run: str = "") -> int:
    """Start and end the spans of one answered question with their recorded times; how many were made
    (0 for a question with no recorded node event: an old run, or one refused before the graph ran)."""
    from opentelemetry import trace
    from opentelemetry.trace import Status, StatusCode

    events = sorted((e for e in q.events if "start" in e), key=lambda e: e["start"])
    if not events:
        return 0
    start, end = events[0]["start"], max(_end(e) for e in events)
    root_attrs = {**_root_attributes(q), **({f"{NS}.run": run} if run else {})}
    root = tracer.start_span(q.system or "graph", start_time=_ns(start), attributes=root_attrs)
    made, signals = 1, None
    under_root = trace.set_span_in_context(root)
    for event in events:
        signals = event.get("signals", signals)
        span = tracer.start_span(event["node"], context=under_root, start_time=_ns(event["start"]),
                                 attributes=_node_attributes(event, signals, settings, q.system))
        under_node = trace.set_span_in_context(span)
        for call in event.get("llm") or []:
            llm = tracer.start_span(f"llm {call.get('stage', '')}".strip(), context=under_node,
                                    start_time=_ns(call["start"]), attributes=_llm_attributes(call))
            if call.get("error"):
                llm.set_status(Status(StatusCode.ERROR, call["error"]))
            llm.end(end_time=_ns(_end(call)))
            made += 1
        span.end(end_time=_ns(_end(event)))
        made += 1
    root.end(end_time=_ns(end))
    return made


# -- sending ----------------------------------------------------------------------------------------
EXPORT_BATCH_SPANS = 512  # spans per request when a run is re-sent: the SDK batch processor's own batch size


class _InBatches:
    """A span processor that exports ended spans in the caller's thread, ``EXPORT_BATCH_SPANS`` at a
    time, and counts what the collector accepted. The SDK's batch processor hands them to a background
    thread through a queue of 2,048 and drops what does not fit while a request is out: a 400-question
    run lost 192 of its 4,800 spans, said only in a logged warning. After a batch the collector refuses,
    the rest are counted as not sent rather than each waiting out the exporter's timeout."""

    def __init__(self, exporter, size: int = EXPORT_BATCH_SPANS) -> None:
        self.exporter, self.size = exporter, size
        self.pending: list = []
        self.sent = self.failed = 0

    def on_start(self, span, parent_context=None) -> None:
        pass

    def _on_ending(self, span) -> None:  # the SDK's processor interface
        pass

    def on_end(self, span) -> None:
        self.pending.append(span)
        if len(self.pending) >= self.size:
            self.force_flush()

    def force_flush(self, timeout_millis: int = 30000) -> bool:
        from opentelemetry.sdk.trace.export import SpanExportResult

        batch, self.pending = self.pending, []
        if batch and not self.failed and self.exporter.export(batch) == SpanExportResult.SUCCESS:
            self.sent += len(batch)
        else:
            self.failed += len(batch)
        return not self.failed

    def shutdown(self) -> None:
        self.force_flush()
        self.exporter.shutdown()


def provider_for(processor, project: str = PROJECT):
    """A tracer provider of its own (the process's global one is left to the application) that hands its
    spans to ``processor``, labelled with the service and the Phoenix project."""
    _require()
    from openinference.semconv.resource import ResourceAttributes
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import TracerProvider

    provider = TracerProvider(resource=Resource.create({"service.name": PROJECT,
                                                        ResourceAttributes.PROJECT_NAME: project}))
    provider.add_span_processor(processor)
    return provider


def otlp_exporter(endpoint: str):
    """OTLP/HTTP (protobuf) to ``endpoint``; headers (a Langfuse key) come from OTEL_EXPORTER_OTLP_HEADERS."""
    _require()
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter

    return OTLPSpanExporter(endpoint=traces_url(endpoint))


@dataclass
class Sent:
    questions: int
    spans: int
    sent: int
    failed: int
    skipped: list[str]


def send_questions(questions: Iterable[Question], settings: dict[str, Any], endpoint: str | None = None,
                   exporter=None, run: str = "", project: str = PROJECT) -> Sent:
    """Send the spans of finished questions to ``endpoint`` (or ``exporter``) and wait until they are out."""
    sender = _InBatches(exporter if exporter is not None else otlp_exporter(endpoint or ""))
    provider = provider_for(sender, project)
    tracer = provider.get_tracer(__name__)
    n = spans = 0
    skipped = []
    for q in questions:
        made = emit_question(tracer, q, settings, run)
        if made:
            n, spans = n + 1, spans + made
        else:
            skipped.append(q.id)
    provider.shutdown()  # sends the last batch
    return Sent(n, spans, sender.sent, sender.failed, skipped)


def send_run(run, endpoint: str, qid: str | None = None, exporter=None) -> Sent:
    """Re-send a run folder's questions (or one) with their recorded times."""
    rows = [run.row(qid)] if qid is not None else run.rows
    return send_questions((question_from_row(r, run.system) for r in rows), run.settings, endpoint, exporter,
                          run=run.path.name)


_LIVE: dict[str, Any] = {}
_LIVE_LOCK = threading.Lock()


def send_live(result, settings) -> None:
    """Send one just-answered question to ``OTLP_ENDPOINT`` when it is set (a ``runner`` observer that
    graphs/ registers): one provider per endpoint and process, batching in the background and flushed
    at exit, so a slow or absent collector never holds up a run (the SDK logs what it could not send)."""
    endpoint = settings.paths.OTLP_ENDPOINT
    if not endpoint:
        return
    with _LIVE_LOCK:
        provider = _LIVE.get(endpoint)
        if provider is None:
            exporter = otlp_exporter(endpoint)
            from opentelemetry.sdk.trace.export import BatchSpanProcessor

            provider = _LIVE[endpoint] = provider_for(BatchSpanProcessor(exporter))
    emit_question(provider.get_tracer(__name__), question_from_record(result), settings.public_dump())


def flush_live() -> None:
    for provider in list(_LIVE.values()):
        provider.force_flush()


def send_cli(run, endpoint: str, qid: str | None = None) -> str:
    """``trace RUN --otlp URL``: what was sent, as one line (TraceError when nothing could be)."""
    from agentic_rag.trace.run import TraceError

    why = missing_otel_packages()
    if why:
        raise TraceError(why)
    out = send_run(run, endpoint, qid)
    if out.sent < out.spans or not out.sent:
        if not out.spans:
            raise TraceError(f"no question of {run.path} has per-node events to send (recorded before they were)")
        raise TraceError(f"{traces_url(endpoint)} took {out.sent} of {out.spans} spans: is the collector running "
                         f"there (OTLP/HTTP), and are its headers set (OTEL_EXPORTER_OTLP_HEADERS)?")
    skipped = f"; {len(out.skipped)} without per-node events skipped" if out.skipped else ""
    questions = f"{out.questions} question{'s' if out.questions != 1 else ''}"
    return f"sent {out.sent} spans of {questions} to {traces_url(endpoint)}{skipped}"
