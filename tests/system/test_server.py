"""The graphs under a real `langgraph dev` server: input checked before a run, timings in the output,
the settings schema published for LangGraph Studio."""

from __future__ import annotations

import json
import time
import urllib.request

import pytest

from graphs.server import input_problem, settings_problem
from testkit.servers import console_script, graph_server, post


def test_input_problem_names_the_field():
    assert "question" in input_problem({"assistant_id": "agent", "input": {}}, on_thread=False)
    assert input_problem({"assistant_id": "agent", "input": {"question": 3}}, False).startswith("input.question")
    assert "input.record" in input_problem({"assistant_id": "baseline", "input": {"question": "q", "record": "x"}}, False)
    assert "empty" in input_problem({"input": {"question": "  "}}, False)
    assert input_problem({"input": {"question": "who won?"}}, False) is None
    assert input_problem({"input": None}, on_thread=True) is None  # continues a thread
    assert input_problem({"command": {"resume": 1}}, False) is None


def test_settings_problem_names_the_setting_in_either_spelling():
    question = {"question": "who won?"}
    assert settings_problem({"input": question, "context": {"budget": {"MAX_ROUNDS": 1}}}) is None
    assert settings_problem({"input": question, "config": {"configurable": {"MAX_ROUNDS": 1, "thread_id": "t"}}}) is None
    said = input_problem({"input": question, "context": {"retrieval": {"RETRIEVAL_KK": 1}}}, False)
    assert said.startswith("context: unknown setting retrieval.RETRIEVAL_KK") and "did you mean RETRIEVAL_K" in said
    said = input_problem({"input": question, "config": {"configurable": {"MMR_LAMBDA": 3}}}, False)
    assert said.startswith("config.configurable: setting retrieval.MMR_LAMBDA") and "\n" not in said


def test_graphs_declare_their_input_output_and_working_shapes():
    from typing import get_type_hints

    from pydantic import TypeAdapter

    from agentic_rag.state import Bundle, RAGState, Signals, WorkerPath
    from graphs import get_graph

    for system in ("agent", "baseline"):
        graph = get_graph(system)
        assert graph.get_input_jsonschema()["required"] == ["question"]
        assert list(graph.get_output_jsonschema()["properties"]) == ["result"]
        assert "budget" in graph.get_context_jsonschema()["properties"]
    bundle = TypeAdapter(Bundle).json_schema()
    assert bundle["properties"]["passages"]["items"] == {"$ref": "#/$defs/Passage"}
    assert "terminated_by" in TypeAdapter(WorkerPath).json_schema()["properties"]
    assert TypeAdapter(Signals).json_schema()["properties"]["verified_score"]["anyOf"][1] == {"type": "null"}
    assert get_type_hints(RAGState)["bundle"] is Bundle


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    """One `langgraph dev` for the module's tests (a start costs seconds): none changes what it serves."""
    langgraph = console_script("langgraph")
    if langgraph is None:
        pytest.skip("langgraph-cli is not installed (extra: dev)")
    with graph_server(langgraph, tmp_path_factory.mktemp("served")) as (port, _):
        yield port


def test_served_graph_checks_its_input_and_reports_timings(server, tmp_path):
    status, body = post(server, {"assistant_id": "agent", "input": {}})
    assert status == 422 and "question" in body["detail"] and "__error__" not in body
    status, body = post(server, {"assistant_id": "baseline", "input": {"question": 3}})
    assert status == 422 and body["detail"].startswith("input.question")
    # a question its only page cannot answer: refused before any LLM call, so no model is loaded
    record = {"interaction_id": "srv-1", "query": "who designed the first jet engine for the luftwaffe?", "answer": "x",
              "search_results": [{"page_name": "Gardening", "page_url": "toy://g",
                                  "page_result": "Tomatoes grow best in warm soil with six hours of sun a day."}]}
    status, body = post(server, {"assistant_id": "agent",
                                 "input": {"question": record["query"], "question_id": "srv-1", "record": record}})
    assert status == 200 and "__error__" not in body, body
    result = body["result"]
    assert result["status"] == "refuse" and result["reason"] == "ABSTAIN_NO_EVIDENCE"
    assert result["latency_ms"] > 0 and {"anchors", "worker", "collect_signals", "decide"} <= set(result["latency_by_node_ms"])
    assert list(result["latency_by_node_ms"])[:2] == ["anchors", "worker"]
    assert set(body) == {"result"}  # the output schema: the record's pages and the working state stay in the run


