"""Kills and resumes: SIGKILL of an `eval` at chosen points, a torn results file, Ctrl-C (scripted
model and the packaged 0.5B), each then resumed and compared with an uninterrupted run."""

from __future__ import annotations

import re
import shlex
import shutil
import signal
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from testkit.processes import eval_cmd, kill, lines, result_ids, start, wait_until
from testkit.reliability.cases import TRACEBACK, WEAK, Context, case, process_outcome, resumed_outcome


def killed_run(ctx: Context, name: str, plan: list[str], ready: Callable[[Path, int], bool], step: float = 0.05):
    ctx.serve(WEAK, plan)
    out = ctx.folder(name)
    before = len(ctx.server.requests)
    proc = start(eval_cmd(ctx.toy, out, ctx.kill_opts()))
    reached = wait_until(lambda: ready(out, len(ctx.server.requests) - before), proc, step=step)
    kill(proc)
    return out, {"condition_reached": reached, "result_lines_at_kill": lines(out / "results.jsonl")}


@case("kill_resume", "SIGKILL early", "SIGKILL 2 s after start (loading), then --resume")
def _kill_early(ctx: Context) -> dict[str, Any]:
    start_time = time.monotonic()
    out, info = killed_run(ctx, "kill_early", [], lambda out, served: time.monotonic() - start_time > 2.0)
    return resumed_outcome(ctx, out, "1 SIGKILL, 1 resume", **info)


@case("kill_resume", "SIGKILL mid-question", "SIGKILL while question 4 waits for its revision, its first round logged")
def _kill_mid_question(ctx: Context) -> dict[str, Any]:
    out, info = killed_run(ctx, "kill_mid_question", ["ok"] * 7 + ["hang"],
                           lambda out, served: served == 8 and lines(out / "results.jsonl") == 3)
    return resumed_outcome(ctx, out, "1 SIGKILL, 1 resume", **info)


@case("kill_resume", "SIGKILL mid-run", "SIGKILL once 6 of 12 result lines are written")
def _kill_mid_run(ctx: Context) -> dict[str, Any]:
    out, info = killed_run(ctx, "kill_mid_run", [], lambda out, served: lines(out / "results.jsonl") >= 6)
    return resumed_outcome(ctx, out, "1 SIGKILL, 1 resume", **info)


@case("kill_resume", "SIGKILL while writing", "SIGKILL the moment results.jsonl grows (polled every 1 ms)")
def _kill_writing(ctx: Context) -> dict[str, Any]:
    def grew(out: Path, served: int) -> bool:
        path = out / "results.jsonl"
        return path.is_file() and path.stat().st_size > 0

    out, info = killed_run(ctx, "kill_writing", [], grew, step=0.001)
    return resumed_outcome(ctx, out, "1 SIGKILL, 1 resume", **info)


@case("kill_resume", "SIGKILL three times", "SIGKILL after 2, 5 and 9 result lines, resuming in between")
def _kill_thrice(ctx: Context) -> dict[str, Any]:
    ctx.serve(WEAK)
    out = ctx.folder("kill_thrice")
    at = []
    for n in (2, 5, 9):
        proc = start(eval_cmd(ctx.toy, out, [*(["--resume"] if at else []), *ctx.kill_opts()]))
        wait_until(lambda: lines(out / "results.jsonl") >= n, proc, step=0.05)
        kill(proc)
        at.append(lines(out / "results.jsonl"))
    return resumed_outcome(ctx, out, "3 SIGKILL, 3 resumes", result_lines_at_kills=at)


CUTS = {"one byte": lambda n: 1, "half": lambda n: n // 2, "all but the newline": lambda n: n}  # bytes of the line kept

for _label in CUTS:
    @case("kill_resume", f"cut last line: {_label}", f"results.jsonl cut inside its last line ({_label} of it kept)")
    def _cut(ctx: Context, label: str = _label) -> dict[str, Any]:
        out = ctx.folder("cut_" + label.replace(" ", "_"))
        shutil.copytree(ctx.reference, out)
        whole = (out / "results.jsonl").read_bytes()
        last = whole.rstrip(b"\n").rsplit(b"\n", 1)[1]
        (out / "results.jsonl").write_bytes(whole[: len(whole) - len(last) - 1 + CUTS[label](len(last))])
        before = len(ctx.server.requests)
        res = resumed_outcome(ctx, out, "a torn write (file cut), 1 resume")
        res["detail"]["questions_redone"] = (len(ctx.server.requests) - before) // 2
        res["ok_expected"] &= res["detail"]["questions_redone"] == (label != "all but the newline")
        return res


@case("kill_resume", "Ctrl-C (scripted model)", "SIGINT while question 4 waits for the model; then the printed command")
def _ctrl_c(ctx: Context) -> dict[str, Any]:
    ctx.serve(WEAK, ["ok"] * 7 + ["hang"])
    out = ctx.folder("ctrl_c")
    before = len(ctx.server.requests)
    proc = start(eval_cmd(ctx.toy, out, ctx.kill_opts()))
    wait_until(lambda: len(ctx.server.requests) - before == 8 and lines(out / "results.jsonl") == 3, proc, step=0.05)
    took, stderr = kill(proc, signal.SIGINT)
    printed = re.search(r"resume with:\n\s+(.+)", stderr)
    command = shlex.split(printed.group(1)) if printed else []
    res = resumed_outcome(ctx, out, "1 SIGINT, 1 resume (the printed command)",
                          resume=[sys.executable, *command[1:]] if command else None,
                          exit_s=round(took, 2), exit_code_at_sigint=proc.returncode, printed_command=printed is not None)
    res["ok_expected"] &= proc.returncode == 130 and took < 5 and printed is not None and TRACEBACK not in stderr
    res["traceback"] |= TRACEBACK in stderr
    return res


@case("kill_resume", "Ctrl-C (0.5B decoding)", "SIGINT while the packaged model answers question 2 of 3")
def _ctrl_c_real(ctx: Context) -> dict[str, Any]:
    out = ctx.folder("ctrl_c_real")
    cmd = eval_cmd("example", out, ["--n", "3", "-o", f"ARTIFACTS_DIR={ctx.work / 'artifacts'}"])
    proc = start(cmd)
    wait_until(lambda: lines(out / "results.jsonl") >= 1, proc, step=0.2)
    time.sleep(2.0)  # the second question is being answered
    took, stderr = kill(proc, signal.SIGINT)
    ids = result_ids(out)
    return {
        **process_outcome(proc, stderr, 130),
        "interruptions": "1 SIGINT",
        "outcome": f"exit {proc.returncode} after {took:.1f} s; {len(ids)} row(s) saved; resume command "
                   + ("printed" if "--resume" in stderr else "MISSING"),
        "rows_lost": 0, "rows_doubled": len(ids) - len(set(ids)),
        "ok_expected": took < 5 and "--resume" in stderr,
        "detail": {"exit_s": round(took, 2)},
    }
