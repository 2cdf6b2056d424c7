"""Settings: wrong settings, a resume under other settings or against a moved server, an unwritable run
folder (group ``settings``); settings that cannot be used, caught when they load (``settings_load``)."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

from agentic_rag.configuration import Settings
from testkit.fault_server import FaultServer
from testkit.processes import compare_runs, eval_cmd, result_ids
from testkit.reliability.cases import (
    KEY,
    WEAK,
    Context,
    ask_cmd,
    case,
    cli,
    one_line_error,
    process_outcome,
)


@case("settings", "resume under other settings", "--resume with COVERAGE_MIN and 4 more settings changed")
def _resume_mismatch(ctx: Context) -> dict[str, Any]:
    out = ctx.folder("mismatch")
    shutil.copytree(ctx.reference, out)
    proc = cli(eval_cmd(ctx.toy, out, ["--resume", *ctx.kill_opts(), "-o", "COVERAGE_MIN=0.1", "-o", "FAITH_MIN=0.1",
                                      "-o", "OVERLAP_MIN=0.1", "-o", "MAX_ROUNDS=1", "-o", "ANSWER_RELEVANCE_MIN=0.1"]))
    was = Settings.load().baug.COVERAGE_MIN  # the run's value: the default, whatever it is now
    res = one_line_error(proc, [f"COVERAGE_MIN: {was} -> 0.1", "and 1 more", "--out"])
    res["rows_lost"] = 12 - len(set(result_ids(out)))
    return res


@case("settings", "resume after the server moved", "--resume with another port, timeout, retries and key")
def _resume_moved(ctx: Context) -> dict[str, Any]:
    out = ctx.folder("moved")
    shutil.copytree(ctx.reference, out)
    lines_before = (out / "results.jsonl").read_text().splitlines()
    (out / "results.jsonl").write_text("".join(x + "\n" for x in lines_before[:6]))
    with FaultServer(reply=WEAK) as moved:
        cmd = eval_cmd(ctx.toy, out, ["--resume", *ctx.kill_opts(), "-o", f"OPENAI_BASE_URL={moved.url}",
                                      "-o", "LLM_TIMEOUT_S=30", "-o", "LLM_RETRIES=4", "-o", f"OPENAI_API_KEY={KEY}"])
        proc = cli(cmd)
        served = len(moved.requests)
    check = compare_runs(ctx.reference, out)
    return {**process_outcome(proc, proc.stderr, 0), "outcome": f"resumed against port {moved.port}: {served} calls",
            "rows_lost": check["rows_lost"], "rows_doubled": check["rows_doubled"],
            "ok_expected": not check["differences_excluding_latency"] and served == 12, "detail": check}


@case("settings", "unprefixed LLM_BACKEND", "export LLM_BACKEND=openai (the README's name, without the prefix)")
def _unprefixed(ctx: Context) -> dict[str, Any]:
    proc = cli([sys.executable, "-m", "agentic_rag.cli", "settings"], env={"LLM_BACKEND": "openai"})
    res = one_line_error(proc, [], expect_rc=0)
    res.update(outcome=next((x for x in proc.stderr.splitlines() if "LLM_BACKEND" in x), "(no warning)")[:160],
               ok_expected="AGENTIC_RAG_LLM_BACKEND" in proc.stderr)
    return res


@case("settings", "numeric secret", "AGENTIC_RAG_OPENAI_API_KEY=31415926535")
def _numeric_secret(ctx: Context) -> dict[str, Any]:
    proc = cli([sys.executable, "-m", "agentic_rag.cli", "settings"], env={"AGENTIC_RAG_OPENAI_API_KEY": "31415926535"})
    res = one_line_error(proc, [], expect_rc=0)
    res.update(outcome="loads; shown as ***", ok_expected="31415926535" not in proc.stdout + proc.stderr)
    return res


@case("settings", "openai backend without a server", "-o LLM_BACKEND=openai, no URL and no key")
def _no_url(ctx: Context) -> dict[str, Any]:
    return one_line_error(cli(ask_cmd(ctx, "-o", "LLM_BACKEND=openai")), ["needs OPENAI_BASE_URL"])


@case("settings", "eval --out on a read-only place", "--out under a regular file, and under /sys")
def _read_only(ctx: Context) -> dict[str, Any]:
    blocker = ctx.work / "a-file"
    blocker.write_text("x")
    results = [one_line_error(cli(eval_cmd("example", place, ["--n", "1"])), ["cannot write the run folder"])
               for place in (blocker / "run", Path("/sys/agentic-rag-run"))]
    return {**results[0], "ok_expected": all(r["ok_expected"] for r in results),
            "crash": any(r["crash"] for r in results), "traceback": any(r["traceback"] for r in results)}


# --- settings that cannot be used, caught when settings load --------------------------------------


def settings_error(proc: subprocess.CompletedProcess, setting: str, must: str) -> dict[str, Any]:
    """Exit 2 and one line, `settings error: setting ...` naming ``setting`` and saying ``must``."""
    text = proc.stderr.strip()
    return {**process_outcome(proc, proc.stderr, 2), "outcome": text[:160] if text else "(nothing printed)",
            "ok_expected": len(text.splitlines()) == 1 and text.startswith("settings error: setting ")
                           and setting in text and must in text}


@case("settings_load", "an invalid OOD_DENY_PATTERNS", "ask with -o OOD_DENY_PATTERNS=[\"(unclosed\"]")
def _bad_pattern(ctx: Context) -> dict[str, Any]:
    return settings_error(cli(ask_cmd(ctx, *ctx.opts(), "-o", 'OOD_DENY_PATTERNS=["(unclosed"]')),
                          "OOD_DENY_PATTERNS", "not a valid regular expression")


@case("settings_load", "WALL_TIME_S=inf", "eval -o WALL_TIME_S=inf")
def _inf(ctx: Context) -> dict[str, Any]:
    out = ctx.folder("inf")
    res = settings_error(cli(eval_cmd(ctx.toy, out, ["--n", "1", *ctx.opts(), "-o", "WALL_TIME_S=inf"])),
                         "WALL_TIME_S", "finite number")
    res["ok_expected"] &= not (out / "config.json").exists()
    return res
