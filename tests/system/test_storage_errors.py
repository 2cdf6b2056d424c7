"""A disk that is full or read-only, for real (a tiny tmpfs): whatever file a command was writing (results.jsonl,
an SQLite file of checkpoints or chunk vectors, an index being saved, the telemetry of an answer), the
command ends in one line, exit 2, saying what is kept and, for a run, how to resume it; nothing is lost."""

from __future__ import annotations

from collections import OrderedDict
from contextlib import ExitStack
from pathlib import Path

import pytest
from typer.testing import CliRunner

from agentic_rag.cli import app
from agentic_rag.configuration import Settings
from agentic_rag.ingest import ingest
from agentic_rag.retrieval.embeddings import get_embedder
from agentic_rag.retrieval.hybrid import HybridIndex
from testkit.fault_server import FaultServer
from testkit.places import PlaceRefused, fill, tmpfs
from testkit.processes import WEAK, as_options, overrides
from testkit.records import docs_folder
from testkit.records import toy_dataset as dataset

runner = CliRunner()


@pytest.fixture
def disk():
    """``mount(folder, kib, read_only)``: a tmpfs there for the test; a process that may not mount skips."""
    with ExitStack() as stack:
        def mount(folder: Path, kib: int = 1024, read_only: bool = False) -> Path:
            try:
                return stack.enter_context(tmpfs(folder, kib, read_only))
            except PlaceRefused as exc:
                pytest.skip(str(exc))

        yield mount


@pytest.fixture(scope="module")
def server():
    with FaultServer(reply=WEAK) as srv:
        yield srv


def one_line(res, starts: str) -> str:
    message = res.stderr.strip().splitlines()[-1] if res.stderr.strip() else ""
    assert res.exit_code == 2 and isinstance(res.exception, SystemExit), res.output[-3000:]
    assert "Traceback" not in res.output and message.startswith(starts), res.output[-3000:]
    return message


@pytest.mark.parametrize("sqlite_file", ["checkpoints", "chunk vectors"])
def test_a_full_disk_under_an_sqlite_file_is_one_line_with_the_resume_command(server, tmp_path, disk, monkeypatch,
                                                                              sqlite_file):
    full = fill(disk(tmp_path / "full", kib=64))
    monkeypatch.setattr(ingest, "_MEMORY", OrderedDict())  # the record's index is built here, its vectors cached
    values = {**overrides(server.url, tmp_path), "INDEX_CACHE_DIR": str(tmp_path / "index-cache")}
    if sqlite_file == "checkpoints":
        values["CHECKPOINT_PATH"] = str(full.parent / "checkpoints.sqlite")
    else:
        values["EMBEDDING_CACHE_DIR"] = str(full.parent)
    out = tmp_path / "run"
    res = runner.invoke(app, ["eval", "--dataset", str(dataset(tmp_path)), "--n", "2", "--out", str(out),
                              *as_options(values)])
    message = one_line(res, "error: database or disk is full: ")  # before: a sqlite3.OperationalError traceback
    assert str(full.parent) in message and "the rows written so far are kept: " in message
    assert message.endswith("--resume") and f"--out {out}" in message


def test_a_full_disk_while_an_index_is_saved_is_one_line_and_the_old_index_is_kept(tmp_path, disk):
    place = disk(tmp_path / "small", kib=1024)
    index, art = place / "index", ["-o", f"ARTIFACTS_DIR={tmp_path / 'artifacts'}"]
    assert runner.invoke(app, ["ingest", str(docs_folder(tmp_path / "two", 2)), "--out", str(index), *art]).exit_code == 0
    fill(place)
    res = runner.invoke(app, ["ingest", str(docs_folder(tmp_path / "three", 3)), "--out", str(index), *art])
    message = one_line(res, "error: No space left on device")  # before: an OSError traceback
    assert f"{index} is left as it was" in message
    settings = Settings.load(overrides={"ARTIFACTS_DIR": str(tmp_path / "artifacts")})
    assert len(HybridIndex.load(index, get_embedder(settings)).pages) == 2
    assert sorted(p.name for p in place.iterdir()) == [".filler", "index"]  # no half-written folder left


def test_ask_with_artifacts_on_a_read_only_disk_is_one_line(server, tmp_path, disk, monkeypatch):
    read_only = disk(tmp_path / "read-only", kib=64, read_only=True)
    values = overrides(server.url, tmp_path)
    asked = ["ask", "--dataset", str(dataset(tmp_path)), "--id", "toy-0"]
    named = runner.invoke(app, [*asked, *as_options({**values, "ARTIFACTS_DIR": str(read_only / "artifacts")})])
    said = one_line(named, "error: cannot write ")  # before: an OSError traceback from a graph node
    assert str(read_only / "artifacts") in said and "ARTIFACTS_DIR" in said
    monkeypatch.chdir(read_only)  # the default ARTIFACTS_DIR, `artifacts`, in a read-only working folder
    values.pop("ARTIFACTS_DIR")
    default = runner.invoke(app, [*asked, *as_options(values)], env={"AGENTIC_RAG_INDEX_CACHE_DIR": None})
    assert "artifacts" in one_line(default, "error: cannot write ")
