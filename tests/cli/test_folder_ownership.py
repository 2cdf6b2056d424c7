"""A folder a command replaces or empties must be one this project wrote: an index folder (`ingest --out`, the
per-question cache's old entries) by its index manifest, a run folder (`eval --overwrite`, `--resume`) by its
config.json. A folder that only shares a file name (a web app's manifest.json, a folder holding a
report.md) is one line, exit 2, and every file in it is kept."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from typer.testing import CliRunner

from agentic_rag.cli import app
from agentic_rag.ingest.ingest import evict_indexes
from testkit.fault_server import FaultServer
from testkit.processes import WEAK, as_options, overrides
from testkit.records import docs_folder
from testkit.records import toy_dataset as dataset

runner = CliRunner()


def pwa(folder: Path) -> dict[str, str]:
    """A web app's folder: its manifest.json shares the index manifest's name and nothing else."""
    folder.mkdir(parents=True, exist_ok=True)
    files = {"manifest.json": '{"name": "My PWA"}', "app.js": "precious();", "index.html": "<p>Hello, app users.</p>" * 20}
    for name, text in files.items():
        (folder / name).write_text(text)
    return files


def kept(folder: Path, files: dict[str, str]) -> bool:
    return {p.name: p.read_text() for p in folder.iterdir()} == files


def refused(res, folder: Path, what: str) -> None:
    message = res.stderr.strip()
    assert res.exit_code == 2 and isinstance(res.exception, SystemExit), res.output[-2000:]
    assert message.startswith(f"error: {folder} exists and is not {what}") and "\n" not in message, message
    assert "nothing was overwritten" in message


def test_ingest_replaces_only_an_index_folder_never_one_that_holds_a_manifest_json(tmp_path):
    art = ["-o", f"ARTIFACTS_DIR={tmp_path / 'artifacts'}"]
    docs, app_folder = docs_folder(tmp_path / "docs", 2), tmp_path / "pwa"
    files = pwa(app_folder)
    res = runner.invoke(app, ["ingest", str(docs), "--out", str(app_folder), *art])
    refused(res, app_folder, "an index folder")  # before: exit 0, app.js gone
    assert kept(app_folder, files)
    # the source folder itself, a web app's pages ingested into where they are
    res = runner.invoke(app, ["ingest", str(app_folder), "--out", str(app_folder), *art])
    refused(res, app_folder, "an index folder")
    assert kept(app_folder, files)
    index = tmp_path / "index"  # an index folder of this project's is replaced, as before
    for source in (docs, app_folder):
        res = runner.invoke(app, ["ingest", str(source), "--out", str(index), *art])
        assert res.exit_code == 0, res.output[-2000:]
    assert json.loads((index / "manifest.json").read_text())["source"] == str(app_folder)


def test_cache_eviction_removes_only_index_folders(tmp_path, settings):
    from agentic_rag.ingest.pages import make_page
    from agentic_rag.retrieval.embeddings import get_embedder
    from agentic_rag.retrieval.hybrid import HybridIndex

    questions = tmp_path / "questions"  # a cache folder set to one that holds other folders too
    index = HybridIndex.build([make_page("The regatta was won by crew seven. " * 20, page_url="toy://1")],
                              get_embedder(settings), 400, 40, 20)
    for i, name in enumerate(("old-index", "mine", "new-index")):
        folder = questions / name
        if name == "mine":
            files = pwa(folder)
        else:
            index.save(folder)
        os.utime(folder, (1_000_000 + i, 1_000_000 + i))
    assert evict_indexes(questions, keep=1) == 1
    assert sorted(p.name for p in questions.iterdir()) == ["mine", "new-index"]  # before: mine was removed
    assert kept(questions / "mine", files)


@pytest.fixture(scope="module")
def server():
    with FaultServer(reply=WEAK) as srv:
        yield srv


@pytest.mark.parametrize("mode", [[], ["--overwrite"], ["--resume"]])
def test_eval_never_empties_a_folder_that_is_not_a_run_folder(server, tmp_path, mode):
    folder = tmp_path / "notes"
    folder.mkdir()
    files = {"results.jsonl": '{"id": "mine", "query": "q", "prediction": "p", "events": []}\n',
             "report.md": "# my own report\n", "telemetry.jsonl": "my own log\n"}
    for name, text in files.items():
        (folder / name).write_text(text)
    res = runner.invoke(app, ["eval", "--dataset", str(dataset(tmp_path)), "--n", "1", "--out", str(folder), *mode,
                              *as_options(overrides(server.url, tmp_path))])
    refused(res, folder, "a run folder")  # before: results.jsonl emptied, report.md replaced
    assert kept(folder, files)
