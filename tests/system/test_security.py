"""Artefacts and clients that try to run code, take the server's key, write where they choose or inject markup:
a run folder's poisoned checkpoints, per-request settings of the served graph, dataset labels in the markdown
reports, pickled .npz files."""

from __future__ import annotations

import pytest
from typer.testing import CliRunner

from agentic_rag.cli import app
from testkit.attacks import poison_checkpoints
from testkit.scripted_runs import make_run

runner = CliRunner()


@pytest.fixture(scope="module")
def checkpointed_run(tmp_path_factory):
    out = tmp_path_factory.mktemp("ck") / "run"
    return make_run(out, system="baseline", CHECKPOINT_PATH=str(out / "checkpoints.sqlite"))


def test_a_run_folder_whose_checkpoints_hold_a_call_is_refused_and_nothing_runs(checkpointed_run, tmp_path):
    assert runner.invoke(app, ["trace", str(checkpointed_run), "--id", "toy-ok", "--steps"]).exit_code == 0
    marker = tmp_path / "pwned"
    assert poison_checkpoints(checkpointed_run / "checkpoints.sqlite", f"touch {marker}") > 0
    for args in (["--steps"], ["--step", "1"]):
        res = runner.invoke(app, ["trace", str(checkpointed_run), "--id", "toy-ok", *args])
        assert not marker.exists(), "reading the run folder ran the command it planted"
        lines = res.stderr.strip().splitlines()
        assert res.exit_code == 2 and len(lines) == 1 and lines[0].startswith("error:"), res.output
        assert str(checkpointed_run) in " ".join(res.stderr.split()) and "os.system" in res.stderr


def test_checkpoint_values_are_read_only_as_a_run_writes_them(tmp_path):
    import ormsgpack
    from langgraph.types import Send

    from agentic_rag.checkpoints import CheckpointRefused, ZlibSerde

    serde = ZlibSerde(source="RUN/checkpoints.sqlite")
    value = {"question": "q", "sends": [Send("worker", {"anchor": "a"})]}
    assert serde.loads_typed(serde.dumps_typed(value)) == value
    marker = tmp_path / "pwned"
    call = ormsgpack.packb({"x": [ormsgpack.Ext(1, ormsgpack.packb(("os", "system", [f"touch {marker}"])))]})
    legacy = b'{"lc": 2, "type": "constructor", "id": ["os", "system"], "args": ["touch ' + str(marker).encode() + b'"]}'
    for stored, said in ((("msgpack", call), "os.system"), (("json", legacy), "'json'"),
                         (("pickle", b"cos\nsystem\n."), "'pickle'"), (("msgpack+zlib", b"not zlib"), "damaged")):
        with pytest.raises(CheckpointRefused, match="RUN/checkpoints.sqlite") as caught:
            serde.loads_typed(stored)
        assert said in str(caught.value) and "\n" not in str(caught.value)
    assert not marker.exists()


def test_a_request_sets_only_per_request_settings():
    from agentic_rag.configuration import PER_REQUEST_SETTINGS, Settings, SettingsError
    from testkit.attacks import FORBIDDEN_REQUEST_SETTINGS

    assert {"MAX_ROUNDS", "TOKEN_BUDGET", "OVERLAP_TAU", "GATE_POLICY", "RETRIEVAL_K"} <= PER_REQUEST_SETTINGS
    for name, value in FORBIDDEN_REQUEST_SETTINGS:
        assert name not in PER_REQUEST_SETTINGS
        for configurable in ({name: value or "/tmp/x"}, {Settings.section_of(name): {name: value or "/tmp/x"}},
                             {"settings": {name: value or "/tmp/x"}}):
            with pytest.raises(SettingsError, match=f"setting {Settings.section_of(name)}.{name} cannot be set by a request"):
                Settings.from_runnable_config({"configurable": configurable})
    with pytest.raises(SettingsError, match="preset cannot be chosen by a request"):
        Settings.from_runnable_config({"configurable": {"preset": "fast"}})
    said = str(pytest.raises(SettingsError, Settings.from_runnable_config,
                             {"configurable": {"OPENAI_BASE_URL": "http://client.example/v1"}}).value)
    assert "an endpoint" in said and "AGENTIC_RAG_OPENAI_BASE_URL" in said and "\n" not in said
    got = Settings.from_runnable_config({"configurable": {"budget": {"MAX_ROUNDS": 1}, "llm": {"MAX_OUTPUT_TOKENS": 90},
                                                          "OVERLAP_TAU": 0.4, "thread_id": "t"}})
    assert (got.budget.MAX_ROUNDS, got.llm.MAX_OUTPUT_TOKENS, got.baug.OVERLAP_TAU) == (1, 90, 0.4)


def test_the_llm_section_in_a_runs_configurable_is_settings_not_the_injected_model(settings):
    from agentic_rag.llm.calls import model_from
    from testkit.fakes import ScriptedChat

    fake = ScriptedChat(replies=["x"])
    assert model_from({"configurable": {"llm": fake}}, settings) is fake
    served = settings.replace(LLM_BACKEND="openai", OPENAI_BASE_URL="http://127.0.0.1:9/v1", LLM_MODEL="m")
    assert model_from({"configurable": {"llm": {"MAX_OUTPUT_TOKENS": 90}}}, served)._llm_type != "dict"


