"""Extensions: loaded by configuration alone, checked when the graph is built, and able to change
BAUG's decisions. The worked example is examples/freshness.py, run with the scripted model."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from agentic_rag.baug.policy import Flags, decide
from agentic_rag.cli import app
from agentic_rag.datasets.crag import CragRecord
from agentic_rag.extensions import Extension, ExtensionError, extension_factory, load_extension, request
from agentic_rag.nodes import Node
from agentic_rag.runner import answer
from agentic_rag.state import STATE_KEYS
from agentic_rag.telemetry import read_rows
from examples.freshness import FreshnessSettings, parse_time, stale_pages
from graphs.agent import agent_shape, build_graph
from testkit.fakes import ScriptedChat
from testkit.records import PAGES, QUESTION, QUOTE_2004

SPEC = "examples.freshness:freshness"
ASKED = "03/13/2024, 09:30:59 PT"
STALE = " Tue, 23 Jan 2024 17:23:41 GMT"  # 50 days before ASKED, as CRAG writes it (leading space included)
FRESH = " Mon, 11 Mar 2024 21:36:31 GMT"
DRAFT = f'Finding Nemo won. {{cite:76th academy}} "{QUOTE_2004}"'
runner = CliRunner()


def dated_record(dynamism: str, answer_page_date: str) -> CragRecord:
    """The toy Oscars corpus, with the page the answer comes from dated and the question classed."""
    results = [{"page_name": name, "page_url": f"toy://{i}", "page_result": text,
                "page_last_modified": answer_page_date if name == "Oscars 2004" else FRESH}
               for i, (name, text) in enumerate(PAGES.items())]
    return CragRecord(interaction_id=f"toy-{dynamism}", query=QUESTION, answer="finding nemo", query_time=ASKED,
                      static_or_dynamic=dynamism, search_results=results)


def ask(settings, rec: CragRecord, replies=(DRAFT,), **overrides):
    s = settings.replace(**overrides) if overrides else settings
    fake = ScriptedChat(replies=list(replies))
    result = answer("agent", s, record=rec, extra_config={"llm": fake})
    return result, fake, read_rows(s.paths.TELEMETRY_PATH)


# -- the example: configuration alone changes the decisions it targets ------------------------------
def test_stale_page_turns_a_dynamic_answer_into_a_retrieval_then_a_refusal(agent_settings):
    rec = dated_record("fast-changing", STALE)
    plain, _, _ = ask(agent_settings, rec)
    assert plain.status == "ok" and plain.reason == "STOP_OVERLAP_OK"

    result, fake, rows = ask(agent_settings.replace(TELEMETRY_PATH=str(agent_settings.paths.ARTIFACTS_DIR / "ext.jsonl")),
                             rec, EXTENSIONS=[SPEC])
    # round 1 asks for fresher sources, round 2 finds nothing new and the draft still rests on the stale page
    assert [r["reason"] for r in rows] == ["RETRIEVE_STALE_SOURCES", "ABSTAIN_STALE_SOURCES"]
    assert result.status == "refuse" and result.reason == "ABSTAIN_STALE_SOURCES"
    assert result.abstention_layer == "extension" and result.citations == []
    assert "Oscars 2004" in result.explanation and "50 days before" in result.explanation
    assert "fast-changing" in result.explanation and "7 days" in result.explanation
    assert result.missing == ["a source updated within 7 days before 2024-03-13"]
    assert len(fake.calls) == 1  # the extra round brought nothing new: no second draft
    nodes = [e["node"] for e in result.events]
    assert nodes.count("freshness") == 2 and nodes[nodes.index("freshness") - 1] == Node.COLLECT_SIGNALS
    asked = next(e for e in result.events if e["node"] == "freshness")
    assert asked["extension_flags"]["freshness"]["code"] == "STALE_SOURCES"
    extra_round = [p for p in result.events if p["node"] == "worker" and p["round"] == 2]
    assert extra_round and all("march 2024" in p["paths"][0]["query"].lower() for p in extra_round)


def test_abstain_action_and_a_wider_window_are_settings_of_the_extension(agent_settings):
    rec = dated_record("fast-changing", STALE)
    at_once, _, rows = ask(agent_settings, rec, EXTENSIONS=[SPEC],
                           EXTENSION_SETTINGS={"freshness": {"ACTION": "ABSTAIN"}})
    assert at_once.reason == "ABSTAIN_STALE_SOURCES" and [r["round"] for r in rows] == [1]
    wide, _, _ = ask(agent_settings, rec, EXTENSIONS=[SPEC],
                     EXTENSION_SETTINGS={"freshness": {"FAST_CHANGING_MAX_AGE_DAYS": 60}})
    assert wide.status == "ok" and wide.reason == "STOP_OVERLAP_OK"


def test_static_questions_and_fresh_pages_are_let_through_unchanged(agent_settings):
    for rec in (dated_record("static", STALE), dated_record("real-time", " Wed, 13 Mar 2024 11:21:05 GMT")):
        plain, _, _ = ask(agent_settings, rec)
        with_ext, _, _ = ask(agent_settings, rec, EXTENSIONS=[SPEC])
        assert with_ext.status == plain.status == "ok" and with_ext.reason == plain.reason == "STOP_OVERLAP_OK"
        assert with_ext.answer == plain.answer and with_ext.tokens == plain.tokens
        assert next(e for e in with_ext.events if e["node"] == "freshness")["extension_flags"] == {"freshness": None}


def test_undated_pages_pass_unless_the_setting_says_otherwise(agent_settings):
    rec = dated_record("real-time", "")
    assert ask(agent_settings, rec, EXTENSIONS=[SPEC])[0].status == "ok"
    strict, _, _ = ask(agent_settings, rec, EXTENSIONS=[SPEC],
                       EXTENSION_SETTINGS={"freshness": {"UNDATED_IS_STALE": True, "ACTION": "ABSTAIN"}})
    assert strict.reason == "ABSTAIN_STALE_SOURCES" and "no modification date" in strict.explanation


def test_the_environment_or_a_preset_is_enough(agent_settings, monkeypatch, tmp_path):
    from agentic_rag.configuration import Settings

    rec = dated_record("fast-changing", STALE)
    monkeypatch.setenv("AGENTIC_RAG_EXTENSIONS", SPEC)
    monkeypatch.setenv("AGENTIC_RAG_EXTENSION_SETTINGS", '{"freshness": {"ACTION": "ABSTAIN"}}')
    from_env = Settings.load(overrides={"ARTIFACTS_DIR": str(tmp_path / "env"), "TELEMETRY_PATH": str(tmp_path / "e.jsonl")})
    assert ask(from_env, rec)[0].reason == "ABSTAIN_STALE_SOURCES"
    monkeypatch.delenv("AGENTIC_RAG_EXTENSIONS")
    monkeypatch.delenv("AGENTIC_RAG_EXTENSION_SETTINGS")
    preset = tmp_path / "fresh.json"
    # the thresholds: the toy draft is then answered, so the extension's veto is what refuses it
    preset.write_text(json.dumps({"EXTENSIONS": [SPEC], "EXTENSION_SETTINGS": {"freshness": {"ACTION": "ABSTAIN"}},
                                  "GATE_POLICY": "thresholds"}))
    from_preset = Settings.load(preset=preset, overrides={"ARTIFACTS_DIR": str(tmp_path / "p"),
                                                          "TELEMETRY_PATH": str(tmp_path / "p.jsonl")})
    assert ask(from_preset, rec)[0].reason == "ABSTAIN_STALE_SOURCES"


def test_an_entry_point_name_is_enough(agent_settings, monkeypatch, tmp_path):
    dist = tmp_path / "freshness_plugin-0.1.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: freshness-plugin\nVersion: 0.1\n")
    (dist / "entry_points.txt").write_text(f"[agentic_rag.extensions]\nfresh = {SPEC}\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    result, _, _ = ask(agent_settings, dated_record("fast-changing", STALE), EXTENSIONS=["fresh"],
                       EXTENSION_SETTINGS={"freshness": {"ACTION": "ABSTAIN"}})
    assert result.reason == "ABSTAIN_STALE_SOURCES"


def test_freshness_rule_reads_crag_times():
    asked = parse_time(ASKED)
    assert asked.utcoffset().total_seconds() == -7 * 3600  # PDT: daylight saving began on 10 March 2024
    assert parse_time(STALE).isoformat() == "2024-01-23T17:23:41+00:00" and parse_time("2024-03-10").day == 10
    assert parse_time("soon") is None and parse_time("") is None
    passages = [{"chunk_id": "a", "page_name": "old", "page_last_modified": STALE},
                {"chunk_id": "b", "page_name": "new", "page_last_modified": FRESH},
                {"chunk_id": "c", "page_name": "undated", "page_last_modified": ""}]
    assert [p["page"] for p in stale_pages(passages, asked, 7, False)] == ["old"]
    assert [p["page"] for p in stale_pages(passages, asked, 7, True)] == ["old", "undated"]
    assert stale_pages(passages, asked, 60, False) == []
    assert FreshnessSettings().window("static") is None and FreshnessSettings().window("real-time") == 1.0


# -- the policy hook --------------------------------------------------------------------------------
GOOD = {"overlap_est": 1.0, "faith_est": 1.0, "anchor_coverage": 1.0, "tokens_left": 2000, "stagnation": False}


def test_policy_requests_veto_a_stop_and_nothing_else(settings):
    stale = {"by": "x", **request("RETRIEVE_MORE", "STALE", "old")}
    refuse = {"by": "y", **request("ABSTAIN", "OFF_TOPIC", "no")}
    flags = Flags(has_evidence=True, has_draft=True, requests=(stale,))
    assert decide(GOOD, flags, settings).reason == "RETRIEVE_STALE"
    assert decide(GOOD, Flags(has_evidence=True, has_draft=True, one_shot_done=True, requests=(stale,)),
                  settings).reason == "ABSTAIN_STALE"
    assert decide(GOOD, Flags(has_evidence=True, has_draft=True, requests=(stale, refuse)), settings).reason == "ABSTAIN_OFF_TOPIC"
    # a refusal the rules reach keeps its own reason; so does a revision on its way
    assert decide(GOOD, Flags(has_evidence=True, has_draft=True, hedging=True, requests=(refuse,)), settings).reason == "ABSTAIN_HEDGING"
    weak = {**GOOD, "overlap_est": 0.4, "faith_est": 0.2}
    assert decide(weak, Flags(has_evidence=True, has_draft=True, requests=(refuse,)), settings).reason == "REFLECT_LOW_FAITH"


# -- build-time checks: each mistake is one clear error ------------------------------------------------
def noop(state, config):
    return {}


def ext(**kw) -> Extension:
    return Extension(**{"name": "audit", "node": noop, "reads": ("draft",), "writes": (), "after": Node.READ,
                        "before": Node.COLLECT_SIGNALS, **kw})


@pytest.mark.parametrize("declaration,message", [
    (dict(reads=("drafts",)), "reads 'drafts', which is not a RAGState key (did you mean draft?)"),
    (dict(writes=("verdict",)), "writes 'verdict', which is not a RAGState key"),
    (dict(after="nowhere"), "after='nowhere' is not a node of the graph"),
    (dict(after=Node.GENERATE, before=Node.FINALIZE), "there is no edge generate -> finalize"),
    (dict(after=Node.ANCHORS, before=Node.WORKER), "anchors -> worker is a Send fan-out"),
    (dict(after=None, before=Node.WORKER), "is a Send fan-out"),
    (dict(name="decide"), "the name is already a node of the graph"),
    (dict(name="draft"), "the name is already a state key of the graph"),
    (dict(name="Fresh Ness"), "must be lower_snake_case"),
    (dict(after=None, before=None), "say where it goes"),
    (dict(router=lambda s, c: Node.COLLECT_SIGNALS, routes=(Node.COLLECT_SIGNALS, "elsewhere")),
     "route to 'elsewhere', which is not a node of the graph"),
    (dict(router=lambda s, c: Node.GENERATE, routes=(Node.GENERATE,)), "its routes must include collect_signals"),
    (dict(router=lambda s, c: Node.GENERATE, routes=(Node.COLLECT_SIGNALS, Node.GENERATE)),
     "the loop generate -> read_answerability -> audit -> generate passes no budget check"),
])
def test_build_time_errors(declaration, message):
    from agentic_rag.extensions import check_declaration

    with pytest.raises(ExtensionError) as caught:
        build_graph([check_declaration(ext(**declaration), "test")])
    assert message in str(caught.value) and "\n" not in str(caught.value)


def test_a_bounded_loop_is_allowed_and_stops_at_the_budget(agent_settings):
    from testkit.records import record

    seen = []

    def again(state, config):  # regenerate until the builder's budget check says no
        seen.append(len(state.get("draft", "")))
        return Node.GENERATE

    loop = ext(router=again, routes=(Node.COLLECT_SIGNALS, Node.GENERATE), bounded=True)
    graph = build_graph([loop])
    fake = ScriptedChat(replies=[DRAFT])
    s = agent_settings.replace(MAX_LLM_CALLS=3)
    final = graph.invoke({"question": QUESTION, "record": record().model_dump(mode="json")},
                         config={"configurable": {"settings": s, "llm": fake}}, output_keys=STATE_KEYS)
    runs = [e["node"] for e in final["events"]].count("audit")
    assert len(fake.calls) <= 3 and runs <= s.budget.MAX_ROUNDS and final["result"]["status"] == "ok"
    assert len(seen) == runs - 1  # the last run's router was overruled by the budget check


def test_the_agent_graph_has_no_unguarded_loop():
    shape = agent_shape()
    shape.check_loops()
    shape.guarded.clear()  # without the policy's budget check, reflect and retrieval would loop freely
    with pytest.raises(ExtensionError, match="passes no budget check"):
        shape.check_loops()


def test_run_time_errors_name_the_extension(agent_settings):
    from testkit.records import record

    def writes_more(state, config):
        return {"draft": "rewritten"}

    def bad_request(state, config):
        return {"extension_flags": {"audit": {"action": "STOP", "code": "X", "message": "m"}}}

    for node, message in ((writes_more, "extension audit wrote draft, which it does not declare in writes"),
                          (bad_request, "request action 'STOP' is not ABSTAIN or RETRIEVE_MORE")):
        graph = build_graph([ext(node=node, writes=("extension_flags",))])
        final = graph.invoke({"question": QUESTION, "record": record().model_dump(mode="json")},
                             config={"configurable": {"settings": agent_settings,
                                                      "llm": ScriptedChat(replies=[DRAFT])}}, output_keys=STATE_KEYS)
        assert final["result"]["reason"] == "ABSTAIN_EXTENSION_FAILED" and message in final["result"]["explanation"]


def test_an_extension_sees_only_what_it_reads(agent_settings):
    from testkit.records import record

    seen = {}

    def look(state, config):
        seen.update(state)
        return {}

    build_graph([ext(node=look, reads=("draft", "kind"))]).invoke(
        {"question": QUESTION, "record": record().model_dump(mode="json")},
        config={"configurable": {"settings": agent_settings, "llm": ScriptedChat(replies=[DRAFT])}})
    assert set(seen) == {"draft", "kind"}


@pytest.mark.parametrize("override,message", [
    ("EXTENSIONS=examples.nope:freshness", "no module named 'examples.nope'"),
    ("EXTENSIONS=examples.freshness:nothing", "has no attribute 'nothing'"),
    ("EXTENSIONS=unregistered", "no entry point of that name"),
    ("EXTENSION_SETTINGS={\"freshnes\": {}}", "EXTENSION_SETTINGS names 'freshnes', which is not among the extensions"),
])
def test_cli_reports_a_bad_extension_in_one_line(override, message, tmp_path):
    res = runner.invoke(app, ["ask", "--dataset", "example", "--id", "@0", "-o", f"ARTIFACTS_DIR={tmp_path}", "-o", override])
    said = " ".join(res.output.split())
    assert res.exit_code == 2 and "extension error" in said and message in said and "Traceback" not in said


def test_settings_lists_the_extension_settings_with_units():
    res = runner.invoke(app, ["settings", "-o", f"EXTENSIONS={SPEC}", "-o",
                              'EXTENSION_SETTINGS={"freshness": {"REAL_TIME_MAX_AGE_DAYS": 2}}'])
    assert res.exit_code == 0, res.output
    row = next(line for line in res.stdout.splitlines() if "freshness.REAL_TIME_MAX_AGE_DAYS" in line)
    assert "2.0" in row and "(days)" in res.stdout


def test_cli_checks_extension_settings_and_draws_the_extended_graph():
    res = runner.invoke(app, ["graph", "-o", f"EXTENSIONS={SPEC}", "-o",
                              'EXTENSION_SETTINGS={"freshness": {"FAST_CHANGING_MAX_AGE_DAYS": -1}}'])
    assert res.exit_code == 2 and "EXTENSION_SETTINGS['freshness'].FAST_CHANGING_MAX_AGE_DAYS" in " ".join(res.output.split())
    res = runner.invoke(app, ["graph", "-o", f"EXTENSIONS={SPEC}"])
    assert res.exit_code == 0 and "collect_signals --> freshness" in res.stdout and "freshness -.-> decide" in res.stdout
    assert 'freshness -. "extension failed" .-> finalize;' in res.stdout  # where a failing extension leads


# -- one failing extension fails one question; EXTENSIONS calls nothing it has not been told is a factory
def _crash_on_second(state, config):
    if state.get("question_id") == "toy-1":
        raise RuntimeError("boom in the extension")
    return {}


crashing = Extension(name="crashing", node=_crash_on_second, reads=("question_id",), writes=(),
                     after=Node.READ, before=Node.COLLECT_SIGNALS)


@extension_factory
def made_crashing() -> Extension:
    return crashing


def unmarked_crashing() -> Extension:
    return crashing


def _crash_on_second_route(state, config):
    _crash_on_second(state, config)
    return Node.COLLECT_SIGNALS


crashing_router = Extension(name="crashing", node=lambda state, config: {}, reads=("question_id",), writes=(),
                            after=Node.READ, before=Node.COLLECT_SIGNALS, router=_crash_on_second_route,
                            routes=(Node.COLLECT_SIGNALS,))


@pytest.mark.parametrize("spec", ["tests.graphs.test_extensions:crashing", "tests.graphs.test_extensions:crashing_router"])
def test_an_extension_that_raises_fails_its_question_and_the_eval_goes_on(spec, agent_settings, tmp_path):
    """Its node or its router: either one raising fails the question it raised on, nothing more."""
    from agentic_rag.eval.runner import run_eval
    from testkit.records import toy_dataset as dataset
    from testkit.scripted_runs import fake

    settings = agent_settings.replace(EXTENSIONS=[spec])
    out = tmp_path / "run"
    res = run_eval(dataset(tmp_path), "agent", settings, out, progress=False, extra_config={"llm": fake()})
    rows = {r["id"]: r for r in map(json.loads, (out / "results.jsonl").read_text().splitlines())}
    assert sorted(rows) == [f"toy-{i}" for i in range(5)] and res["summary"]["n"] == 5
    failed = rows.pop("toy-1")
    assert failed["status"] == "refuse" and failed["reason"] == "ABSTAIN_EXTENSION_FAILED"
    assert "The extension crashing failed (RuntimeError: boom in the extension)" in failed["explanation"]
    event = next(e for e in failed["events"] if e["node"] == "crashing")
    assert event["extension_error"] == {"extension": "crashing", "error": "RuntimeError: boom in the extension"}
    assert [e["node"] for e in failed["events"]][-2:] == ["crashing", Node.FINALIZE]  # nothing ran after it
    assert all(r["reason"] != "ABSTAIN_EXTENSION_FAILED" for r in rows.values())


def test_only_an_extension_or_a_marked_factory_is_loaded():
    made = load_extension("tests.graphs.test_extensions:made_crashing")  # called once, by its mark
    assert isinstance(made, Extension) and made.name == "crashing" and made.node.__name__ == "_crash_on_second"
    with pytest.raises(ExtensionError, match="is a function, not an agentic_rag.extensions.Extension "
                                             r"\(a function that builds one must be marked"):
        load_extension("tests.graphs.test_extensions:unmarked_crashing")


@pytest.mark.parametrize("spec,kind", [("os:system", "builtin_function_or_method"),
                                       ("sys:exit", "builtin_function_or_method"),
                                       ("builtins:input", "builtin_function_or_method"),
                                       ("os:getcwd", "builtin_function_or_method")])
def test_a_callable_that_is_not_an_extension_is_refused_without_being_called(spec, kind):
    res = runner.invoke(app, ["graph", "-o", f"EXTENSIONS={spec}"], input="typed by nobody\n")
    message = res.stderr.strip()
    assert res.exit_code == 2 and "\n" not in message and "Traceback" not in res.output
    assert message.startswith(f"extension error: extension '{spec}' is a {kind}, not an agentic_rag.extensions.Extension")


@pytest.mark.system
def test_os_abort_named_as_an_extension_does_not_kill_the_process():
    from testkit.processes import cli

    res = cli("graph", "-o", "EXTENSIONS=os:abort")
    assert res.returncode == 2, res.stderr[-2000:]
    assert res.stderr.strip().startswith("extension error: extension 'os:abort' is a builtin_function_or_method")


@pytest.mark.parametrize("source,error", [
    ("raise RuntimeError('broken at import')\n", "RuntimeError: broken at import"),
    ("def broken(:\n    pass\n", "SyntaxError: "),
    ("import sys\nsys.exit(3)\n", "SystemExit: 3"),
    ("import a_dependency_that_is_not_installed\n", "ModuleNotFoundError: No module named 'a_dependency_that_is_not_installed'"),
])
def test_a_module_that_fails_to_import_is_one_line_naming_it_and_the_error(source, error, tmp_path, monkeypatch):
    name = f"ext_broken_{abs(hash(source))}"
    (tmp_path / f"{name}.py").write_text(source)
    monkeypatch.syspath_prepend(str(tmp_path))
    res = runner.invoke(app, ["graph", "-o", f"EXTENSIONS={name}:ext"])
    message = res.stderr.strip()
    assert res.exit_code == 2 and "\n" not in message and "Traceback" not in res.output, res.output
    assert message.startswith(f"extension error: extension '{name}:ext': importing module {name} failed: {error}")
