"""Files the user names for a command's output (trace --html, compare --out and --html, graph --out) and the
folders eval and ingest write (--out). A stream (a FIFO, the null device, a link to either, /dev/stdout) is
written into and stays what it was, a link still a link; any other device, a name in /dev, a path ending in
'/', a folder or an empty name is one line, exit 2, and nothing is written anywhere."""

from __future__ import annotations

import os
import stat
import subprocess
import sys
from contextlib import nullcontext
from pathlib import Path

import pytest
from typer.testing import CliRunner

from agentic_rag.cli import app
from agentic_rag.configuration import Settings
from agentic_rag.eval.runner import run_eval
from testkit.fault_server import FaultServer
from testkit.places import ZERO_DEVICE, PlaceRefused, char_device, fifo_reader
from testkit.processes import SUITE_SETTINGS, WEAK, as_options, child_env, overrides
from testkit.records import docs_folder
from testkit.records import toy_dataset as dataset
from testkit.scripted_runs import fake

runner = CliRunner()

# each command that writes a file the user names: its arguments with that file at ``path``
WRITERS = {
    "trace --html": lambda runs, path: ["trace", str(runs[0]), "--html", str(path)],
    "compare --out": lambda runs, path: ["compare", str(runs[0]), str(runs[1]), "--out", str(path)],
    "compare --html": lambda runs, path: ["compare", str(runs[0]), str(runs[1]), "--html", str(path)],
    "graph --out": lambda runs, path: ["graph", "--out", str(path)],
}
WRITTEN = {"trace --html": b"<html", "compare --out": b"# Comparison", "compare --html": b"<html", "graph --out": b"graph"}


@pytest.fixture(scope="module")
def runs(tmp_path_factory) -> tuple[Path, Path]:
    folder = tmp_path_factory.mktemp("runs")
    settings = Settings.load(overrides={"ARTIFACTS_DIR": str(folder / "artifacts")})
    for name in ("a", "b"):
        run_eval(dataset(folder), "agent", settings, folder / name, n=2, progress=False, extra_config={"llm": fake()})
    return folder / "a", folder / "b"


def kind(path: Path) -> tuple[bool, int]:
    """Whether ``path`` is a link, and the type of what it names (links followed)."""
    return path.is_symlink(), stat.S_IFMT(os.stat(path).st_mode)


def one_line_error(res, starts: str) -> str:
    message = res.stderr.strip()
    assert res.exit_code == 2 and isinstance(res.exception, SystemExit), res.output[-2000:]
    assert message.startswith(starts) and "\n" not in message, message
    return message


def stream(folder: Path, name: str):
    """The stream a case writes to, made in ``folder``: a FIFO with a reader at its end (what it read, once
    the block ends), or a null device (this system's own where this process may not make one)."""
    if "fifo" in name:
        return folder / "stream", fifo_reader(folder / "stream")
    try:
        return char_device(folder / "null"), nullcontext([])
    except PlaceRefused:
        return Path(os.devnull), nullcontext([])


@pytest.mark.parametrize("command", WRITERS)
def test_a_stream_or_a_link_to_one_is_written_into_and_stays_what_it_was(runs, tmp_path, command):
    for name in ("fifo", "link to a fifo", "null device", "link to the null device"):
        folder = tmp_path / name.replace(" ", "-")
        folder.mkdir()
        target, reading = stream(folder, name)
        place = folder / "out.file" if name.startswith("link") else target
        with reading as got:
            if place != target:
                place.symlink_to(target)
            before = kind(place)
            res = runner.invoke(app, WRITERS[command](runs, place))
        assert res.exit_code == 0, (name, res.output[-2000:])
        assert kind(place) == before, f"{name}: {command} replaced it"  # before: a regular file
        if place != target:
            assert os.readlink(place) == str(target)
        mine = sorted({p.name for p in (place, target) if p.parent == folder})
        assert sorted(p.name for p in folder.iterdir()) == mine, name  # no plots, no temporaries
        if "fifo" in name:
            assert got and WRITTEN[command] in got[0], (name, got)


IN_DEV = Path(f"/dev/agentic-rag-test-{os.getpid()}")  # a name no file may take