def test_a_served_graphs_client_cannot_take_the_key_choose_files_or_crash_it(tmp_path):
    from testkit.attacks import FORBIDDEN_REQUEST_SETTINGS, served_attacks
    from testkit.bad_inputs import REPLY
    from testkit.processes import SUITE_SETTINGS, child_env
    from testkit.servers import console_script

    langgraph = console_script("langgraph")
    if langgraph is None:
        pytest.skip("langgraph-cli is not installed (extra: dev)")
    key = "sk-server-7d1c0e"
    seen = served_attacks(langgraph, tmp_path, child_env(keep=SUITE_SETTINGS), key, REPLY)
    replies = seen["replies"]
    assert seen["attacker_requests"] == [] and seen["written"] == [], seen
    assert key not in str(replies) and key not in seen["log"]
    for name, _ in FORBIDDEN_REQUEST_SETTINGS:
        status, body = replies[f"config.configurable.{name}"]
        assert status == 422 and f".{name} cannot be set by a request" in body["detail"], (name, body)
    assert replies["context paths.TELEMETRY_PATH"][0] == 422 and replies["assistant with OPENAI_BASE_URL"][0] == 422
    status, body = replies["context flat MAX_ROUNDS"]
    assert status == 422 and '{"budget": {"MAX_ROUNDS": ...}}' in body["detail"]
    status, body = replies["context section llm"]
    assert status == 200 and "__error__" not in body and body["result"]["status"] == "ok", body
    assert seen["model_requests_of_llm_section"] > 0


def test_markdown_text_shows_as_written_on_one_line():
    from agentic_rag.eval.markdown import markdown_table, md_escape, row_cells
    from testkit.attacks import MARKUP, unescaped_markup

    assert len(unescaped_markup(MARKUP)) == 4  # the tag, its handler, the heading, the image link
    texts = [MARKUP, "a\\|b", "AT&T &lt;b&gt;", "end\\", "x\u2028# y\r\n", "[x](y) ![i](http://e/i.png)"]
    header, row = markdown_table(["name", "text"], [["t", t] for t in texts])[0], markdown_table(["t"], [[MARKUP]])[2]
    assert row_cells(header) == ["name", "text"] and not unescaped_markup(row) and "\n" not in row
    for text in texts:
        line = markdown_table(["x", "text", "y"], [[1, text, 2]])[2]
        one_line = "".join(" " if c in "\r\n\u2028" else c for c in text).strip()
        assert row_cells(line) == ["1", one_line, "2"] and md_escape(text) in line


def test_dataset_labels_reach_report_and_comparison_as_text(tmp_path):
    import shutil

    from agentic_rag.configuration import Settings
    from agentic_rag.datasets.crag import CragRecord, write_records
    from agentic_rag.eval.runner import run_eval
    from testkit.attacks import MARKUP, markup_labels, unescaped_markup
    from testkit.fakes import ScriptedChat
    from testkit.scripted_runs import REPLIES, records

    recs = [CragRecord(**markup_labels(r.model_dump())) for r in records()]
    recs[0].answer = f"finding nemo {MARKUP}"
    data = tmp_path / "markup.jsonl"
    write_records(recs, data)
    settings = Settings.load(overrides={"ARTIFACTS_DIR": str(tmp_path / "artifacts")})
    run_eval(data, "baseline", settings, tmp_path / "run", progress=False,
                   extra_config={"llm": ScriptedChat(replies=list(REPLIES))})
    report = (tmp_path / "run" / "report.md").read_text()
    assert not unescaped_markup(report), report
    assert len([x for x in report.splitlines() if x.startswith("|") and "pwn" in x]) == 3  # one row per breakdown
    shutil.copytree(tmp_path / "run", tmp_path / "run2")
    res = runner.invoke(app, ["compare", str(tmp_path / "run"), str(tmp_path / "run2"), "--out", str(tmp_path / "c.md")])
    assert res.exit_code == 0, res.output
    comparison = (tmp_path / "c.md").read_text()
    assert not unescaped_markup(comparison) and "finding nemo pwn \\| x \\|" in comparison, comparison


def test_a_pickled_probe_file_is_refused_without_being_unpickled(tmp_path):
    import subprocess
    import sys

    import numpy as np

    from agentic_rag.datasets.crag import DataError
    from agentic_rag.training.sets import probe_training_ids
    from testkit.attacks import pickled_npz
    from testkit.processes import ROOT, child_env

    good = tmp_path / "good.npz"
    np.savez(good, ids=np.array(["nq-1-answerable", "sq-2"]), X=np.zeros((2, 2)))
    assert probe_training_ids([good]) == {"nq-1", "sq-2"}
    marker = tmp_path / "pwned"
    bad = pickled_npz(tmp_path / "bad.npz", f"touch {marker}")
    with pytest.raises(DataError, match="bad.npz is not a probe training file"):
        probe_training_ids([good, bad])
    proc = subprocess.run([sys.executable, str(ROOT / "scripts" / "make_nq_dev.py"), "--exclude", str(bad), "--out",
                           str(tmp_path / "dev.jsonl")], env=child_env(), capture_output=True, text=True, timeout=300)
    assert proc.returncode == 2 and proc.stderr.strip().splitlines() == [proc.stderr.strip()], proc.stderr
    assert proc.stderr.startswith("error: ") and "bad.npz" in proc.stderr
    assert not marker.exists() and not (tmp_path / "dev.jsonl").exists()
