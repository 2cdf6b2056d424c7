"""Bad input files and records (issue #21, part A): each ends as a clear error or a clean refusal for
that question, the run goes on, and nothing is lost. Every input is built in tmp_path by
testkit.bad_inputs (the reliability benchmark feeds the same ones to real processes)."""

from __future__ import annotations

import json
import time

import pytest
from typer.testing import CliRunner

from agentic_rag.cli import app
from agentic_rag.datasets.crag import DataError, ReadReport, iter_records
from agentic_rag.eval.runner import run_eval
from agentic_rag.runner import answer
from agentic_rag.state import STATE_KEYS
from testkit.bad_inputs import (
    ELF,
    LONG,
    PAGE,
    REPLY,
    WRONG_TYPES,
    bom_dataset_with_a_latin1_line,
    empty_files_folder,
    folder_with_a_binary,
    latin1_dataset,
    rec,
    screen_lines,
    surrogate_line,
    write_jsonl,
)
from testkit.fakes import ScriptedChat
from testkit.records import QUESTION

runner = CliRunner()


def fake():
    return ScriptedChat(replies=[REPLY])


def cli(*args: str):
    """Run the CLI in-process; an uncaught exception (a traceback for a user) fails the test."""
    res = runner.invoke(app, list(args))
    assert res.exception is None or isinstance(res.exception, SystemExit), repr(res.exception)
    assert "Traceback" not in res.output, res.output
    return res


def error_line(res) -> str:
    lines = [ln for ln in res.stderr.splitlines() if ln.startswith("error:")]
    assert len(lines) == 1, res.output
    return lines[0]


# -- 1. empty search_results ------------------------------------------------------------------------
def test_empty_search_results_refuse_that_question_and_the_eval_goes_on(agent_settings, tmp_path):
    # before: AttributeError ('BM25' object has no attribute 'scores') aborted the whole eval
    data = write_jsonl(tmp_path / "d.jsonl", [rec("empty", pages=[]), rec("good")])
    res = run_eval(data, "agent", agent_settings, tmp_path / "run", progress=False,
                   extra_config={"llm": fake()})
    rows = {r["id"]: r for r in res["rows"]}
    assert rows["empty"]["status"] == "refuse" and rows["empty"]["reason"] == "ABSTAIN_NO_EVIDENCE"
    assert rows["empty"]["llm_calls"] == 0
    assert rows["good"]["status"] == "ok" and res["summary"]["n"] == 2


def test_empty_search_results_in_search_and_ask(tmp_path):
    data = write_jsonl(tmp_path / "d.jsonl", [rec("empty", pages=[])])
    art = f"ARTIFACTS_DIR={tmp_path / 'art'}"
    res = cli("search", "nemo", "--dataset", str(data), "--id", "empty", "--json", "-o", art)
    assert res.exit_code == 0 and json.loads(res.stdout) == []
    res = cli("ask", "--dataset", str(data), "--id", "empty", "--json", "-o", art)
    assert res.exit_code == 0
    out = json.loads(res.stdout)
    assert out["status"] == "refuse" and out["reason"] == "ABSTAIN_NO_EVIDENCE" and out["llm_calls"] == 0


def test_ingest_of_a_folder_of_empty_files_is_a_clear_error(tmp_path):
    folder = empty_files_folder(tmp_path / "docs")
    res = cli("ingest", str(folder), "--out", str(tmp_path / "idx"), "-o", f"ARTIFACTS_DIR={tmp_path}")
    assert res.exit_code == 2 and "nothing to index" in error_line(res)
    assert not (tmp_path / "idx").exists()


# -- 2. binary input ----------------------------------------------------------------------------------

def test_ingest_of_a_binary_file_given_directly_is_a_clear_error(tmp_path):
    (tmp_path / "prog.jsonl").write_bytes(ELF)
    res = cli("ingest", str(tmp_path / "prog.jsonl"), "--out", str(tmp_path / "idx"), "-o", f"ARTIFACTS_DIR={tmp_path}")
    assert res.exit_code == 2 and "binary" in error_line(res)


def test_ingest_skips_a_binary_file_in_a_folder_with_a_warning_and_counts_it(tmp_path):
    folder = folder_with_a_binary(tmp_path / "docs")  # before: x.html was indexed silently as 257 chunks of bytes
    res = cli("ingest", str(folder), "--out", str(tmp_path / "idx"), "-o", f"ARTIFACTS_DIR={tmp_path}")
    assert res.exit_code == 0, res.output
    # on a line of its own, not glued onto the page-extraction progress bar
    assert f"warning: skipped {folder / 'x.html'}: not a text file (binary content)" in screen_lines(res.stderr)
    stats = json.loads(res.stdout)
    assert stats["skipped_files"] == 1 and stats["pages"] == 2
    chunks = [json.loads(line)["text"] for line in (tmp_path / "idx" / "chunks.jsonl").read_text().splitlines()]
    assert any("Finding Nemo" in c for c in chunks) and any("café de la gare" in c for c in chunks)
    assert not any("ELF" in c for c in chunks)