def test_served_graphs_publish_the_settings_and_take_them_as_context(server):
    """What LangGraph Studio reads and sends: the settings sections as each graph's context schema, and a
    run's context in the nested form (a setting changed there reaches the graph's nodes)."""
    status, found = post(server, {"graph_id": "agent"}, path="/assistants/search")
    assert status == 200 and found
    with urllib.request.urlopen(f"http://127.0.0.1:{server}/assistants/{found[0]['assistant_id']}/schemas") as resp:
        schemas = json.load(resp)
    assert list(schemas["context_schema"]["properties"])[:3] == ["llm", "retrieval", "agent"]
    limit = schemas["context_schema"]["$defs"]["BudgetSettings"]["properties"]["MAX_QUESTION_CHARS"]
    assert limit["unit"] == "characters" and limit["default"] == 1000
    assert list(schemas["output_schema"]["properties"]) == ["result"]
    question = {"question": "who designed the first jet engine for the luftwaffe?", "index_dir": "/nonexistent"}
    status, body = post(server, {"assistant_id": "agent", "input": question,
                                  "context": {"budget": {"MAX_QUESTION_CHARS": 10}}})
    assert status == 200 and body["result"]["reason"] == "ABSTAIN_QUESTION_TOO_LONG", body
    status, body = post(server, {"assistant_id": "agent", "input": question, "context": {"budget": {"MAX_ROUND": 1}}})
    assert status == 422 and "did you mean MAX_ROUNDS" in body["detail"]


# --- a request's size once parsed: bounded on its bytes, parsed off the event loop ------------------------


def _through_middleware(body: bytes, path: str = "/runs/wait") -> tuple[int, bool]:
    """(status, whether the server behind was reached) of one POST through ``RequireGraphInput``, in process."""
    import asyncio

    from graphs.server import RequireGraphInput

    reached = []

    async def server(scope, receive, send):
        reached.append((await receive())["body"])
        await send({"type": "http.response.start", "status": 200, "headers": []})
        await send({"type": "http.response.body", "body": b"{}"})

    async def exchange() -> list[dict]:
        sent, incoming = [], [{"type": "http.request", "body": body, "more_body": False}]

        async def receive():
            return incoming.pop(0) if incoming else {"type": "http.disconnect"}

        async def send(message):
            sent.append(message)

        await RequireGraphInput(server)({"type": "http", "path": path, "method": "POST"}, receive, send)
        return sent

    sent = asyncio.run(exchange())
    return sent[0]["status"], bool(reached) and reached[0] == body


def test_a_body_of_too_many_values_or_levels_is_refused_from_its_bytes_before_any_parser_runs(monkeypatch):
    """Millions of ``{}`` fit in MAX_RECORD_BYTES and parse into as many dicts (60 MB took a server to
    9.3 GB and two minutes): the count and the depth are read from the bytes, and a body past either
    never reaches a parser."""
    import graphs.server as server
    from testkit.load import crowded_metadata

    def parser_reached(*args):
        raise AssertionError("a body past the bounds was parsed")

    question = {"assistant_id": "agent", "input": {"question": "who won?"}}
    crowded = crowded_metadata(question, 300_000)
    with monkeypatch.context() as patched:
        patched.setattr(server, "parse_json", parser_reached)
        assert _through_middleware(crowded) == (422, False)
    assert "MAX_REQUEST_ELEMENTS" in server.shape_problem(crowded_metadata(question, server.MAX_REQUEST_ELEMENTS + 1))
    assert server.shape_problem(crowded_metadata(question, 1000)) is None
    # text counts once per string, whatever it holds: a page of markup and commas is one value
    page = json.dumps({**question, "record": {"search_results": [{"page_result": '<p a="b">x, [y] {z}</p>' * 50_000}]}})
    assert server.shape_problem(page.encode()) is None
    assert server.shape_problem(b"[" * 64 + b"]" * 64) is None
    assert "nested more than 64" in server.shape_problem(b'{"metadata": ' + b"[" * 64 + b"]" * 64 + b"}")
    for malformed in (b'{"a": "never closed', b"]" * 1000, b'"' * 1001):  # the parser's to refuse, at once
        assert server.shape_problem(malformed) is None


def test_request_bodies_are_read_and_checked_off_the_event_loop(monkeypatch):
    """A body of MAX_RECORD_BYTES takes seconds to parse and check; on the event loop every other client
    of the server waits for it (116 s, issue 72), so it is parsed in a worker thread."""
    import threading

    import graphs.server as server

    parsed_on = []
    real = server.parse_json
    monkeypatch.setattr(server, "parse_json", lambda text: (parsed_on.append(threading.current_thread()), real(text))[1])
    body = json.dumps({"assistant_id": "agent", "input": {"question": "who won?"}}).encode()
    assert _through_middleware(body) == (200, True)  # checked, then replayed to the server unchanged
    assert parsed_on and threading.main_thread() not in parsed_on  # asyncio.run's loop runs on the main thread


def test_served_graph_refuses_a_request_of_many_empty_objects_at_once(server):
    """A real `langgraph dev`: 300,000 ``{}`` in ``metadata`` (900 kB, three times the bound) are 422 naming
    the bound, in well under the seconds parsing them took, and the server answers the next client."""
    from testkit.load import crowded_metadata

    crowded = crowded_metadata({"assistant_id": "agent", "input": {"question": "who won?"}}, 300_000)
    t0 = time.monotonic()
    status, body = post(server, crowded, timeout=120)
    assert status == 422 and time.monotonic() - t0 < 5, (status, time.monotonic() - t0)
    assert "MAX_REQUEST_ELEMENTS" in body["detail"] and "\n" not in body["detail"]
    with urllib.request.urlopen(f"http://127.0.0.1:{server}/ok", timeout=5) as resp:
        assert resp.status == 200
