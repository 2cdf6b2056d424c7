"""Traces: per-node events in results, `trace` text and HTML, old runs, checkpoints, `graph` formats."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from agentic_rag.cli import app
from agentic_rag.configuration import Settings
from agentic_rag.runner import answer
from agentic_rag.trace.html import render_html
from agentic_rag.trace.run import load_run, question_view
from testkit import REPO
from testkit.fakes import ScriptedChat
from testkit.records import PAGES, QUOTE_2004, record
from testkit.scripted_runs import HOSTILE, REPLIES, make_run, rows_of, runner


@pytest.fixture(scope="module")
def agent_run(tmp_path_factory) -> Path:
    return make_run(tmp_path_factory.mktemp("trace") / "agent-run")


def test_result_rows_record_every_node(agent_run):
    rows = rows_of(agent_run)
    ok = rows["toy-ok"]
    nodes = [e["node"] for e in sorted(ok["events"], key=lambda e: e["start"])]
    assert nodes[0] == "anchors" and nodes[-1] == "finalize" and "worker" in nodes
    assert nodes[-5:] == ["generate", "read_answerability", "collect_signals", "decide", "finalize"]
    assert set(ok["latency_by_node_ms"]) == set(nodes) and all(ms >= 0 for ms in ok["latency_by_node_ms"].values())
    worker = next(e for e in ok["events"] if e["node"] == "worker")
    kept = worker["paths"][0]["kept"][0]
    assert {"chunk_id", "path_score", "fine_sim", "fused_score", "text"} <= set(kept)
    signals = next(e for e in ok["events"] if e["node"] == "collect_signals")
    decide = next(e for e in ok["events"] if e["node"] == "decide")
    assert signals["signals"]["overlap_est"] >= 0.5 and "decision" not in signals
    assert decide["decision"]["reason"] == "STOP_OVERLAP_OK" and "signals" not in decide
    generate = next(e for e in ok["events"] if e["node"] == "generate")
    assert generate["tokens"] > 0 and generate["llm_calls"] == 1
    # the cited chunk is kept whole so its quote can be shown in place
    cited = ok["citations"][0]["chunk_id"]
    assert QUOTE_2004 in ok["quoted_chunks"][cited]
    assert [e["node"] for e in rows["toy-none"]["events"]][-3:] == ["collect_signals", "decide", "finalize"]


def test_the_final_check_is_a_node_of_its_own_in_the_timeline(tmp_path):
    # the verifier answers "no" on the first question, "yes" on the last
    out = make_run(tmp_path / "verify", replies=[REPLIES[0], "no", REPLIES[1], "yes"], VERIFIER_ENABLED=True)
    ok = rows_of(out)["toy-ok"]
    nodes = [e["node"] for e in sorted(ok["events"], key=lambda e: e["start"])]
    assert nodes[-5:] == ["collect_signals", "decide", "final_check", "decide", "finalize"]
    check = next(e for e in ok["events"] if e["node"] == "final_check")
    assert check["llm_calls"] == 1 and check["tokens"] > 0 and check["signals"]["verified_score"] == 0.0
    res = runner.invoke(app, ["trace", str(out), "--id", "toy-ok", "--brief"])
    assert res.exit_code == 0, res.output
    assert "-> STOP (STOP_OVERLAP_OK), pending the final check" in res.stdout
    assert "decided at decide (round 1): ABSTAIN ABSTAIN_NOT_VERIFIED" in res.stdout
    view = question_view(load_run(out), load_run(out).row("toy-ok"))
    assert [r["label"] for r in view["rounds"]] == ["round 1: ABSTAIN_NOT_VERIFIED"]


def test_event_texts_are_cut_to_the_setting(tmp_path):
    out = make_run(tmp_path / "short", TRACE_TEXT_CHARS=40)
    for row in rows_of(out).values():
        for e in row["events"]:
            for p in e.get("bundle", {}).get("passages", []):
                assert len(p["text"]) <= 40


def test_trace_cli_table_and_one_question(agent_run):
    res = runner.invoke(app, ["trace", str(agent_run)])
    assert res.exit_code == 0, res.output
    for text in ("toy-ok", "toy-none", "STOP_OVERLAP_OK", "ABSTAIN_NO_EVIDENCE", "accurate"):
        assert text in res.stdout
    res = runner.invoke(app, ["trace", str(agent_run), "--id", "toy-ok"])
    assert res.exit_code == 0, res.output
    head, out = res.stdout.split("\ntimeline\n", 1)
    assert "decided at decide (round 1): STOP STOP_OVERLAP_OK" in head
    assert out.index("anchors") < out.index("worker") < out.index("collect_signals") < out.index("decide") < out.index("finalize")
    assert "OVERLAP_MIN" in out and "pass" in out and "-> STOP (STOP_OVERLAP_OK)" in out
    assert "PATH_MIN_SCORE" in out and "evidence" in out and "Finding Nemo" in out
    # a refusal says which check failed
    res = runner.invoke(app, ["trace", str(agent_run), "--id", "toy-none", "--brief"])
    assert res.exit_code == 0 and "decided at decide (round 1): ABSTAIN ABSTAIN_NO_EVIDENCE" in res.stdout


def test_trace_cli_mistakes_are_one_line_errors(agent_run, tmp_path):
    for args, text in ((["trace", str(tmp_path / "nope")], "not a run folder"),
                       (["trace", str(tmp_path)], "no results.jsonl"),
                       (["trace", str(agent_run), "--id", "missing"], "no question"),
                       (["trace", str(agent_run), "--id", "toy"], "'toy' is the start of 3 ids in"),
                       (["trace", str(agent_run), "--steps"], "need --id"),
                       (["trace", str(agent_run), "--id", "toy-ok", "--steps"], "no checkpoints")):
        res = runner.invoke(app, args)
        said = " ".join(res.output.split())  # the error console wraps at the terminal's width
        assert res.exit_code == 2 and text in said and "Traceback" not in said, (args, res.output)


def test_a_unique_id_prefix_names_a_question(agent_run):
    res = runner.invoke(app, ["trace", str(agent_run), "--id", "toy-h", "--brief"])
    assert res.exit_code == 0 and res.stdout.startswith("toy-hostile: which movie won"), res.output
    res = runner.invoke(app, ["trace", str(agent_run), "--id", "toy"])
    said = " ".join(res.output.split())
    assert res.exit_code == 2 and "toy-ok, toy-none, toy-hostile" in said and len(res.output.strip().splitlines()) <= 2


def test_every_llm_call_is_kept_with_its_prompt_and_completion(agent_run):
    """The exact messages sent and the raw reply, in the event of the node that made the call, as the
    trace page lists them."""
    rows = rows_of(agent_run)
    assert not any(e.get("llm") for e in rows["toy-none"]["events"])  # no call, nothing kept
    run = load_run(agent_run)
    view = question_view(run, run.row("toy-ok"))
    [call] = view["llm"]
    assert (call["node"], call["stage"]) == ("generate", "generation")
    assert view["timeline"][call["i"] - 1]["node"] == "generate"
    assert "which movie won best animated feature at the 2004 oscars?" in call["messages"][1]["content"]
    assert QUOTE_2004 in call["messages"][1]["content"]  # the sources as the model saw them, whole
    assert call["output"] == f'Finding Nemo won. [1] "{QUOTE_2004}"'  # raw, before citations are parsed


def test_the_path_taken_counts_parallel_workers_once_and_numbers_rounds():
    from agentic_rag.trace.run import path_taken

    events = [{"node": n, "round": r, "start": i} for i, (n, r) in enumerate(
        [("anchors", 1), ("worker", 1), ("worker", 1), ("supervise", 1), ("generate", 1), ("collect_signals", 1),
         ("decide", 1), ("worker", 2), ("supervise", 2), ("generate", 2), ("collect_signals", 2), ("decide", 2),
         ("finalize", 2)])]
    path = path_taken(events)
    edges = {(e["source"], e["target"]): e["rounds"] for e in path["edges"]}
    assert edges[("anchors", "worker")] == [1] and edges[("decide", "worker")] == [2]
    assert edges[("worker", "supervise")] == [1, 2] and edges[("finalize", "__end__")] == [2]
    assert path["nodes"]["worker"] == [1, 2] and path["steps"][1] == {"node": "worker", "round": 1, "count": 2}


def test_compare_html_lists_the_questions_that_flipped(agent_run, tmp_path):
    flipped = tmp_path / "flipped"
    shutil.copytree(agent_run, flipped)
    rows = [json.loads(line) for line in (flipped / "results.jsonl").read_text().splitlines()]
    for row in rows:
        if row["id"] == "toy-hostile":  # as if the second run had refused it
            row.update(status="refuse", reason="ABSTAIN_LOW_SUPPORT", judgement="missing")
    (flipped / "results.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    out = tmp_path / "cmp.html"
    res = runner.invoke(app, ["compare", str(agent_run), str(flipped), "--html", str(out)])
    assert res.exit_code == 0, res.output
    view = json.loads(out.read_text().split('id="run-data">', 1)[1].split("</script>", 1)[0])
    assert [q["id"] for q in view["questions"]] == ["toy-hostile"]
    q = view["questions"][0]
    assert "judgement accurate -> missing" in q["flips"] and "reason STOP_OVERLAP_OK -> ABSTAIN_LOW_SUPPORT" in q["flips"]
    assert q["a"]["timeline"] and q["b"]["timeline"] and view["compare"]["common"] == 3
    res = runner.invoke(app, ["compare", str(agent_run), str(flipped), str(agent_run), "--html", str(out)])
    assert res.exit_code == 2 and "exactly two" in res.output


def test_compare_html_pairs_questions_as_the_metrics_do(agent_run, tmp_path):
    """A question whose gold cannot score an answer is out of the metrics, so out of the comparison
    too, however its rows differ (eval.compare.paired_ids serves both)."""
    from agentic_rag.eval.compare import compare

    runs = []
    for name, refused in (("a", False), ("b", True)):
        run = tmp_path / name
        shutil.copytree(agent_run, run)
        rows = [json.loads(line) for line in (run / "results.jsonl").read_text().splitlines()]
        for row in rows:
            if row["id"] == "toy-hostile":
                row["gold"] = "nan"
                if refused:
                    row.update(status="refuse", reason="ABSTAIN_LOW_SUPPORT", judgement="missing")
        (run / "results.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
        runs.append(run)
    out = tmp_path / "cmp.html"
    res = runner.invoke(app, ["compare", *map(str, runs), "--html", str(out)])
    assert res.exit_code == 0, res.output
    view = json.loads(out.read_text().split('id="run-data">', 1)[1].split("</script>", 1)[0])
    assert view["questions"] == [] and view["compare"]["common"] == len(compare(runs)["common_ids"]) == 2


def test_html_escapes_page_text_and_marks_quotes(agent_run):
    page = render_html(load_run(agent_run))
    template = (REPO / "agentic_rag" / "trace" / "template.html").read_text()
    # nothing from the run closes or opens a script element
    assert page.count("</script>") == template.count("</script>")
    assert page.count("<script") == template.count("<script")
    assert "window.__pwned" in page and "<img src=x" not in page
    view = json.loads(page.split('id="run-data">', 1)[1].split("</script>", 1)[0])
    hostile = next(q for q in view["questions"] if q["id"] == "toy-hostile")
    marked = [s["text"] for p in hostile["evidence"] for s in p["segments"] if s["quoted"]]
    assert any("The Incredibles won the Oscar" in m for m in marked)
    assert any(HOSTILE.split(" ")[0] in s["text"] for p in hostile["evidence"] for s in p["segments"])
    assert "http://" not in page.split("<body>", 1)[0] and "https://" not in page  # no CDN, nothing fetched


def test_old_runs_and_baseline_runs_still_show(agent_run, tmp_path):
    old = tmp_path / "old"
    shutil.copytree(agent_run, old)
    rows = [json.loads(line) for line in (old / "results.jsonl").read_text().splitlines()]
    for row in rows:
        for key in ("events", "latency_by_node_ms", "quoted_chunks"):
            row.pop(key)
    (old / "results.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    (old / "config.json").unlink()
    run = load_run(old)
    view = question_view(run, run.row("toy-ok"))
    assert "before per-node events" in view["note"] and view["timeline"][0]["node"] == "decide"
    assert view["rounds"][0]["checks"] and view["evidence"][0]["cited"]
    res = runner.invoke(app, ["trace", str(old), "--id", "toy-ok"])
    assert res.exit_code == 0 and "STOP_OVERLAP_OK" in res.stdout
    assert runner.invoke(app, ["trace", str(old), "--html", str(tmp_path / "old.html")]).exit_code == 0

    base = make_run(tmp_path / "base", "baseline")
    run = load_run(base)
    view = question_view(run, run.row("toy-ok"))
    assert [e["node"] for e in view["timeline"]] == ["retrieve", "pack", "generate", "measure", "finalize"]
    assert view["rounds"][0]["label"].startswith("measured")
    assert runner.invoke(app, ["trace", str(base), "--html", str(tmp_path / "base.html")]).exit_code == 0


def test_checkpoints_list_show_and_replay(tmp_path):
    from agentic_rag.checkpoints import history, replay
    from graphs import get_graph

    ck = tmp_path / "checkpoints.sqlite"
    settings = Settings.load(overrides={"ARTIFACTS_DIR": str(tmp_path / "a"), "CHECKPOINT_PATH": str(ck)})
    fake = ScriptedChat(replies=[REPLIES[0]])
    first = answer("agent", settings, record=record(), extra_config={"llm": fake})
    snaps = history(get_graph("agent"), ck, "toy-1")
    assert [s.next for s in snaps][:3] == [("__start__",), ("anchors",), ("worker", "worker", "worker")][: 3]
    assert snaps[-1].next == () and snaps[-1].values["result"]["reason"] == first.reason
    before_generate = next(s for s in snaps if s.next == ("generate",))
    assert "draft" not in before_generate.values
    final = replay(get_graph("agent"), ck, before_generate, {"configurable": {"settings": settings, "llm": fake}})
    assert len(fake.calls) == 2  # the generator ran again from the stored state, nothing before it did
    assert final["result"]["answer"] == first.answer and final["result"]["reason"] == first.reason

    # a run folder with checkpoints: the CLI lists the steps and shows one
    out = make_run(tmp_path / "ck-run", CHECKPOINT_PATH=str(tmp_path / "ck-run" / "checkpoints.sqlite"))
    res = runner.invoke(app, ["trace", str(out), "--id", "toy-ok", "--steps"])
    assert res.exit_code == 0 and "generate" in res.stdout and "(end)" in res.stdout, res.output
    # each step says what it changed: the generator's step adds the draft, and the per-node latency
    # shows only the entry that step added, not every node's so far
    by_node: dict[str, str] = {}
    node = ""
    for line in res.stdout.splitlines():
        cells = [c.strip() for c in line.split("│")]
        if len(cells) == 6:
            node = cells[2] or node
            by_node[node] = by_node.get(node, "") + cells[3] + "\n"
    gen = by_node["generate"]
    assert "+ draft: Finding Nemo won." in gen and '~ latency_ms: {"generate":' in gen, res.stdout
    assert '"anchors"' not in gen and "bundle" not in gen and "~ events: +1: generate" in gen
    step = next(s.metadata["step"] for s in history(get_graph("agent"), out / "checkpoints.sqlite", "toy-ok")
                if s.next == ("generate",))
    res = runner.invoke(app, ["trace", str(out), "--id", "toy-ok", "--step", str(step)])
    assert res.exit_code == 0 and '"bundle"' in res.stdout and '"draft"' not in res.stdout, res.output
    res = runner.invoke(app, ["trace", str(out), "--id", "toy-ok", "--step", "999"])
    assert res.exit_code == 2 and "no step 999" in " ".join(res.output.split())


@pytest.mark.parametrize("system", ["agent", "baseline"])
def test_graph_draws_every_format_offline(system, tmp_path, monkeypatch):
    for fmt, marker in (("mermaid", "graph TD"), ("ascii", "finalize"), ("dot", "digraph")):
        res = runner.invoke(app, ["graph", "--system", system, "--format", fmt])
        assert res.exit_code == 0 and marker in res.stdout, (fmt, res.output)
        # the design's roles are named in every format
        assert "Supervisor" in res.stdout and "Generator" in res.stdout, (fmt, res.stdout)
        if system == "agent":
            assert "BAUG" in res.stdout and "Retriever-Workers" in res.stdout and "Anchor-Predictor" in res.stdout
            assert "RETRIEVE_MORE" in res.stdout and "REFLECT" in res.stdout, (fmt, res.stdout)
    # a fresh machine has no Graphviz: the PNG is drawn all the same (by matplotlib), and where `dot`
    # is installed it draws it
    import shutil

    from agentic_rag.trace import draw

    real_which = shutil.which
    for has_dot in (False, True):
        if has_dot and real_which("dot") is None:
            continue
        monkeypatch.setattr(draw.shutil, "which", lambda name: real_which(name) if has_dot else None)
        png = tmp_path / f"g-{has_dot}.png"
        res = runner.invoke(app, ["graph", "--system", system, "--format", "png", "--out", str(png)])
        assert res.exit_code == 0, res.output
        assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and png.stat().st_size > 10_000
    monkeypatch.undo()
    res = runner.invoke(app, ["graph", "--format", "png"])
    assert res.exit_code == 2 and "--out" in res.output
    res = runner.invoke(app, ["graph", "--format", "svg"])
    assert res.exit_code == 2 and "unknown format" in res.output


def test_ask_streams_nodes_and_json_stays_one_object(tmp_path):
    # the confidence gate refuses before generation, so no model is loaded
    args = ["ask", "--dataset", "example", "--id", "@9", "-o", f"ARTIFACTS_DIR={tmp_path}", "-o", "RETRIEVAL_MIN_SCORE=0.99"]
    res = runner.invoke(app, args)
    assert res.exit_code == 0, res.output
    out = res.stdout
    lines = [line.split()[0] for line in out.splitlines() if line.strip()]
    assert lines[:2] == ["anchors", "worker"] and "confidence_gate" in lines and "decide" in lines
    assert out.index("confidence gate refused") < out.index("status: refuse")
    res = runner.invoke(app, [*args, "--json"])
    data = json.loads(res.stdout)
    assert data["reason"] == "ABSTAIN_LOW_RETRIEVAL_SCORE" and data["latency_by_node_ms"]["confidence_gate"] >= 0
    assert data["latency_ms"] > 0 and [e["node"] for e in data["events"]][0] == "anchors"


def test_verdict_names_the_deciding_node_and_the_checks_below_threshold():
    from agentic_rag.trace.run import verdict

    events = [{"node": "confidence_gate", "round": 1, "confidence": {"passed": False, "tier": "retrieval", "scores": [0.5, 0.2]}},
              {"node": "decide", "round": 1, "decision": {"action": "ABSTAIN", "reason": "ABSTAIN_LOW_RETRIEVAL_SCORE"}}]
    v = verdict(events, {"RETRIEVAL_MIN_SCORE": 0.6, "RETRIEVAL_MIN_RATIO": 1.5, "GATE_SCORE_SOURCE": "vector"})
    assert (v["node"], v["reason"]) == ("decide", "ABSTAIN_LOW_RETRIEVAL_SCORE")
    assert [(c["setting"], c["value"]) for c in v["failed"]] == [("RETRIEVAL_MIN_SCORE", 0.5)]  # ratio 2.5 passes
    events.insert(1, {"node": "collect_signals", "validation": {"name": "tournament", "ok": False, "missing": ["masters"]}})
    assert verdict(events, {})["invalid"] == "type validator tournament (missing masters)"


def test_checkpoints_do_not_store_the_pages_at_every_step(tmp_path):
    import random

    rng = random.Random(0)
    words = [w for text in PAGES.values() for w in text.split()]
    bulk = " ".join(rng.choice(words) for _ in range(10_000))  # about 60 kB, as a real page's text
    rec = record(pages={**PAGES, "Padding": bulk})
    ck = tmp_path / "checkpoints.sqlite"
    settings = Settings.load(overrides={"ARTIFACTS_DIR": str(tmp_path / "a"), "CHECKPOINT_PATH": str(ck)})
    fake = ScriptedChat(replies=[REPLIES[0]])
    answer("agent", settings, record=rec, extra_config={"llm": fake})
    from agentic_rag.checkpoints import history
    from graphs import get_graph

    steps = history(get_graph("agent"), ck, "toy-1")
    assert len(steps) >= 8 and steps[-1].values["record"]["search_results"][-1]["page_result"] == bulk
    import sqlite3

    with sqlite3.connect(ck) as conn:
        stored = sum(conn.execute(f"SELECT COALESCE(SUM(LENGTH({col})), 0) FROM {table}").fetchone()[0]
                     for table, col in (("checkpoints", "checkpoint"), ("writes", "value"), ("blobs", "value")))
    # the stock saver kept a copy per step (ten and more); here one per version, compressed
    assert stored < 4 * len(bulk), stored


def test_clipped_text_ends_at_a_word_with_an_ellipsis():
    from agentic_rag.events import clip

    assert clip("what is the ticker symbol of apple inc.?", 22) == "what is the ticker…"
    assert clip("supercalifragilistic", 6) == "super…"  # one long word: cut, marked
    assert clip("short", 10) == "short" and len(clip("a b c d e f g h", 8)) <= 8


def test_graph_groups_nodes_by_role_and_labels_decisions():
    """Mermaid subgraphs and DOT clusters hold BAUG's three nodes; each of decide's edges carries its
    decision, and an extension inserted on an edge keeps the edge's decision and gets a role of its own."""
    from agentic_rag.extensions import Extension
    from agentic_rag.trace.draw import diagram, draw, to_dot
    from graphs import get_graph
    from graphs.agent import build_graph

    mermaid = draw(get_graph("agent"), "mermaid")
    baug = mermaid.split('subgraph baug["BAUG"]', 1)[1].split("end", 1)[0]
    assert sorted(baug.split()) == ["collect_signals(collect_signals)", "decide(decide)", "final_check(final_check)"]
    assert 'decide -. "RETRIEVE_MORE" .-> worker;' in mermaid and 'decide -. "REFLECT" .-> reflect;' in mermaid
    d = diagram(get_graph("agent"))
    assert 'subgraph cluster_baug {' in to_dot(d) and 'label="BAUG"' in to_dot(d)
    ext = Extension(name="audit", node=lambda s, c: {}, reads=("draft",), writes=(), after="decide", before="reflect")
    d = diagram(build_graph([ext]))
    labels = {(e["source"], e["target"]): e["label"] for e in d.edges}
    assert labels[("decide", "audit")] == "REFLECT" and ("decide", "reflect") not in labels
    assert {n["id"]: n["role"] for n in d.nodes}["audit"] == "Extensions"


