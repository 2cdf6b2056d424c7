"""Processes (group ``hangs``): a model server that never answers, and children that must end
with their parent (`serve` stopped with SIGTERM, SIGHUP or SIGKILL; an `eval` on the Ray cluster it started)."""

from __future__ import annotations

import json
import os
import signal
import tempfile
import time
from pathlib import Path
from typing import Any

from testkit.processes import (
    PORT_CLOSE_S,
    alive,
    descendants,
    eval_cmd,
    seconds_until_ended,
    serve_stopped_by,
    start,
    wait_until,
)
from testkit.reliability.cases import GOOD, TRACEBACK, Context, case, cli, eval_outcome

SILENT_N, SILENT_TIMEOUT_S, SILENT_RETRIES = 6, 5.0, 2  # questions; each attempt's timeout (s); retries per call


@case("hangs", "eval: a model server that never answers",
      f"the server accepts every call and never replies; eval of {SILENT_N} questions, "
      f"LLM_TIMEOUT_S={SILENT_TIMEOUT_S:g}, LLM_RETRIES={SILENT_RETRIES}")
def _silent_server(ctx: Context) -> dict[str, Any]:
    out = ctx.folder("silent_server")
    ctx.server.set_plan([], default="hang")
    before, t0 = len(ctx.server.requests), time.monotonic()
    try:
        proc = cli(eval_cmd(ctx.toy, out, ["--n", str(SILENT_N), *ctx.opts(LLM_TIMEOUT_S=SILENT_TIMEOUT_S,
                                                                          LLM_RETRIES=SILENT_RETRIES)]))
    finally:
        ctx.serve(GOOD)
    wall_s, asked = round(time.monotonic() - t0, 1), len(ctx.server.requests) - before
    res = eval_outcome(ctx, out, proc, SILENT_N, ["ABSTAIN_LLM_UNAVAILABLE"] * SILENT_N)
    rows = [json.loads(x) for x in (out / "results.jsonl").read_text().splitlines()] if res["ok_expected"] else []
    waited_s = round(sum(r["llm_ms"] for r in rows) / 1000, 1)
    one_question_s = (SILENT_RETRIES + 1) * SILENT_TIMEOUT_S  # what every question waited before the breaker
    said_since = sum("stopped answering at" in r["explanation"] for r in rows)
    res["outcome"] += (f"; {wall_s} s wall, {waited_s} s waiting for the model (one question's attempts: "
                       f"{one_question_s:g} s), {asked} requests")
    res["ok_expected"] &= asked == SILENT_RETRIES + 1 and waited_s < 2 * one_question_s and said_since == SILENT_N - 1
    res["detail"].update(wall_s=wall_s, model_wait_s=waited_s, requests=asked, refusals_saying_since_when=said_since,
                         without_breaker_s=SILENT_N * one_question_s)
    return res


def stopped_serve(sig: signal.Signals) -> dict[str, Any]:
    with tempfile.TemporaryDirectory() as folder:
        code, closed_s, stderr = serve_stopped_by(sig, Path(folder))
    return {
        "exit_code": code, "crash": code != -sig, "traceback": TRACEBACK in stderr, "rows_lost": 0,
        "outcome": f"serve exited {code}; its server "
                   + (f"gone, port closed {closed_s} s later" if closed_s is not None
                      else f"STILL SERVING {PORT_CLOSE_S:g} s later (re-parented to init)"),
        "ok_expected": closed_s is not None and code == -sig,
        "detail": {"port_closed_after_s": closed_s,
                   "server": "Python's http.server in llama.cpp's place (llama-cpp-python is not installed here)"},
    }


for _sig, _how in ((signal.SIGTERM, "`kill`, a service manager or a container stop"), (signal.SIGHUP, "a closed terminal"),
                   (signal.SIGKILL, "`kill -9`: only the kernel can stop the server")):
    case("hangs", f"serve: {_sig.name} to `serve`", f"`agentic-rag serve --port P &`, then {_sig.name} to it alone "
         f"({_how}); its server must be gone within {PORT_CLOSE_S:g} s")(lambda ctx, sig=_sig: stopped_serve(sig))


# seconds Ray's processes may take to end after their driver. Ray shares their fate itself (its
# PR_SET_PDEATHSIG): GCS and raylet end at once; its two agents notice their raylet is gone and, after
# a SIGKILL of the driver, leave about a minute later (measured: 62 s), their logs flushed to a GCS gone too
RAY_GONE_S = 120.0


def stopped_ray_eval(ctx: Context, sig: signal.Signals) -> dict[str, Any]:
    """An `eval --executor ray` (a local Ray cluster it starts) waiting for the model, then ``sig`` to the
    eval alone: every process below it must be gone."""
    out = ctx.folder(f"ray_{sig.name.lower()}")
    ctx.server.set_plan([], default="hang")
    before = len(ctx.server.requests)
    try:
        proc = start(eval_cmd(ctx.toy, out, ["--executor", "ray", *ctx.opts(LLM_TIMEOUT_S=300)]))
        waiting = wait_until(lambda: len(ctx.server.requests) > before, proc, timeout=900)
        below, t0 = descendants(proc.pid), time.monotonic()
        proc.send_signal(sig)  # the eval alone: its group would take Ray's processes down with it
        proc.wait(timeout=120)
        took, ended_s = time.monotonic() - t0, seconds_until_ended(below, RAY_GONE_S)
    finally:
        ctx.serve(GOOD)
    left = [pid for pid in below if alive(pid)]
    for pid in left:  # left behind by the run this case started: end them here
        os.kill(pid, signal.SIGKILL)
    stderr = proc.stderr.read()
    return {
        "exit_code": proc.returncode, "crash": not waiting, "traceback": TRACEBACK in stderr, "rows_lost": 0,
        "outcome": f"eval exited {proc.returncode} in {took:.1f} s; {len(below)} processes below it, "
                   + (f"all gone {ended_s} s later" if ended_s is not None else f"{len(left)} STILL RUNNING"),
        # SIGTERM stops a run as Ctrl-C does (143, the resume command); SIGKILL leaves no word
        "ok_expected": waiting and below != [] and ended_s is not None
        and (sig != signal.SIGTERM or (proc.returncode == 143 and "resume with" in stderr)),
        "detail": {"processes_below": len(below), "ended_after_s": ended_s, "left_running": len(left),
                   "exit_s": round(took, 2)},
    }


for _sig in (signal.SIGTERM, signal.SIGKILL):
    case("hangs", f"eval --executor ray: {_sig.name} to `eval`",
         f"an eval on the local Ray cluster it starts, waiting for the model, then {_sig.name} to the eval alone; "
         f"every process below it must be gone within {RAY_GONE_S:g} s")(lambda ctx, sig=_sig: stopped_ray_eval(ctx, sig))