def refused_places(tmp_path: Path, option: str) -> dict[str, tuple[str, str]]:
    """Each place no file may be written to: the path given, and how its one line starts. A device that is
    not a stream is made in the test's folder (never /dev/zero itself: the code before the fix replaced it),
    where this process may make one."""
    (tmp_path / "a-folder").mkdir(exist_ok=True)
    cannot = f"error: cannot write {option} "
    places = {
        "a path ending in '/'": (f"{tmp_path}/newdir/", f"{cannot}{tmp_path}/newdir/: it names a folder"),
        "an existing folder": (str(tmp_path / "a-folder"), f"{cannot}{tmp_path / 'a-folder'}: it names a folder"),
        "an empty name": ("", f"error: {option} is empty: "),
        "a name in /dev": (str(IN_DEV), f"{cannot}{IN_DEV}: it is in a folder of devices"),
    }
    zero = tmp_path / "zero"
    try:
        if not zero.exists():
            char_device(zero, ZERO_DEVICE)
        places["a device that is not a stream"] = (str(zero), f"{cannot}{zero}: it is a device")
    except PlaceRefused:
        pass
    return places


@pytest.mark.parametrize("command", WRITERS)
def test_a_folder_a_device_or_an_empty_name_is_one_line_and_nothing_is_written(runs, tmp_path, command):
    for case, (given, said) in refused_places(tmp_path, command.split()[1]).items():
        try:
            one_line_error(runner.invoke(app, WRITERS[command](runs, given)), said)
        finally:
            created_in_dev = IN_DEV.exists()
            IN_DEV.unlink(missing_ok=True)
        assert not created_in_dev, "a file was made in /dev"
        assert not (tmp_path / "newdir").exists(), case  # before: a file named newdir
        kinds = {p.name: kind(p) for p in tmp_path.iterdir()}
        assert kinds.pop("a-folder") == (False, stat.S_IFDIR) and kinds in ({}, {"zero": (False, stat.S_IFCHR)}), case


@pytest.fixture(scope="module")
def server():
    with FaultServer(reply=WEAK) as srv:
        yield srv


def test_an_empty_out_is_one_line_not_the_current_folder(server, tmp_path, monkeypatch):
    here = tmp_path / "here"
    here.mkdir()
    monkeypatch.chdir(here)
    data, docs = dataset(tmp_path), docs_folder(tmp_path / "docs", 2)
    values = as_options(overrides(server.url, tmp_path))
    for args in (["eval", "--dataset", str(data), "--n", "1", "--out", "", *values],
                 ["ingest", str(docs), "--out", "", "-o", f"ARTIFACTS_DIR={tmp_path / 'artifacts'}"]):
        res = runner.invoke(app, args)
        one_line_error(res, "error: --out is empty: ")  # before: eval wrote its run into the current folder, exit 0
        assert list(here.iterdir()) == []


def test_prepare_refuses_a_folder_or_an_empty_name_before_reading_its_input(tmp_path):
    given = tmp_path / "questions.jsonl"
    given.write_text("")
    for name in ("squad2", "rgb", "nq", "hotpotqa"):
        res = runner.invoke(app, ["prepare", name, "--input", str(given), "--out", f"{tmp_path}/newdir/"])
        one_line_error(res, f"error: cannot write --out {tmp_path}/newdir/: it names a folder")
    one_line_error(runner.invoke(app, ["prepare", "crag", "--input", str(given), "--out", ""]), "error: --out is empty: ")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["questions.jsonl"]  # before: a file named newdir


@pytest.mark.system
def test_dev_stdout_redirected_to_a_file_gets_the_page_then_the_commands_own_line(runs, tmp_path):
    page = tmp_path / "page.html"
    with open(page, "wb") as fh:  # as a shell's `> page.html` leaves the command's standard output
        done = subprocess.run([sys.executable, "-m", "agentic_rag.cli", "trace", str(runs[0]), "--html", "/dev/stdout"],
                              stdout=fh, stderr=subprocess.PIPE, env=child_env(SUITE_SETTINGS), timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    text = page.read_text()
    assert text.startswith("<!DOCTYPE html>") and text.rstrip().endswith("written /dev/stdout")  # before: written over
    assert os.path.islink("/dev/stdout")  # before, as root: a regular file in /dev
