"""OpenInference spans: what a run records of its LLM calls, and the spans built from it (nesting of the
parallel workers, span kinds, retrieval documents, LLM messages, the gate's decision against its
thresholds), checked with the OpenTelemetry SDK's in-memory exporter; Phoenix itself: test_phoenix.py."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from agentic_rag.cli import app
from agentic_rag.configuration import Settings, SettingsError
from agentic_rag.runner import answer
from agentic_rag.trace import otel
from agentic_rag.trace.run import load_run
from testkit.fakes import ScriptedChat
from testkit.records import record
from testkit.scripted_runs import REPLIES, make_run, rows_of

pytest.importorskip("opentelemetry.sdk", reason="the otel extra is not installed: pip install 'agentic-rag[otel]'")
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

KIND = "openinference.span.kind"


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory) -> Path:
    return make_run(tmp_path_factory.mktemp("otel") / "agent-run")


@pytest.fixture(scope="module")
def spans(run_dir):
    exporter = InMemorySpanExporter()
    sent = otel.send_run(load_run(run_dir), "", exporter=exporter)
    assert sent.failed == 0 and sent.sent == sent.spans == len(exporter.get_finished_spans())
    return exporter.get_finished_spans()


def tree(spans, question_id: str):
    """The root span of one question and its spans by span id."""
    root = next(s for s in spans if s.parent is None and s.attributes["agentic_rag.question_id"] == question_id)
    own = {s.context.span_id: s for s in spans if s.context.trace_id == root.context.trace_id}
    return root, own


def children(own, parent, name: str | None = None):
    return sorted((s for s in own.values() if s.parent is not None and s.parent.span_id == parent.context.span_id
                   and (name is None or s.name == name)), key=lambda s: s.start_time)


def test_each_llm_call_is_recorded_whole_in_its_node_event(run_dir):
    ok = rows_of(run_dir)["toy-ok"]
    generate = next(e for e in ok["events"] if e["node"] == "generate")
    [call] = generate["llm"]
    assert call["stage"] == "generation" and call["model"] == "scripted-fake"
    assert [m["role"] for m in call["messages"]] == ["system", "human"]
    assert "76th Academy Awards" in call["messages"][-1]["content"]  # the whole prompt, passages included
    assert call["output"].startswith("Finding Nemo won.") and call["output"] == ok["draft"]
    assert call["input_tokens"] > 0 and call["output_tokens"] > 0
    assert generate["start"] <= call["start"] and call["ms"] <= generate["ms"]


def test_a_question_is_one_trace_with_its_parallel_workers_under_the_graph_span(spans, run_dir):
    roots = [s for s in spans if s.parent is None]
    assert sorted(s.attributes["agentic_rag.question_id"] for s in roots) == sorted(rows_of(run_dir))
    assert len({s.context.trace_id for s in roots}) == len(roots)  # one trace per question
    root, own = tree(spans, "toy-ok")
    assert root.name == "agent" and root.attributes[KIND] == "CHAIN"
    assert root.attributes["input.value"] == record().query and root.attributes["agentic_rag.judgement"] == "accurate"
    nodes = children(own, root)
    assert [s.name for s in nodes][:1] == ["anchors"] and nodes[-1].name == "finalize"
    workers = children(own, root, "worker")
    assert len(workers) >= 2, "the toy question has two anchors, so two workers"
    # they were fanned out together: siblings under the question's span, every one started before the
    # supervisor that merges them (how far they overlap in time depends on the machine: a cached
    # retrieval takes under a millisecond), and all lie inside the question's span
    supervise = min(s.start_time for s in nodes if s.name == "supervise")
    assert len({w.parent.span_id for w in workers}) == 1 and max(w.start_time for w in workers) <= supervise
    assert all(root.start_time <= s.start_time <= s.end_time <= root.end_time for s in own.values())
    anchors = {w.attributes["agentic_rag.anchor"] for w in workers}
    assert len(anchors) == len(workers)


def test_span_kinds_and_what_each_kind_carries(spans):
    root, own = tree(spans, "toy-ok")
    kinds = {s.name: s.attributes[KIND] for s in children(own, root)}
    assert kinds["worker"] == "RETRIEVER" and kinds["decide"] == "GUARDRAIL" and kinds["confidence_gate"] == "GUARDRAIL"
    assert kinds["anchors"] == kinds["supervise"] == kinds["generate"] == kinds["finalize"] == "CHAIN"
    worker = children(own, root, "worker")[0]
    docs = {k: v for k, v in worker.attributes.items() if k.startswith("retrieval.documents.0.")}
    assert docs["retrieval.documents.0.document.id"] and docs["retrieval.documents.0.document.content"]
    assert isinstance(docs["retrieval.documents.0.document.score"], float)
    [generate] = children(own, root, "generate")
    [llm] = children(own, generate)
    a = llm.attributes
    assert a[KIND] == "LLM" and a["llm.model_name"] == "scripted-fake" and a["agentic_rag.stage"] == "generation"
    assert a["llm.input_messages.0.message.role"] == "system" and a["llm.input_messages.1.message.role"] == "user"
    assert a["llm.output_messages.0.message.content"].startswith("Finding Nemo won.")
    assert a["llm.token_count.total"] == a["llm.token_count.prompt"] + a["llm.token_count.completion"] > 0


def test_the_guardrail_spans_carry_the_decision_and_each_signal_against_its_threshold(spans, run_dir):
    settings = load_run(run_dir).settings
    root, own = tree(spans, "toy-ok")
    decide = children(own, root, "decide")[-1].attributes
    assert decide["agentic_rag.gate.decision"] == "STOP" and decide["agentic_rag.gate.reason"] == "STOP_OVERLAP_OK"
    assert decide["agentic_rag.gate.signal.overlap_est.setting"] == "OVERLAP_MIN"
    assert decide["agentic_rag.gate.signal.overlap_est.threshold"] == settings["OVERLAP_MIN"]
    assert decide["agentic_rag.gate.signal.overlap_est.value"] >= settings["OVERLAP_MIN"]
    assert decide["agentic_rag.gate.signal.overlap_est.passed"] is True
    gate = children(own, root, "confidence_gate")[0].attributes
    assert gate["agentic_rag.gate.decision"] == "PASS" and gate["agentic_rag.gate.passed"] is True
    # a refusal names the checks that failed
    none_root, none_own = tree(spans, "toy-none")
    refused = children(none_own, none_root, "decide")[-1].attributes
    assert refused["agentic_rag.gate.decision"] == "ABSTAIN" and refused["agentic_rag.gate.reason"].startswith("ABSTAIN")
    assert none_root.attributes["agentic_rag.status"] == "refuse"


def test_otlp_endpoint_sends_each_answered_question_live(settings, monkeypatch):
    exporter = InMemorySpanExporter()
    monkeypatch.setattr(otel, "otlp_exporter", lambda endpoint: exporter)  # the collector; Phoenix: test_phoenix.py
    monkeypatch.setattr(otel, "_LIVE", {})
    live = settings.replace(OTLP_ENDPOINT="http://collector.invalid:4318")
    result = answer("agent", live, record=record(), extra_config={"llm": ScriptedChat(replies=list(REPLIES))})
    otel.flush_live()
    got = exporter.get_finished_spans()
    root = next(s for s in got if s.parent is None)
    assert root.attributes["agentic_rag.question_id"] == result.question_id
    assert {s.name for s in got} >= {"agent", "worker", "decide", "llm generation"}
    assert len(got) == len(result.events) + 1 + sum(len(e.get("llm", [])) for e in result.events)


def test_traces_url_accepts_a_base_or_a_full_url():
    assert otel.traces_url("http://127.0.0.1:6006") == "http://127.0.0.1:6006/v1/traces"
    assert otel.traces_url("https://cloud.langfuse.com/api/public/otel/") == \
        "https://cloud.langfuse.com/api/public/otel/v1/traces"
    assert otel.traces_url("http://h:4318/v1/traces") == "http://h:4318/v1/traces"


def test_without_the_packages_the_setting_and_the_flag_say_how_to_install_them(run_dir, monkeypatch):
    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec",
                        lambda name, *a: None if name.startswith("opentelemetry") else real(name, *a))
    with pytest.raises(SettingsError, match=r"pip install 'agentic-rag\[otel\]'"):
        Settings.load(overrides={"OTLP_ENDPOINT": "http://127.0.0.1:6006"})
    assert Settings.load(overrides={"OTLP_ENDPOINT": ""}).paths.OTLP_ENDPOINT is None  # empty = off
    with pytest.raises(SettingsError, match="must be an http:// or https:// URL"):
        Settings.load(overrides={"OTLP_ENDPOINT": "localhost:6006"})
    res = CliRunner().invoke(app, ["trace", str(run_dir), "--otlp", "http://127.0.0.1:6006"])
    assert res.exit_code == 2 and "pip install 'agentic-rag[otel]'" in res.output
    assert "Traceback" not in res.output and len(res.output.strip().splitlines()) == 1


def test_trace_otlp_says_when_no_collector_took_the_spans(run_dir, monkeypatch):
    from testkit.servers import free_port

    monkeypatch.setenv("OTEL_EXPORTER_OTLP_TIMEOUT", "2")
    url = f"http://127.0.0.1:{free_port()}"  # nothing listens there
    res = CliRunner().invoke(app, ["trace", str(run_dir), "--otlp", url, "--id", "toy-ok"])
    assert res.exit_code == 2 and "is the collector running" in res.output, res.output


def test_a_run_with_more_spans_than_the_sdk_queue_arrives_whole(run_dir, spans, tmp_path):
    from testkit.otlp_collector import SDK_BATCH, SDK_SPAN_QUEUE, OtlpCollector, repeated_run

    # more spans than the SDK's queue and its first batch hold while the collector's first reply is held
    # back: a sender that queues them for a background thread drops some
    copies = (SDK_SPAN_QUEUE + SDK_BATCH) // len(spans) + 40
    big = repeated_run(run_dir, tmp_path / "big", copies)
    with OtlpCollector(first_reply_s=2.0) as collector:
        res = CliRunner().invoke(app, ["trace", str(big), "--otlp", collector.url])
    assert res.exit_code == 0, res.output
    assert collector.spans == len(spans) * copies > SDK_SPAN_QUEUE + SDK_BATCH
    assert f"sent {collector.spans} spans of {3 * copies} questions" in res.stdout


def test_trace_otlp_fails_when_the_collector_takes_only_some_spans_and_stops_sending(run_dir, spans, tmp_path):
    from testkit.otlp_collector import OtlpCollector, repeated_run

    copies = 3 * otel.EXPORT_BATCH_SPANS // len(spans)  # three batches or more
    with OtlpCollector(refuse_after=1) as collector:
        res = CliRunner().invoke(app, ["trace", str(repeated_run(run_dir, tmp_path / "big", copies)), "--otlp", collector.url])
    assert res.exit_code == 2 and f"took {otel.EXPORT_BATCH_SPANS} of {len(spans) * copies} spans" in res.output, res.output
    assert collector.requests == 2  # the batch refused, and no other after it


@pytest.mark.model
def test_a_real_model_call_is_recorded_with_its_model_name_and_token_counts(settings):
    from langchain_core.messages import HumanMessage

    from agentic_rag.llm.factory import get_chat_model
    from agentic_rag.llm.usage import invoke_llm
    from agentic_rag.timing import node_clock

    llm = get_chat_model(settings.replace(LLM_BACKEND="local"))
    with node_clock() as clock:
        reply = invoke_llm(llm, [HumanMessage(content="Name one primary colour.")], "generation", None, max_tokens=6)
    [call] = clock.calls
    assert call["model"] == llm.model_name and call["output"] == reply.content
    assert call["input_tokens"] > 0 and 0 < call["output_tokens"] <= 6 and call["ms"] > 0


def test_a_run_resumes_whether_or_not_its_spans_are_sent(tmp_path):
    from agentic_rag.eval.resume import check_resumable

    before = {"system": "agent", "settings": Settings.load().public_dump()}
    (tmp_path / "config.json").write_text(json.dumps(before))
    check_resumable(tmp_path, {**before, "settings": {**before["settings"], "OTLP_ENDPOINT": "http://127.0.0.1:6006"}})