# -- 3. bad lines are shown; an empty dataset is an error ---------------------------------------------
def test_bad_lines_are_printed_on_stderr_with_a_cap(agent_settings, tmp_path, capsys):
    # before: printed nothing on screen (file and line only in config.json)
    raw = {i: b"{not json" for i in range(1, 6)}
    data = write_jsonl(tmp_path / "d.jsonl", [rec("good")], raw)
    s = agent_settings.replace(BAD_RECORDS_SHOWN=3)
    res = run_eval(data, "agent", s, tmp_path / "run", progress=False, extra_config={"llm": fake()})
    assert res["summary"]["n"] == 1 and res["summary"]["bad_records"] == 5
    err = capsys.readouterr().err
    shown = [ln for ln in err.splitlines() if ln.startswith("warning: skipped bad record")]
    assert shown == [f"warning: skipped bad record {data}:{n}: bad JSON (Expecting property name enclosed in double "
                     f"quotes at column 2)" for n in (2, 3, 4)]
    assert "warning: 2 more bad records skipped (5 in all)" in err


def test_an_empty_dataset_is_a_clear_error_and_leaves_an_earlier_run_alone(tmp_path):
    empty = tmp_path / "empty.jsonl"
    empty.write_text("\n\n")
    run = tmp_path / "run"
    run.mkdir()
    (run / "results.jsonl").write_text('{"id": "kept"}\n')
    res = cli("eval", "--dataset", str(empty), "--out", str(run), "-o", f"ARTIFACTS_DIR={tmp_path}")
    assert res.exit_code == 2 and error_line(res) == f"error: no records in {empty}"
    assert (run / "results.jsonl").read_text() == '{"id": "kept"}\n'  # nothing lost


# -- 4. duplicate interaction_ids -------------------------------------------------------------------
def test_duplicate_ids_are_refused_as_bad_records(agent_settings, tmp_path, capsys):
    # before: 3 rows written, the summary counted 2, no warning
    data = write_jsonl(tmp_path / "d.jsonl", [rec("a"), rec("b"), rec("a", query="another question about a?")])
    res = run_eval(data, "agent", agent_settings, tmp_path / "run", progress=False,
                   extra_config={"llm": fake()})
    assert [r["id"] for r in res["rows"]] == ["a", "b"]
    assert len((tmp_path / "run" / "results.jsonl").read_text().splitlines()) == 2
    assert res["summary"]["n"] == 2 and res["summary"]["bad_records"] == 1
    assert f"{data}:3: interaction_id: duplicate 'a' (first at line 1)" in capsys.readouterr().err


# -- 5. lone surrogates and wrong types ---------------------------------------------------------------
def test_a_lone_surrogate_in_a_page_does_not_crash_the_eval(agent_settings, tmp_path):
    data = write_jsonl(tmp_path / "d.jsonl", [rec("good")], {0: surrogate_line()})
    res = run_eval(data, "agent", agent_settings, tmp_path / "run", progress=False,
                   extra_config={"llm": fake()})
    assert {r["id"]: r["status"] for r in res["rows"]} == {"sur": "ok", "good": "ok"}


def test_json_nested_too_deeply_is_one_bad_record(tmp_path):
    deep = b'{"interaction_id": "deep", "query": "q", "extra": ' + b"[" * 100_000 + b"]" * 100_000 + b"}"
    data = write_jsonl(tmp_path / "d.jsonl", [rec("ok")], {0: deep})
    report = ReadReport("")
    assert [r.interaction_id for r in iter_records(data, report=report)] == ["ok"]
    assert [str(b) for b in report.bad] == [f"{data}:1: JSON nested too deeply"]


@pytest.mark.parametrize("field,value,where", WRONG_TYPES)
def test_wrong_types_are_bad_records_with_field_and_reason(tmp_path, field, value, where):
    # before: silently turned into their Python spelling ("['finding nemo']")
    data = write_jsonl(tmp_path / "d.jsonl", [rec("ok"), {**rec("bad"), field: value}])
    report = ReadReport("")
    assert [r.interaction_id for r in iter_records(data, report=report)] == ["ok"]
    assert [str(b) for b in report.bad] == [f"{data}:2: {where}"]


