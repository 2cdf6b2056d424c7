"""A real Arize Phoenix receives a run of the bundled example, live (OTLP_ENDPOINT) and re-sent from the
run folder (`trace RUN --otlp URL`), and gives its spans back through its REST API with the parallel
workers nested under the question's span. Skipped where the `phoenix` extra is absent."""

from __future__ import annotations

import importlib.util
import json
import os
import sys
import time
import urllib.error
import urllib.request

import pytest
from typer.testing import CliRunner

from agentic_rag.cli import app
from agentic_rag.configuration import missing_otel_packages
from agentic_rag.eval.runner import run_eval
from agentic_rag.trace import otel
from testkit.fakes import ScriptedChat
from testkit.servers import free_port, running

pytestmark = pytest.mark.skipif(
    importlib.util.find_spec("phoenix") is None or missing_otel_packages() is not None,
    reason="arize-phoenix is not installed: pip install 'agentic-rag[phoenix]'")


@pytest.fixture(scope="module")
def phoenix(tmp_path_factory):
    """A Phoenix of its own: loopback only, a temporary working dir (its SQLite), no telemetry."""
    home = tmp_path_factory.mktemp("phoenix")
    port = free_port()
    env = {**os.environ, "PHOENIX_WORKING_DIR": str(home), "PHOENIX_HOST": "127.0.0.1", "PHOENIX_PORT": str(port),
           "PHOENIX_GRPC_PORT": str(free_port()), "PHOENIX_TELEMETRY_ENABLED": "false"}
    url = f"http://127.0.0.1:{port}"
    with running([sys.executable, "-m", "phoenix.server.main", "serve"], f"{url}/healthz", home / "phoenix.log",
                 timeout_s=120, env=env):
        yield url


def phoenix_spans(url: str, want: int, timeout_s: float = 30.0) -> list[dict]:
    """The project's spans once Phoenix has stored ``want`` of them (it ingests in the background)."""
    deadline = time.monotonic() + timeout_s
    while True:
        try:
            with urllib.request.urlopen(f"{url}/v1/projects/{otel.PROJECT}/spans?limit=1000", timeout=10) as resp:
                spans = json.load(resp)["data"]
        except urllib.error.HTTPError as exc:
            if exc.code != 404:  # 404: the project is made with its first stored span
                raise
            spans = []
        if len(spans) >= want or time.monotonic() > deadline:
            return spans
        time.sleep(0.5)


def test_phoenix_receives_the_run_with_its_workers_nested(phoenix, settings, tmp_path, monkeypatch):
    monkeypatch.setattr(otel, "_LIVE", {})
    live = settings.replace(OTLP_ENDPOINT=phoenix)
    run = tmp_path / "run"
    run_eval("example", "agent", live, run, n=1, progress=False,
             extra_config={"llm": ScriptedChat(replies=["I don't know."])})
    otel.flush_live()
    res = CliRunner().invoke(app, ["trace", str(run), "--otlp", phoenix])
    assert res.exit_code == 0 and res.output.startswith("sent "), res.output
    row = json.loads((run / "results.jsonl").read_text().splitlines()[0])
    per_question = len(row["events"]) + 1 + sum(len(e.get("llm", [])) for e in row["events"])

    spans = phoenix_spans(phoenix, 2 * per_question)
    assert len(spans) == 2 * per_question  # the live trace and the re-sent one, nothing lost or doubled
    roots = [s for s in spans if s["parent_id"] is None]
    assert len(roots) == 2 and len({r["context"]["trace_id"] for r in roots}) == 2
    for root in roots:
        assert root["name"] == "agent" and root["span_kind"] == "CHAIN"
        assert root["attributes"]["agentic_rag.question_id"] == row["id"]
        own = [s for s in spans if s["context"]["trace_id"] == root["context"]["trace_id"]]
        under_root = [s for s in own if s["parent_id"] == root["context"]["span_id"]]
        workers = [s for s in under_root if s["name"] == "worker" and s["attributes"]["agentic_rag.round"] == 1]
        assert len(workers) >= 2 and all(w["span_kind"] == "RETRIEVER" for w in workers)
        assert max(w["start_time"] for w in workers) < min(w["end_time"] for w in workers)  # side by side
        assert all(w["attributes"].get("retrieval.documents.0.document.id") for w in workers)
        decide = [s for s in under_root if s["name"] == "decide"][-1]
        assert decide["span_kind"] == "GUARDRAIL"
        gate = decide["attributes"]
        assert gate["agentic_rag.gate.decision"] == "ABSTAIN" and gate["agentic_rag.gate.reason"] == row["reason"]
        assert gate["agentic_rag.gate.signal.overlap_est.threshold"] == live.OVERLAP_MIN
        generate = next(s for s in under_root if s["name"] == "generate")
        llm = [s for s in own if s["parent_id"] == generate["context"]["span_id"]]
        assert [s["span_kind"] for s in llm] == ["LLM"] and llm[0]["attributes"]["llm.model_name"] == "scripted-fake"
    # the re-sent trace keeps the times the run recorded: both traces are the same question at the same time
    assert roots[0]["start_time"] == roots[1]["start_time"] and roots[0]["end_time"] == roots[1]["end_time"]
