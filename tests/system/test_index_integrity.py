"""Index folders under kills, races and damage (issue #21, part A, case 9): a folder either loads whole
or is absent/refused with a clear error; a damaged cache entry is rebuilt, never fatal."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from typer.testing import CliRunner

from agentic_rag.cli import app
from agentic_rag.datasets.crag import CragRecord
from agentic_rag.ingest import ingest
from agentic_rag.ingest.ingest import build_corpus_index, index_for_record, record_cache_key
from agentic_rag.ingest.pages import make_page
from agentic_rag.retrieval.embeddings import get_embedder
from agentic_rag.retrieval.hybrid import BrokenIndexError, HybridIndex
from testkit.processes import start_ingest
from testkit.records import REGATTA, docs_folder

ROOT = Path(__file__).resolve().parents[2]
TEXT = REGATTA


def _record(rid: str = "r1") -> CragRecord:
    return CragRecord(interaction_id=rid, query="who won the regatta?", search_results=[
        {"page_name": "regatta", "page_url": "toy://regatta", "page_result": TEXT.format(i=7, m=41) * 20}])


def _kill_when(proc: subprocess.Popen, seen: list[bytes], marker: bytes, timeout: float = 300) -> None:
    deadline = time.monotonic() + timeout
    while marker not in b"".join(seen):
        assert proc.poll() is None, f"ingest ended before {marker!r}: {b''.join(seen)[-500:]!r}"
        assert time.monotonic() < deadline, "ingest never reached the point to kill it at"
        time.sleep(0.05)
    proc.send_signal(signal.SIGKILL)
    proc.wait(timeout=30)
    assert proc.returncode == -signal.SIGKILL


def test_a_killed_ingest_leaves_no_index_that_loads(settings, tmp_path):
    folder = docs_folder(tmp_path / "docs", 120)
    # an earlier, complete index at the same --out: a killed re-ingest must not lose it
    kept = tmp_path / "kept"
    build_corpus_index(docs_folder(tmp_path / "small", 2), kept, settings, progress=False)
    fresh = tmp_path / "fresh"
    runs = [start_ingest(folder, out, tmp_path / "art") for out in (fresh, kept)]
    for proc, seen in runs:  # killed while embedding, after every page was extracted
        _kill_when(proc, seen, b"Batches")

    res = CliRunner().invoke(app, ["search", "regatta", "--index", str(fresh), "-o", f"ARTIFACTS_DIR={tmp_path}"])
    assert res.exit_code == 2 and res.stderr.count("\n") == 1 and "not an index folder" in res.stderr
    assert not fresh.exists()
    old = HybridIndex.load(kept, get_embedder(settings))
    assert len(old.pages) == 2  # the earlier index, whole
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".") and (p / "manifest.json").exists()]


def test_a_truncated_cache_file_is_rebuilt(own_index_cache, capsys):
    settings = own_index_cache
    rec = _record()
    first = index_for_record(rec, settings)
    entry = Path(settings.paths.ARTIFACTS_DIR) / "cache" / "questions" / record_cache_key(rec, settings)
    faiss_file = entry / "faiss.index"
    size = faiss_file.stat().st_size
    faiss_file.write_bytes(faiss_file.read_bytes()[: size // 2])  # before: an uncaught faiss RuntimeError
    ingest._MEMORY.clear()
    again = index_for_record(rec, settings)
    assert [c.text for c in again.chunks] == [c.text for c in first.chunks]
    assert "rebuilding the cached index of r1" in capsys.readouterr().err
    assert faiss_file.stat().st_size == size  # the entry was written again, whole
    ingest._MEMORY.clear()
    index_for_record(rec, settings)
    assert "rebuilding" not in capsys.readouterr().err


@pytest.mark.parametrize("damage", ["manifest", "chunks", "missing_bm25"])
def test_a_damaged_index_folder_is_refused_with_a_clear_error(settings, tmp_path, damage):
    out = tmp_path / "idx"
    build_corpus_index(docs_folder(tmp_path / "docs", 3), out, settings, progress=False)
    if damage == "manifest":
        (out / "manifest.json").write_text('{"format": 1, "embe')
    elif damage == "chunks":
        (out / "chunks.jsonl").write_text((out / "chunks.jsonl").read_text()[:-40])
    else:
        for f in (out / "bm25").iterdir():
            f.unlink()
    with pytest.raises(BrokenIndexError, match="rebuild it"):
        HybridIndex.load(out, get_embedder(settings))
    res = CliRunner().invoke(app, ["search", "regatta", "--index", str(out), "-o", f"ARTIFACTS_DIR={tmp_path}"])
    assert res.exit_code == 2 and res.stderr.startswith("error: index") and res.stderr.count("\n") == 1


def test_loads_raced_by_a_writer_never_crash(settings, tmp_path):
    embedder = get_embedder(settings)
    pages = [make_page(TEXT.format(i=i, m=40) * 30, page_url=f"toy://{i}", page_index=i) for i in range(6)]
    index = HybridIndex.build(pages, embedder, 400, 40, 20)
    target = tmp_path / "raced"
    index.save(target)
    stop = time.monotonic() + 4
    failures: list[BaseException] = []
    outcomes = {"loaded": 0, "absent_or_refused": 0}

    def writer():
        while time.monotonic() < stop:
            index.save(target)

    def reader():
        while time.monotonic() < stop:
            try:
                assert len(HybridIndex.load(target, embedder)) == len(index)
                outcomes["loaded"] += 1
            except (FileNotFoundError, BrokenIndexError):
                outcomes["absent_or_refused"] += 1  # what index_for_record rebuilds from
            except BaseException as exc:  # noqa: BLE001 - before: faiss RuntimeError escaped
                failures.append(exc)
                return

    threads = [threading.Thread(target=writer), threading.Thread(target=writer), threading.Thread(target=reader)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert failures == [] and outcomes["loaded"] > 0
    assert len(HybridIndex.load(target, embedder)) == len(index)
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".raced.")]  # writers clean up after themselves


def test_ingest_never_overwrites_a_folder_that_is_not_an_index(settings, tmp_path):
    mine = tmp_path / "mine"
    mine.mkdir()
    (mine / "notes.txt").write_text("my own notes")
    res = CliRunner().invoke(app, ["ingest", str(docs_folder(tmp_path / "docs", 2)), "--out", str(mine),
                                   "-o", f"ARTIFACTS_DIR={tmp_path}"])
    assert res.exit_code == 2 and "is not an index folder" in res.stderr and res.stderr.count("\n") == 1
    assert (mine / "notes.txt").read_text() == "my own notes"  # before: the folder was removed and replaced


def test_a_save_sweeps_what_a_killed_writer_left(settings, tmp_path):
    index = HybridIndex.build([make_page(TEXT.format(i=1, m=40) * 5, page_url="toy://1")], get_embedder(settings), 400, 40, 20)
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    pid = int(dead.stdout)  # a process that has exited
    leftovers = [tmp_path / f".idx.{pid}.abc.tmp", tmp_path / f".idx.{pid}.def.old", tmp_path / f".idx.{os.getpid()}.ghi.tmp"]
    for d in leftovers:
        d.mkdir()
    index.save(tmp_path / "idx")
    assert [d.exists() for d in leftovers] == [False, False, True]  # a live writer's folder is left alone
