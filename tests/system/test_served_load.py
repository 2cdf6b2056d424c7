"""The served graph under load: eight clients of a real `langgraph dev` at once, one of them hostile, with
a scripted model behind the openai backend (a remote model's wait, no real LLM)."""

from __future__ import annotations

import json

import pytest

from testkit.fault_server import FaultServer
from testkit.load import NO_REPLY, clients_at_once, crowded_metadata, p95, rss_mb, timed_post
from testkit.processes import SUITE_SETTINGS, child_env
from testkit.records import record
from testkit.servers import console_script, graph_server_process, post

GOOD = ('Finding Nemo won {cite:76th academy} "At the 76th Academy Awards, held in 2004, '
        'Finding Nemo won the Oscar for Best Animated Feature".')
MODEL_S = 0.5  # each scripted reply waits this long, as a remote model does: clients share the wait, not a core
CLIENTS, HOSTILE = 8, 1  # one client of the eight sends the hostile body
QUIET, EACH = 3, 2  # requests sent alone first; then requests per normal client under load
CROWDED = 2_000_000  # empty objects in the hostile body's metadata: 6 MB, well inside MAX_RECORD_BYTES
LOAD_WITHIN_S = 60.0  # the load phase ends by itself then, whatever the server does


def test_served_graph_keeps_its_latency_and_memory_under_eight_clients_one_hostile(tmp_path):
    """Quiet first (one client at a time), then eight clients at once, one sending millions of ``{}`` in
    ``metadata`` (parsed on the event loop, such a body held every client for minutes and left gigabytes
    behind): no 5xx, the normal requests' p95 within twice the quiet one, the server's memory within 10%."""
    langgraph = console_script("langgraph")
    if langgraph is None:
        pytest.skip("langgraph-cli is not installed (extra: dev)")
    question = record()
    asked = json.dumps({"assistant_id": "baseline",
                         "input": {"question": question.query, "record": question.model_dump()}}).encode()
    hostile = crowded_metadata({"assistant_id": "baseline", "input": {"question": question.query}}, CROWDED)
    with FaultServer(reply=GOOD, default="hang", hang_s=MODEL_S) as model:  # "hang": the reply after MODEL_S
        env = {**child_env(SUITE_SETTINGS), "AGENTIC_RAG_LLM_BACKEND": "openai", "AGENTIC_RAG_OPENAI_BASE_URL": model.url,
               "AGENTIC_RAG_LLM_MODEL": "scripted"}
        # as many runs at once as clients: `langgraph dev` alone runs one at a time, and the rest queue
        with graph_server_process(langgraph, tmp_path, env, jobs=CLIENTS) as (port, _, server):
            assert post(port, asked, timeout=300)[0] == 200  # warm: the embedder loaded, the record indexed
            quiet = [timed_post(port, asked, 60) for _ in range(QUIET)]
            before_mb = rss_mb(server.pid)
            plans = [[asked] * EACH] * (CLIENTS - HOSTILE) + [[hostile]] * HOSTILE
            loaded = clients_at_once(port, plans, LOAD_WITHIN_S)
            after_mb = rss_mb(server.pid)
    normal = [reply for client in loaded[:-HOSTILE] for reply in client]
    quiet_p95, loaded_p95 = p95([s for _, s in quiet]), p95([s for _, s in normal])
    figures = (f"quiet p95 {quiet_p95:.2f} s, loaded p95 {loaded_p95:.2f} s, memory {before_mb:.0f} -> {after_mb:.0f} MB; "
               f"statuses {[status for client in loaded for status, _ in client]}")
    assert not [s for client in loaded for s, _ in client if s >= 500 or s == NO_REPLY], figures
    assert [s for s, _ in quiet + normal] == [200] * (QUIET + (CLIENTS - HOSTILE) * EACH), figures
    assert loaded_p95 <= 2 * quiet_p95, figures
    assert after_mb <= 1.1 * before_mb, figures
    assert [s for s, _ in loaded[-1]] == [422], figures  # the hostile body: refused on its bytes, before a run
