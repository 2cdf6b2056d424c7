"""Runs and their folders: two processes writing one telemetry file (group ``runs``); a second writer, a
stale lock, a finished run rerun, a damaged results line, SIGTERM (``run_folders``)."""

from __future__ import annotations

import json
import re
import shlex
import shutil
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

from agentic_rag.children import start_child
from testkit.processes import child_env, eval_cmd, kill, lines, result_ids, start, wait_until
from testkit.reliability.cases import (
    TRACEBACK,
    WEAK,
    Context,
    case,
    cli,
    one_line_error,
    resumed_outcome,
    warnings_shown,
)

WRITER = """
import sys
from pathlib import Path
from agentic_rag.telemetry import write_row
for i in range(int(sys.argv[3])):
    write_row(Path(sys.argv[1]), {"question_id": f"{sys.argv[2]}-{i}", "payload": sys.argv[2] * 200_000})
"""


@case("runs", "two writers on one telemetry file", "2 processes x 100 lines of 200 kB, concurrently")
def _two_writers(ctx: Context) -> dict[str, Any]:
    path = ctx.work / "shared_telemetry.jsonl"
    path.unlink(missing_ok=True)
    procs = [start_child([sys.executable, "-c", WRITER, str(path), tag, "100"], env=child_env()) for tag in "ab"]
    codes = [p.wait() for p in procs]
    broken = 0
    for line in path.read_text().splitlines():
        try:
            row = json.loads(line)
            broken += row["payload"] != row["question_id"][0] * 200_000
        except json.JSONDecodeError:
            broken += 1
    total = len(path.read_text().splitlines())
    return {"exit_code": max(codes), "crash": any(codes), "traceback": False,
            "outcome": f"{total} lines, {broken} interleaved or cut", "rows_lost": 200 - (total - broken),
            "rows_doubled": 0, "ok_expected": broken == 0 and total == 200}


# --- run folders ----------------------------------------------------------------------------------


def eval_in_use(ctx: Context, out: Path) -> subprocess.Popen:
    """An `eval` of the toy questions holding ``out``, stopped inside question 3 (its revision hangs)."""
    ctx.serve(WEAK, ["ok"] * 5 + ["hang"])
    before = len(ctx.server.requests)
    proc = start(eval_cmd(ctx.toy, out, ctx.kill_opts()))
    wait_until(lambda: len(ctx.server.requests) - before == 6 and lines(out / "results.jsonl") == 2, proc, step=0.05)
    return proc


@case("run_folders", "a second eval on a folder in use", "eval, --resume, --overwrite and --n 1 into the --out of a running eval")
def _second_writer(ctx: Context) -> dict[str, Any]:
    out = ctx.folder("in_use")
    first = eval_in_use(ctx, out)
    tries = [cli(eval_cmd(ctx.toy, out, [*extra, *ctx.kill_opts()])) for extra in ([], ["--resume"], ["--overwrite"], ["--n", "1"])]
    held = lines(out / "results.jsonl")
    kill(first)
    refused = [one_line_error(p, [f"the run folder {out} is in use by process {first.pid}"]) for p in tries]
    return {**refused[0], "ok_expected": all(r["ok_expected"] for r in refused) and held == 2,
            "rows_lost": 2 - held, "traceback": any(r["traceback"] for r in refused),
            "detail": {"exit_codes": [p.returncode for p in tries], "rows_of_the_running_eval": held}}


@case("run_folders", "a stale lock", "SIGKILL of a running eval (its run.lock stays), then --resume")
def _stale_lock(ctx: Context) -> dict[str, Any]:
    out = ctx.folder("stale_lock")
    first = eval_in_use(ctx, out)
    kill(first)
    left = (out / "run.lock").is_file()
    stderr: list[str] = []
    res = resumed_outcome(ctx, out, "1 SIGKILL, 1 resume", said=stderr)
    said = [x for x in warnings_shown(stderr[0]) if "was locked by" in x]
    res["ok_expected"] &= left and not (out / "run.lock").exists() and f"process {first.pid}" in "".join(said)
    res["outcome"] += f"; {said[0][:140] if said else '(no stale-lock warning)'}"
    res["detail"].update(lock_left_by_the_kill=left, on_screen=said)
    return res


@case("run_folders", "eval into a finished run", "eval (no --resume) twice into one --out, then --n 2 --overwrite")
def _no_silent_overwrite(ctx: Context) -> dict[str, Any]:
    out = ctx.folder("finished")
    shutil.copytree(ctx.reference, out)
    kept = (out / "results.jsonl").read_bytes()
    again = cli(eval_cmd(ctx.toy, out, ctx.kill_opts()))
    res = one_line_error(again, [f"{out} already holds a run (12 results)", "--overwrite"])
    res["rows_lost"] = int((out / "results.jsonl").read_bytes() != kept) * 12
    ctx.serve(WEAK)
    replaced = cli(eval_cmd(ctx.toy, out, ["--n", "2", "--overwrite", *ctx.kill_opts()]))
    res["ok_expected"] &= replaced.returncode == 0 and result_ids(out) == ["toy-0", "toy-1"]
    res["detail"] = {"overwrite_exit_code": replaced.returncode, "ids_after_overwrite": result_ids(out)}
    return res


@case("run_folders", "a damaged line inside results.jsonl", "line 5 of 12 replaced by bytes that are not JSON, then --resume")
def _damaged_line(ctx: Context) -> dict[str, Any]:
    out = ctx.folder("damaged")
    shutil.copytree(ctx.reference, out)
    rows = (out / "results.jsonl").read_bytes().splitlines(keepends=True)
    rows[4] = rows[4][:50] + b"\x00\xff not json\n"
    (out / "results.jsonl").write_bytes(b"".join(rows))
    before = len(ctx.server.requests)
    stderr: list[str] = []
    res = resumed_outcome(ctx, out, "a damaged line, 1 resume", said=stderr)
    said = warnings_shown(stderr[0])
    aside = out / "results.rejected.jsonl"
    res["ok_expected"] &= aside.is_file() and aside.read_bytes() == rows[4] and (len(ctx.server.requests) - before) == 2
    res["ok_expected"] &= any("damaged line" in x and "(line 5)" in x for x in said)
    res["outcome"] += f"; {said[0][:140] if said else '(no warning)'}"
    res["detail"].update(questions_redone=(len(ctx.server.requests) - before) // 2, on_screen=said[:3])
    return res


@case("run_folders", "SIGTERM", "SIGTERM while question 3 waits for the model; then the printed command")
def _sigterm(ctx: Context) -> dict[str, Any]:
    out = ctx.folder("sigterm")
    proc = eval_in_use(ctx, out)
    took, stderr = kill(proc, signal.SIGTERM)
    printed = re.search(r"resume with:\n\s+(.+)", stderr)
    command = shlex.split(printed.group(1)) if printed else []
    res = resumed_outcome(ctx, out, "1 SIGTERM, 1 resume (the printed command)",
                          resume=[sys.executable, *command[1:]] if command else None,
                          exit_s=round(took, 2), exit_code_at_sigterm=proc.returncode)
    res["ok_expected"] &= proc.returncode == 143 and printed is not None and TRACEBACK not in stderr
    res["traceback"] |= TRACEBACK in stderr
    return res
