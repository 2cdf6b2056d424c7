"""Artefacts and clients that try to run code, take the server's key, write where they choose or inject markup:
a run folder's poisoned checkpoints, per-request settings of the served graph, dataset labels in the markdown
reports, pickled .npz files."""

from __future__ import annotations

import pytest
from typer.testing import CliRunner

from agentic_rag.cli import app
from agentic_rag.testing.attacks import poison_checkpoints
from tests.test_trace import make_run

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
