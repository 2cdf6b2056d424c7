"""An ingested folder is untrusted: a link in it that leads out of it (``ln -s /etc/passwd users.md``, a
link to another folder) is skipped, said and counted, and what it points to is never read, so it is not
indexed, shown by `search` or sent to a model. A link that stays inside the folder is read as its target."""

from __future__ import annotations

import json

from typer.testing import CliRunner

from agentic_rag.cli import app
from testkit.records import docs_folder

SECRET = "zanzibarite passphrase of the vault. " * 20


def test_links_out_of_an_ingested_folder_are_skipped_counted_and_never_read(tmp_path):
    outside = tmp_path / "outside"
    (outside / "more").mkdir(parents=True)
    (outside / "secret.md").write_text(SECRET)
    (outside / "more" / "notes.md").write_text(SECRET)
    docs = docs_folder(tmp_path / "docs", 2)
    (docs / "users.md").symlink_to(outside / "secret.md")  # a file link out of the folder
    (docs / "elsewhere").symlink_to(outside / "more")  # a folder link out of it
    (docs / "sub").mkdir()
    (docs / "sub" / "up.md").symlink_to("../../outside/secret.md")  # relative, from a subfolder
    (docs / "alias.txt").symlink_to(docs / "doc0000.txt")  # inside: read as its target
    index = tmp_path / "index"
    art = ["-o", f"ARTIFACTS_DIR={tmp_path / 'artifacts'}"]
    res = CliRunner().invoke(app, ["ingest", str(docs), "--out", str(index), *art])
    assert res.exit_code == 0, res.output[-2000:]
    stats = json.loads(res.stdout[res.stdout.index("{"):])
    assert stats["skipped_links"] == 3 and stats["pages"] == 3, stats  # before: no count, the secret indexed
    for link in ("users.md", "elsewhere", "up.md"):
        assert f"skipped {docs}" in res.stderr and link in res.stderr and "leads out of" in res.stderr
    pages = (index / "pages.jsonl").read_text()
    assert "zanzibarite" not in pages and "zanzibarite" not in (index / "chunks.jsonl").read_text()
    found = CliRunner().invoke(app, ["search", "zanzibarite passphrase", "--index", str(index), "--json", *art])
    assert found.exit_code == 0 and "zanzibarite" not in found.stdout