def test_the_page_layout_runs_the_main_path_down_and_draws_loops_back_up():
    from agentic_rag.trace.draw import diagram, layout
    from graphs import get_graph

    lay = layout(diagram(get_graph("agent")))
    rows = {n: p["row"] for n, p in lay["pos"].items()}
    main = ["__start__", "anchors", "worker", "supervise", "disambiguate", "confidence_gate", "generate",
            "collect_signals", "decide", "finalize", "__end__"]
    assert [rows[n] for n in main] == sorted(rows[n] for n in main) and len({rows[n] for n in main}) == len(main)
    assert lay["back"] == [["decide", "worker"], ["final_check", "decide"], ["reflect", "collect_signals"]]


def test_a_failed_llm_call_is_kept_with_its_error(tmp_path):
    from testkit.fakes import UNAVAILABLE

    settings = Settings.load(overrides={"ARTIFACTS_DIR": str(tmp_path)})
    result = answer("agent", settings, record=record(), extra_config={"llm": ScriptedChat(replies=[UNAVAILABLE])})
    assert result.reason == "ABSTAIN_LLM_UNAVAILABLE"
    [call] = [c for e in result.events for c in e.get("llm") or []]
    assert "did not answer" in call["error"] and "output" not in call and call["messages"][0]["role"] == "system"


def test_png_layout_without_graphviz_follows_the_order_the_graph_runs():
    # BAUG's loops point back up and the early exits to collect_signals do not pull it to the top
    from agentic_rag.trace.draw import _layout
    from graphs import get_graph

    centres, _ = _layout(get_graph("agent").get_graph())
    order = ["__start__", "anchors", "worker", "supervise", "generate", "collect_signals", "decide", "finalize", "__end__"]
    ys = [centres[n][1] for n in order]
    assert ys == sorted(ys) and len(set(ys)) == len(ys), dict(zip(order, ys))


def test_an_exact_question_id_wins_over_a_row_number(tmp_path):
    from agentic_rag.trace.run import Run, TraceError

    run = Run(tmp_path, [{"id": "1"}, {"id": "0"}, {"id": "toy-a"}])
    assert run.row("0")["id"] == "0" and run.row("1")["id"] == "1"
    assert run.row("@0")["id"] == "1" and run.row("toy")["id"] == "toy-a"
    with pytest.raises(TraceError, match="no question '2' .*; for the one at 0-based position 2, give --id @2$"):
        run.row("2")
