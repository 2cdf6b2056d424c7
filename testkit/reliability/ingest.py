"""Killed ingest: SIGKILL of `ingest` while embedding or while the index is written, then a rerun. The
folder and process are the test suite's (testkit/); here also the rerun."""

from __future__ import annotations

import json
import signal
import sys
from pathlib import Path
from typing import Any

from testkit.processes import start_ingest, wait_until
from testkit.records import docs_folder
from testkit.reliability.cases import Context, case, cli, ingest_cmd, process_outcome


def temp_folders(out: Path) -> list[Path]:
    return [p for p in out.parent.iterdir() if p.name.startswith(f".{out.name}.") and p.name.endswith(".tmp")]


def killed_ingest(ctx: Context, name: str, when: str, earlier: bool = False) -> dict[str, Any]:
    n = 20
    folder, out = docs_folder(ctx.folder(name + "_docs"), n), ctx.folder(name)
    base = ctx.work / "artifacts"
    if earlier:  # an earlier, complete index at the same --out: the killed build must not cost it
        cli(ingest_cmd(ctx, docs_folder(ctx.folder(name + "_small"), 2), out), expect=0)
    proc, seen = start_ingest(folder, out, base)
    ready = {"embedding": lambda: b"Batches" in b"".join(seen), "writing": lambda: bool(temp_folders(out))}[when]
    reached = wait_until(ready, proc, timeout=600, step=0.001 if when == "writing" else 0.05)
    at_kill = [len(list(p.rglob("*"))) for p in temp_folders(out)]
    proc.kill()
    proc.wait()
    search = [sys.executable, "-m", "agentic_rag.cli", "search", "regatta", "--index", str(out), "--json",
              "-o", f"ARTIFACTS_DIR={base}"]
    after_kill = cli(search)
    manifest = json.loads((out / "manifest.json").read_text()) if (out / "manifest.json").is_file() else {}
    if earlier:
        loads = after_kill.returncode == 0 and "regatta" in after_kill.stdout and manifest.get("pages") == 2
        kept = f"the earlier index {'loads whole' if loads else 'is LOST'}"
    else:
        loads = after_kill.returncode == 2 and "not an index folder" in after_kill.stderr and not out.exists()
        kept = "no index at --out (search: one-line error)" if loads else "AN INDEX AT --out LOADS"
    rerun = cli(ingest_cmd(ctx, folder, out))
    stats = json.loads(rerun.stdout) if rerun.returncode == 0 else {}
    searched = cli(search)
    return {**process_outcome(rerun, rerun.stderr + after_kill.stderr + searched.stderr, 0),
            "interruptions": "1 SIGKILL, 1 rerun",
            "outcome": f"{kept}; rerun: {stats.get('pages')} of {n} pages, search rc {searched.returncode}; "
                       f"{len(temp_folders(out))} temp folders left",
            "rows_lost": n - stats.get("pages", 0),
            "ok_expected": reached and proc.returncode == -signal.SIGKILL and loads and searched.returncode == 0
                           and not temp_folders(out),
            "detail": {"kill_point_reached": reached, "temp_folder_files_at_kill": at_kill,
                       "after_kill_rc": after_kill.returncode, "after_kill_stderr": after_kill.stderr.strip()[-300:],
                       "pages_at_out_after_kill": manifest.get("pages"), "rerun": stats}}


@case("ingest_kill", "SIGKILL while embedding", "SIGKILL when the embedding progress bar appears (fresh --out)")
def _ingest_kill_embedding(ctx: Context) -> dict[str, Any]:
    return killed_ingest(ctx, "ingest_kill_embedding", "embedding")


@case("ingest_kill", "SIGKILL while writing the index", "SIGKILL the moment the temporary index folder appears "
      "(polled every 1 ms; fresh --out)")
def _ingest_kill_writing(ctx: Context) -> dict[str, Any]:
    return killed_ingest(ctx, "ingest_kill_writing", "writing")


@case("ingest_kill", "SIGKILL while rewriting an earlier index", "as above, --out holding an earlier complete index")
def _ingest_kill_over(ctx: Context) -> dict[str, Any]:
    return killed_ingest(ctx, "ingest_kill_over", "writing", earlier=True)
