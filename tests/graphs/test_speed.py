"""Where a question's time goes (node wall / CPU / LLM time, parts), one index build per question
however many workers ask, the chunk-vector cache, remembered query vectors, and the vector store
chosen by settings."""

from __future__ import annotations

import json
import subprocess
import sys
import threading
import time

import numpy as np
import pytest
from langchain_core.vectorstores import InMemoryVectorStore

from agentic_rag.configuration import Settings, SettingsError
from agentic_rag.ingest import ingest
from agentic_rag.ingest.ingest import index_for_record
from agentic_rag.llm.factory import count_tokens
from agentic_rag.llm.usage import UsageLedger, invoke_llm
from agentic_rag.retrieval.embedding_cache import CACHE_FILE
from agentic_rag.retrieval.embeddings import Embedder, get_embedder
from agentic_rag.retrieval.hybrid import HybridIndex
from agentic_rag.retrieval.vectorstore import FaissVectorStore
from agentic_rag.runner import answer
from agentic_rag.telemetry import read_rows
from agentic_rag.timing import node_clock, part
from agentic_rag.workers.source import retrieve
from testkit.fakes import ScriptedChat
from testkit.records import QUOTE_2004, record

LLM_SLEEP_S = 0.4


class SlowChat(ScriptedChat):
    """A scripted model whose every call takes ``LLM_SLEEP_S`` of wall time and almost no CPU."""

    def _generate(self, messages, stop=None, run_manager=None, **kwargs):
        time.sleep(LLM_SLEEP_S)
        return super()._generate(messages, stop, run_manager, **kwargs)