# -- 6. encodings -----------------------------------------------------------------------------------
def test_a_bom_is_read_and_a_non_utf8_line_is_one_bad_record(tmp_path):
    data = bom_dataset_with_a_latin1_line(tmp_path / "d.jsonl")
    report = ReadReport("")
    assert [r.interaction_id for r in iter_records(data, report=report)] == ["a", "b"]
    assert len(report.bad) == 1 and report.bad[0].line == 2
    assert report.bad[0].reason.startswith("not UTF-8 text (byte 0xe9 at column")


def test_a_latin1_dataset_reports_each_line_and_fail_mode_stops_at_the_first(tmp_path):
    data = latin1_dataset(tmp_path / "latin1.jsonl")
    report = ReadReport("")
    assert list(iter_records(data, report=report)) == [] and [b.line for b in report.bad] == [1, 2, 3]
    with pytest.raises(DataError, match=r"latin1.jsonl:1: not UTF-8"):
        list(iter_records(data, on_bad="fail"))


# -- 8. question length -----------------------------------------------------------------------------

@pytest.mark.parametrize("system", ["agent", "baseline"])
def test_a_too_long_question_is_refused_before_any_work(agent_settings, system):
    model = fake()
    t0 = time.perf_counter()
    result = answer(system, agent_settings, record=_record(LONG), extra_config={"llm": model})
    assert time.perf_counter() - t0 < 5  # before: 89 s in the anchor step alone
    assert result.status == "refuse" and result.reason == "ABSTAIN_QUESTION_TOO_LONG"
    assert result.abstention_layer == "question_too_long" and "MAX_QUESTION_CHARS" in result.explanation
    assert model.calls == [] and result.llm_calls == 0


def test_the_agent_graph_refuses_a_too_long_question_on_its_own(agent_settings):
    from agentic_rag.runner import graph_input
    from graphs import get_graph

    final = get_graph("agent").invoke(graph_input(record=_record(LONG)),
                                      config={"configurable": {"settings": agent_settings, "llm": fake()}},
                                      output_keys=STATE_KEYS)
    assert final["result"]["reason"] == "ABSTAIN_QUESTION_TOO_LONG" and final["anchors_proposed"] == []
    assert final["latency_ms"]["anchors"] < 1000


def test_ask_with_a_too_long_question_is_a_one_line_error(tmp_path):
    data = write_jsonl(tmp_path / "d.jsonl", [rec("a")])
    res = cli("ask", "x" * 2000, "--dataset", str(data), "--id", "a", "-o", f"ARTIFACTS_DIR={tmp_path}")
    assert res.exit_code == 2 and "MAX_QUESTION_CHARS" in error_line(res)


def _record(query: str):
    from agentic_rag.datasets.crag import CragRecord

    return CragRecord.model_validate(rec("long", query=query))


# -- terminal escapes in a dataset --------------------------------------------------------------------
HOSTILE = "\x1b[2J\x1b]0;pwned\x07\x00\x9b31m\u202e"  # clear screen, OSC window title, NUL, C1 CSI, bidi override
# what the dataset plants (a progress bar's own cursor-up, ESC[A, is not the dataset's)
CONTROLS = ("\x1b[2J", "\x1b]0;pwned", "\x00", "\x07", "\x9b", "\u202e")


def test_control_characters_in_a_dataset_are_shown_never_obeyed_by_any_terminal_view(tmp_path):
    from testkit.fault_server import FaultServer

    page = PAGE.replace("The ceremony", f"The{HOSTILE} ceremony")
    data = write_jsonl(tmp_path / "hostile.jsonl", [
        {**rec("esc-0", pages=[page], query=f"{QUESTION}{HOSTILE}"), "answer": f"finding nemo{HOSTILE}"},
        rec(f"esc-1{HOSTILE}", answer=[f"bad{HOSTILE}"]),  # a bad record, warned about on stderr
    ])
    out = tmp_path / "run"
    with FaultServer(reply=REPLY) as srv:
        model = ["-o", "LLM_BACKEND=openai", "-o", f"OPENAI_BASE_URL={srv.url}", "-o", "LLM_MODEL=m",
                 "-o", f"ARTIFACTS_DIR={tmp_path / 'artifacts'}"]
        views = [cli("ask", "--dataset", str(data), "--id", "esc-0", "--debug", *model),
                 cli("search", f"nemo{HOSTILE}", "--dataset", str(data), "--id", "esc-0", *model),
                 cli("eval", "--dataset", str(data), "--out", str(out), *model)]
    views += [cli("trace", str(out)), cli("trace", str(out), "--id", "@0")]
    for res in views:
        assert res.exit_code == 0, res.output[-2000:]
        shown = res.stdout + res.stderr
        assert not [c for c in CONTROLS if c in shown], shown[-2000:]
    assert "\u241b[2J" in views[0].stdout  # the escape is shown as a visible stand-in
    assert "skipped bad record" in views[2].stderr
