"""The command line, driven as a user would (typer's runner, real retrieval)."""

import json
import re
from pathlib import Path

import pytest
from typer.testing import CliRunner

from agentic_rag.cli import app
from testkit.records import docs_folder
from testkit.scripted_runs import SNAPSHOTS

runner = CliRunner()


def test_search_json_lists_passages_with_three_scores(tmp_path):
    res = runner.invoke(app, ["search", "dreamworks animation owner", "--dataset", "example", "--id", "@9", "--k", "3",
                              "--json", "-o", f"ARTIFACTS_DIR={tmp_path}"])
    assert res.exit_code == 0, res.output
    rows = json.loads(res.stdout)
    assert len(rows) == 3
    for row in rows:
        assert {"chunk_id", "page_name", "page_url", "text", "vector_score", "bm25_score", "fused_score"} <= set(row)


def test_bad_override_is_a_clear_error():
    res = runner.invoke(app, ["settings", "-o", "RETRIEVAL_KK=3"])
    assert res.exit_code == 2 and "RETRIEVAL_K" in res.output


def test_unknown_record_id_is_a_clear_error(tmp_path):
    res = runner.invoke(app, ["search", "x", "--dataset", "example", "--id", "nope", "-o", f"ARTIFACTS_DIR={tmp_path}"])
    assert res.exit_code == 2 and "no record" in res.output


def test_settings_table_shows_every_setting_with_the_models_unit_and_where_its_value_comes_from(monkeypatch):
    import os

    from agentic_rag.configuration import PRESETS_DIR, Settings, unit_of

    for name in [n for n in os.environ if n.startswith(("AGENTIC_RAG_", "OPENAI_"))]:
        monkeypatch.delenv(name)
    res = runner.invoke(app, ["settings", "--preset", "lean"])
    assert res.exit_code == 0, res.output
    rows = {cells[1]: cells for line in res.stdout.splitlines() if line.count("\u2502") == 7
            and (cells := [c.strip() for c in line.split("\u2502")[1:-1]])[1]}
    fields = Settings.flat_fields()
    assert set(fields) <= set(rows), f"settings missing from the table: {set(fields) - set(rows)}"
    lean = {k: v for section in json.loads((PRESETS_DIR / "lean.json").read_text()).values() for k, v in section.items()}
    values = Settings.load(preset="lean").public_dump()
    for name, field in fields.items():
        section, _, value, unit, source = rows[name][:5]
        assert (section, unit) == (Settings.section_of(name), unit_of(field)), name
        assert source == ("preset lean" if name in lean else "default"), name
        if name in lean:
            assert value == str(values[name]) == str(lean[name]), name


def test_graph_prints_the_agent_shape_offline():
    res = runner.invoke(app, ["graph", "--system", "agent"])
    assert res.exit_code == 0
    assert res.stdout.strip() == (SNAPSHOTS / "agent.mmd").read_text().strip()  # every node and edge
    assert runner.invoke(app, ["graph", "--system", "nope"]).exit_code == 2


def test_every_error_a_user_can_fix_shares_one_base_and_ends_the_cli_as_one_line(tmp_path):
    from agentic_rag.configuration import SettingsError
    from agentic_rag.datasets.crag import DataError
    from agentic_rag.errors import UserError
    from agentic_rag.eval.executors import ExecutorError
    from agentic_rag.eval.resume import ResumeMismatchError
    from agentic_rag.eval.runner import RunFolderError
    from agentic_rag.extensions import ExtensionError
    from agentic_rag.llm.packaged import ModelIntegrityError
    from agentic_rag.reader.probe import ProbeMismatchError
    from agentic_rag.retrieval.hybrid import BrokenIndexError
    from agentic_rag.trace.draw import DrawError
    from agentic_rag.trace.run import TraceError
    from agentic_rag.workers.source import NoCorpusError

    kinds = (SettingsError, DataError, ExecutorError, ResumeMismatchError, RunFolderError, ExtensionError,
             ProbeMismatchError, ModelIntegrityError, BrokenIndexError, NoCorpusError, DrawError, TraceError)
    assert all(issubclass(k, UserError) for k in kinds)
    assert issubclass(RunFolderError, OSError) and issubclass(DataError, ValueError)  # old bases kept for callers
    # errors no command catches itself reach the user as one labelled line, exit 2, no traceback
    cases = [
        (["ingest", str(tmp_path / "no-such-file.jsonl")], "error:"),
        (["eval", "--executor", "nowhere"], "error:"),
        (["settings", "-o", "NO_SUCH_SETTING=1"], "settings error:"),
    ]
    for args, label in cases:
        res = CliRunner().invoke(app, args)
        last = re.split(r"[\r\n]+", res.output.strip())[-1]  # after any progress bar
        assert res.exit_code == 2 and last.startswith(label) and "Traceback" not in res.output, (args, res.output)



# each command whose output cannot be written: its arguments with the output at ``place``, and what the
# error calls that output
UNWRITABLE = {
    "ingest --out": (lambda place, tmp: ["ingest", str(tmp / "docs"), "--out", str(place / "index"),
                                         "-o", f"ARTIFACTS_DIR={tmp}"], "the index "),
    "trace --html": (lambda place, tmp: ["trace", str(one_row_run(tmp / "run")), "--html", str(place / "t.html")],
                     "--html "),
    "graph --out": (lambda place, tmp: ["graph", "--out", str(place / "g.mmd")], "--out "),
    "ask MODEL_CACHE_DIR": (lambda place, tmp: ["ask", "--dataset", "example", "--id", "@0", "-o", f"ARTIFACTS_DIR={tmp}",
                                                "-o", f"MODEL_CACHE_DIR={place / 'models'}"], "MODEL_CACHE_DIR "),
}


def one_row_run(folder: Path) -> Path:
    folder.mkdir(exist_ok=True)
    (folder / "results.jsonl").write_text(json.dumps({"id": "a", "query": "q", "prediction": "p", "events": []}) + "\n")
    return folder


@pytest.mark.parametrize("command", UNWRITABLE)
def test_an_output_that_cannot_be_written_is_one_line_before_the_work(tmp_path, command):
    blocker = tmp_path / "a-file"
    blocker.write_text("x")
    docs_folder(tmp_path / "docs", 2)
    arguments, called = UNWRITABLE[command]
    places = [blocker] + ([Path("/sys")] if Path("/sys").is_dir() else [])  # sysfs takes no file, even from root
    for place in places:
        res = runner.invoke(app, arguments(place, tmp_path))
        assert res.exit_code == 2 and isinstance(res.exception, SystemExit), res.output[-2000:]
        assert res.stderr.strip().startswith(f"error: cannot write {called}") and "\n" not in res.stderr.strip()