class PassCountingChat(SlowChat):
    """A scripted model that says, as the in-process one does, how many passes over its weights a reply took."""

    def _generate(self, messages, stop=None, run_manager=None, **kwargs):
        result = super()._generate(messages, stop, run_manager, **kwargs)
        message = result.generations[0].message
        message.response_metadata["forward_passes"] = max(1, message.usage_metadata["output_tokens"] // 3)
        return result


def _fresh(settings: Settings, **changes) -> Settings:
    ingest._MEMORY.clear()  # the in-process LRU and the session's shared index cache would hide the
    fresh = settings.replace(**{"INDEX_CACHE_DIR": None, **changes})  # disk and build paths,
    get_embedder(fresh).forget()  # and vectors an earlier test's same question left would hide the embedding
    return fresh


def test_parts_are_exclusive_and_outside_a_node_nothing_is_booked():
    with part("ignored"):
        pass  # no node clock: a no-op
    with node_clock() as clock:
        with part("outer"):
            time.sleep(0.05)
            with part("inner"):
                time.sleep(0.1)
    assert clock.parts["inner"] >= 100
    assert 50 <= clock.parts["outer"] < 100  # the inner block is not counted twice


def test_ledger_books_llm_wall_time_per_stage_and_the_running_node():
    fake = SlowChat(replies=["yes"])
    ledger = UsageLedger()
    with node_clock() as clock:
        invoke_llm(fake, [], "judge", ledger)
    assert ledger.ms_by_stage["judge"] >= LLM_SLEEP_S * 1000 and clock.llm_ms >= LLM_SLEEP_S * 1000
    assert ledger.by_stage["judge"]["calls"] == 1  # the token rows keep their shape


def test_tokens_per_pass_are_booked_where_the_model_counts_its_passes():
    """An in-process model says how many passes over its weights a reply took (speculative decoding verifies
    several proposed tokens per pass); the ledger adds them up per stage and ``tokens_per_pass`` divides. A
    model that does not count (a served one) is not listed."""
    from langchain_core.messages import AIMessage

    from agentic_rag.budget import tokens_per_pass

    ledger = UsageLedger()
    usage = {"input_tokens": 50, "output_tokens": 12, "total_tokens": 62}
    for passes in (4, 2):
        ledger.record("generation", AIMessage("x", usage_metadata=usage, response_metadata={"forward_passes": passes}))
    ledger.record("verify", AIMessage("yes", usage_metadata={"input_tokens": 9, "output_tokens": 1, "total_tokens": 10}))
    assert ledger.by_stage["generation"]["forward_passes"] == 6 and "forward_passes" not in ledger.by_stage["verify"]
    assert tokens_per_pass(ledger.by_stage) == {"generation": 4.0}
    assert tokens_per_pass(None) == {}


def test_result_and_telemetry_carry_wall_cpu_and_llm_time_per_node(agent_settings):
    s = _fresh(agent_settings)
    fake = PassCountingChat(replies=[f'Finding Nemo won. {{cite:76th academy}} "{QUOTE_2004}"'],
                            count_tokens=lambda t: count_tokens(t, s))
    result = answer("agent", s, record=record(), extra_config={"llm": fake})
    assert result.status == "ok" and len(fake.calls) == 1
    nodes = result.latency_by_node_ms
    assert set(result.cpu_by_node_ms) == set(nodes) == set(result.llm_by_node_ms)
    # the only LLM call is the answer: its wall time is booked to generate, to no other node
    assert LLM_SLEEP_S * 1000 <= result.llm_by_node_ms["generate"] <= nodes["generate"]
    assert result.llm_ms == pytest.approx(result.llm_by_node_ms["generate"], abs=0.1)
    assert all(ms == 0 for node, ms in result.llm_by_node_ms.items() if node != "generate")
    # a sleeping model costs wall time, not CPU: the thread's CPU time shows the difference
    assert result.cpu_by_node_ms["generate"] < nodes["generate"] - LLM_SLEEP_S * 500
    assert result.cpu_ms > 0 and result.latency_ms >= sum(ms for n, ms in nodes.items() if n != "worker")
    workers = [e for e in result.events if e["node"] == "worker"]
    assert workers and all({"index", "search", "embed"} <= set(e["parts_ms"]) for e in workers)
    assert all(sum(e["parts_ms"].values()) <= e["ms"] + 1 for e in workers)
    row = read_rows(s.paths.TELEMETRY_PATH)[-1]
    assert {"anchors", "worker", "generate"} <= set(row["latency_by_node_ms"]) and row["llm_by_node_ms"]["generate"] > 0
    generation = result.tokens["detail"]["generation"]  # three tokens a pass, as the model said
    assert row["tokens_per_pass"] == {"generation": round(generation["output_tokens"] / generation["forward_passes"], 2)}
    assert 2.5 <= row["tokens_per_pass"]["generation"] <= 3.5


def test_parallel_workers_build_a_question_index_once(settings, monkeypatch):
    s = _fresh(settings)
    builds = []
    real_build = HybridIndex.build.__func__

    def counting_build(cls, *args, **kwargs):
        builds.append(threading.get_ident())
        time.sleep(0.2)  # keep the first build in flight while the others arrive
        return real_build(cls, *args, **kwargs)

    monkeypatch.setattr(HybridIndex, "build", classmethod(counting_build))
    got: list[HybridIndex] = []
    threads = [threading.Thread(target=lambda: got.append(index_for_record(record(), s))) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(builds) == 1 and len(got) == 4 and all(index is got[0] for index in got)
    assert not ingest._IN_FLIGHT  # nothing left behind for the next question


def test_a_page_is_embedded_once_across_runs_and_questions(settings, monkeypatch, tmp_path):
    shared = tmp_path / "vectors"
    first = _fresh(settings, EMBEDDING_CACHE_DIR=str(shared))
    built = index_for_record(record(), first)
    assert (shared / CACHE_FILE).is_file()
    embedded: list[int] = []
    real_embed = Embedder.embed

    def counting_embed(self, texts, show_progress=False):
        embedded.append(len(texts))
        return real_embed(self, texts, show_progress)

    monkeypatch.setattr(Embedder, "embed", counting_embed)
    # another run (its own artifacts folder, so no per-question index to load): no chunk is embedded again
    second = _fresh(settings, ARTIFACTS_DIR=str(tmp_path / "other-run"), EMBEDDING_CACHE_DIR=str(shared))
    again = index_for_record(record(), second)
    assert embedded == [] and np.array_equal(again.embeddings, built.embeddings)
    # another question sharing one page: only the new page's chunks are embedded
    rec = record()
    rec.search_results[0].page_result = "A new page about the 2004 Oscars. " * 20
    index_for_record(rec, _fresh(second))
    assert embedded == [1]
    # off: every chunk is embedded
    index_for_record(record(), _fresh(settings, ARTIFACTS_DIR=str(tmp_path / "third"), EMBEDDING_CACHE=False))
    assert embedded[-1] == len(built)


def test_query_vectors_are_remembered_exactly(settings):
    embedder = get_embedder(settings)
    texts = ["who won best animated feature in 2004?", "Finding Nemo won the Oscar.", "who won best animated feature in 2004?"]
    each = embedder.embed_each(texts)
    alone = np.stack([embedder.embed([t])[0] for t in texts])
    assert np.array_equal(each, alone)  # bit for bit what a fresh single pass computes
    calls = []
    original = embedder._model.encode
    embedder._model.encode = lambda *a, **k: calls.append(a) or original(*a, **k)
    try:
        assert np.array_equal(embedder.embed_each(texts[:2]), each[:2]) and calls == []
    finally:
        del embedder._model.encode


def test_default_store_ranks_exactly_as_faiss(settings):
    index = index_for_record(record(), _fresh(settings))
    assert isinstance(index.store, FaissVectorStore)
    qv = index.embedder.embed_each(["which movie won best animated feature at the 2004 oscars?"])[0]
    _, raw = index.faiss.search(qv[None, :], len(index))
    docs = index.store.similarity_search_by_vector(qv.tolist(), k=len(index))
    assert [d.metadata["row"] for d in docs] == [int(i) for i in raw[0]]


@pytest.mark.parametrize("store", ["inmemory", "langchain_core.vectorstores:InMemoryVectorStore"])
def test_another_langchain_store_is_chosen_by_settings_alone(settings, store):
    question = "which movie won best animated feature at the 2004 oscars?"
    faiss_hits = retrieve(index_for_record(record(), _fresh(settings)), question, settings)
    other = _fresh(settings, VECTOR_STORE=store)
    index = index_for_record(record(), other)  # the same cached folder, loaded into the other store
    assert isinstance(index.store, InMemoryVectorStore)
    dense = index.store.similarity_search_by_vector(index.embedder.embed_each([question])[0].tolist(), k=2)
    assert {d.page_content.split(",")[0] for d in dense} == {"At the 76th Academy Awards", "At the 77th Academy Awards in 2005"}
    hits = retrieve(index, question, other)  # the same hybrid ranking as with FAISS (no ties on this toy)
    assert [(h.chunk_id, h.fused_score) for h in hits] == [(h.chunk_id, h.fused_score) for h in faiss_hits]


@pytest.mark.parametrize("value, why", [("not a store", "must be 'faiss'"), ("no_such_module:Store", "cannot be imported"),
                                        ("collections:OrderedDict", "not a LangChain VectorStore")])
def test_a_store_that_cannot_be_used_is_a_settings_error(value, why):
    with pytest.raises(SettingsError, match=f"VECTOR_STORE.*{why}"):
        Settings.load(overrides={"VECTOR_STORE": value})


def test_kit_telemetry_rows_carry_the_node_times(settings, tmp_path):
    from agentic_rag.crag_adapter import UserModel
    from testkit.records import UNIVERSAL, kit_batches

    rec = record("who owns dreamworks animation?", {"Universal": "DreamWorks Animation is owned by Universal Pictures."})
    kit = settings.replace(CRAG_ARTIFACTS_DIR=str(tmp_path / "kit"), CRAG_SECONDS_PER_QUERY=600.0)
    model = UserModel(settings=kit, batch_size=1, llm=ScriptedChat(replies=[UNIVERSAL]))
    model.batch_generate_answer(next(kit_batches([rec], 1)))
    row = model.last_batch[0]
    assert {"anchors", "worker", "decide"} <= set(row["latency_by_node_ms"]) and set(row["cpu_by_node_ms"]) == set(
        row["latency_by_node_ms"]) and row["llm_ms"] >= 0


@pytest.mark.model
def test_eval_with_the_real_model_records_times_and_prints_the_cold_start(own_index_cache, tmp_path):
    from typer.testing import CliRunner

    from agentic_rag.cli import app
    from agentic_rag.eval.results import read_results
    from testkit.records import lightest_examples

    out = tmp_path / "run"
    # an index cache of its own: the suite's shared one may already hold this question's pages
    res = CliRunner().invoke(app, ["eval", "--dataset", str(lightest_examples(tmp_path, 1)), "--n", "1", "--system",
                                   "baseline", "--out", str(out),
                                   "-o", f"ARTIFACTS_DIR={tmp_path / 'artifacts'}", "-o", f"INDEX_CACHE_DIR={tmp_path / 'index'}"])
    assert res.exit_code == 0, res.output
    assert "cold start:" in res.stderr and "LLM load" in res.stderr and "embedder load" in res.stderr
    row = read_results(out / "results.jsonl")[0]
    assert 0 < row["llm_by_node_ms"]["generate"] <= row["latency_by_node_ms"]["generate"]
    assert 0 < row["llm_ms"] < row["latency_ms"] and row["cpu_ms"] > 0
    assert set(row["cpu_by_node_ms"]) == set(row["latency_by_node_ms"]) == {"retrieve", "pack", "generate", "measure", "finalize"}
    parts = next(e for e in row["events"] if e["node"] == "retrieve")["parts_ms"]
    assert parts["extract"] > 0 and parts["embed"] > 0  # the question's pages were indexed in this node


PAGE_TIMES = """
import json, time
from agentic_rag.ingest.pages import make_page
from testkit.bad_inputs import ABBREVIATIONS, abbreviation_page

def fastest(page, tries):  # a loaded machine only ever slows a try down
    times = []
    for _ in range(tries):
        t0 = time.perf_counter()
        make_page(page)
        times.append(time.perf_counter() - t0)
    return min(times)

print(json.dumps({unit: [fastest(abbreviation_page(20_000, unit), 5), fastest(abbreviation_page(200_000, unit), 3)]
                  for unit in ABBREVIATIONS}))
"""
# 10 times the text takes 10 times as long when reading a page is linear, 100 times when it is quadratic;
# the margin between is for a loaded machine (measured: 6 to 15 on 2 cores shared by five processes)
LINEAR_RATIO_MAX = 40
PAGE_TIMES_LIMIT_S = 120  # all the timings, linear, take seconds; quadratic, the 20 KB pages alone took minutes


@pytest.mark.system
def test_a_page_that_runs_one_abbreviation_on_is_read_in_time_linear_in_its_length():
    from testkit.processes import child_env

    try:  # in a child process: quadratic, the 200 KB pages would take half an hour each
        proc = subprocess.run([sys.executable, "-c", PAGE_TIMES], env=child_env(), capture_output=True, text=True,
                              timeout=PAGE_TIMES_LIMIT_S)
    except subprocess.TimeoutExpired:
        pytest.fail(f"reading the 20 KB and 200 KB pages took over {PAGE_TIMES_LIMIT_S} s")
    assert proc.returncode == 0, proc.stderr[-2000:]
    for unit, (small, large) in json.loads(proc.stdout).items():
        assert large / small < LINEAR_RATIO_MAX, f"{unit!r}: 20 KB {small:.3f} s, 200 KB {large:.3f} s"
