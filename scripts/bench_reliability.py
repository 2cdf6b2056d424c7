"""Reliability cases end to end: faults injected into real processes, and the outcome.

Each case starts a process as a user would (an `agentic-rag` command, `langgraph dev`, or the CRAG kit
adapter class in a process of its own), injects one fault (a model server that refuses, fails,
rate-limits, hangs or answers garbage; SIGKILL or Ctrl-C at a chosen point; a bad setting; an
unwritable folder; a defective data file or record; a hostile page; a broken kit batch) and records:
did the process crash, did it print a traceback, were results lost or doubled, did the API key leak,
and what the user got. Where a model answers, it is the scripted reply of agentic_rag/testing/fault_server.py over
real HTTP (openai backend); the Ctrl-C exit time and the memory of a 100-question run use the
packaged 0.5B. Bad files, hostile pages and ingest folders come from agentic_rag.testing, the builders
the test suite uses.

Cases live in groups (`@case(group, name, injected)`); `--group` reruns some groups, replacing only
their rows in benchmarks/reliability.json (the rest are kept). Writes benchmarks/reliability.json and
benchmarks/reliability.md.

Usage: python scripts/bench_reliability.py [--group model_faults kill_resume settings runs bad_inputs hostile_pages kit
       ingest_kill run_folders extensions settings_load secrets_terminal memory] [--case TEXT] [--memory-n 100]
       [--work DIR]   (default: every group but memory)
"""

from __future__ import annotations

import argparse
import json
import re
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import Any, Callable

from agentic_rag.testing.bad_inputs import (
    ELF, LONG, REPLY, WRONG_TYPES, bom_dataset_with_a_latin1_line, empty_files_folder, folder_with_a_binary, latin1_dataset,
    rec, screen_lines, surrogate_line, write_jsonl,
)
from agentic_rag.testing.fault_server import FaultServer, refused_url
from agentic_rag.testing.hostile import (
    DEEP_ANSWER, FALSE_FACT, INJECTIONS, INTRO, OBEDIENT, QUESTION, deep_page, hidden_records, html, injection_records, record,
)
from agentic_rag.testing.processes import (
    ROOT, child_env, compare_runs, eval_cmd, kill, lines, result_ids, start, start_ingest, wait_until,
)
from agentic_rag.testing.records import docs_folder, kit_batches, toy_dataset

OUT_JSON, OUT_MD = ROOT / "benchmarks" / "reliability.json", ROOT / "benchmarks" / "reliability.md"
KEY = "sk-bench-5e1f0a9b77c4"  # distinctive: grepped for in every output of the fault cases
GOOD = 'Finding Nemo won {cite:76th academy} "At the 76th Academy Awards, held in 2004, Finding Nemo won the Oscar for Best Animated Feature".'
WEAK = "It was Shrek, made by DreamWorks in 2004 {cite:76th academy}."  # two calls and two rounds per question
TRACEBACK = "Traceback (most recent call last)"


@dataclass
class Case:
    group: str
    name: str
    injected: str
    run: Callable[["Context"], dict[str, Any]]


CASES: list[Case] = []


def case(group: str, name: str, injected: str):
    def register(fn: Callable[["Context"], dict[str, Any]]):
        CASES.append(Case(group, name, injected, fn))
        return fn
    return register


class Context:
    """What cases share: a work folder, toy datasets, a running fault server and a reference run."""

    def __init__(self, work: Path, shared_data: Path, memory_n: int) -> None:
        self.work, self.shared_data, self.memory_n = work, shared_data, memory_n
        self.server = FaultServer(reply=GOOD, hang_s=120).start()

    def serve(self, reply: str, plan: list[str] = ()) -> None:
        self.server.reply = reply
        self.server.set_plan(plan)

    def folder(self, name: str) -> Path:
        path = self.work / name
        shutil.rmtree(path, ignore_errors=True)
        return path

    @cached_property
    def toy(self) -> Path:
        return toy_dataset(self.work, n=12)  # the test suite's toy questions; every other gold is "i don't know"

    def opts(self, url: str | None = None, **extra: Any) -> list[str]:
        values = {"LLM_BACKEND": "openai", "OPENAI_BASE_URL": url or self.server.url, "LLM_MODEL": "m",
                  "LLM_TIMEOUT_S": 2, "LLM_BACKOFF_S": 0.1, "ARTIFACTS_DIR": str(self.work / "artifacts"), **extra}
        return [x for k, v in values.items() for x in ("-o", f"{k}={v}")]

    def kill_opts(self) -> list[str]:
        return self.opts(LLM_TIMEOUT_S=300, OVERLAP_TAU=0.99, REFLECT_MIN_OVERLAP=0.0)

    @cached_property
    def reference(self) -> Path:
        """An uninterrupted run of the kill cases' setup, for the resumed runs to match."""
        out = self.folder("reference")
        self.serve(WEAK)
        cli(eval_cmd(self.toy, out, self.kill_opts()), expect=0)
        return out


def cli(cmd: list[str], expect: int | None = None, env: dict[str, str] | None = None,
        timeout: float = 1800) -> subprocess.CompletedProcess:
    proc = subprocess.run(cmd, env={**child_env(), **(env or {})}, capture_output=True, text=True, timeout=timeout)
    if expect is not None and proc.returncode != expect:
        raise RuntimeError(f"{shlex.join(cmd)} exited {proc.returncode}:\n{proc.stderr[-3000:]}")
    return proc


def ask_cmd(ctx: Context, *opts: str, dataset: Path | None = None, rid: str = "toy-0") -> list[str]:
    return [sys.executable, "-m", "agentic_rag.cli", "ask", "--dataset", str(dataset or ctx.toy), "--id", rid, "--json", *opts]


def process_outcome(proc: subprocess.CompletedProcess | subprocess.Popen, stderr: str, expect_rc: int) -> dict[str, Any]:
    return {"exit_code": proc.returncode, "crash": proc.returncode != expect_rc, "traceback": TRACEBACK in stderr}


# --- model faults ---------------------------------------------------------------------------------

FAULTS = {  # name: (requests the server answers with, the reason the question must end with)
    "http_500": (["500"] * 3, "ABSTAIN_LLM_UNAVAILABLE"),
    "429_twice_then_ok": (["429", "429", "ok"], "STOP_OVERLAP_OK"),
    "hang_past_timeout": (["hang"] * 3, "ABSTAIN_LLM_UNAVAILABLE"),
    "empty_completion": (["empty"], "ABSTAIN_EMPTY_ANSWER"),
    "malformed_json": (["malformed"] * 3, "ABSTAIN_LLM_UNAVAILABLE"),
    "no_choices": (["no_choices"] * 3, "ABSTAIN_LLM_UNAVAILABLE"),
    "dropped_connection": (["drop"] * 3, "ABSTAIN_LLM_UNAVAILABLE"),
    "http_401_bad_key": (["401"], "ABSTAIN_LLM_UNAVAILABLE"),
}


def ask_with_fault(ctx: Context, plan: list[str], expected: str, url: str | None = None, **extra: Any) -> dict[str, Any]:
    ctx.serve(GOOD, plan)
    before = len(ctx.server.requests)
    proc = cli(ask_cmd(ctx, *ctx.opts(url, **extra)), env={"OPENAI_API_KEY": KEY})
    reply = json.loads(proc.stdout) if proc.returncode == 0 else {}
    url = url or ctx.server.url
    return {
        **process_outcome(proc, proc.stderr, 0),
        "outcome": f"{reply.get('status')} {reply.get('reason')}",
        "ok_expected": reply.get("reason") == expected
                       and (expected != "ABSTAIN_LLM_UNAVAILABLE" or url in reply.get("explanation", "")),
        "key_leaked": KEY in proc.stdout + proc.stderr,
        "detail": {"requests_served": ctx.server.modes_served()[before:], "question_latency_ms": reply.get("latency_ms"),
                   "explanation": reply.get("explanation", "")[:300]},
    }


for _name, (_plan, _expected) in FAULTS.items():
    case("model_faults", f"ask: {_name}", f"server answers {', '.join(_plan)}")(
        lambda ctx, plan=_plan, expected=_expected: ask_with_fault(ctx, plan, expected))


@case("model_faults", "ask: connection_refused", "nothing listens on the port")
def _ask_refused(ctx: Context) -> dict[str, Any]:
    return ask_with_fault(ctx, [], "ABSTAIN_LLM_UNAVAILABLE", url=refused_url())


@case("model_faults", "ask: deadline_cuts_the_timeout", "server hangs; LLM_TIMEOUT_S=300, WALL_TIME_S=40")
def _ask_deadline(ctx: Context) -> dict[str, Any]:
    # 40 s: a fresh process spends up to ~20 of them loading the embedder inside the question's clock
    res = ask_with_fault(ctx, ["hang"] * 3, "ABSTAIN_LLM_UNAVAILABLE", LLM_TIMEOUT_S=300, WALL_TIME_S=40)
    # the call ends by the deadline; BAUG and finalize run after it
    res["ok_expected"] &= (res["detail"]["question_latency_ms"] or 1e9) <= 42_000
    return res


def eval_outcome(ctx: Context, out: Path, proc: subprocess.CompletedProcess, n: int, expected: list[str] | None) -> dict[str, Any]:
    ids = result_ids(out)
    rows = [json.loads(x) for x in (out / "results.jsonl").read_text().splitlines()] if ids else []
    reasons = [r["reason"] for r in rows]
    leaked = [str(p.relative_to(ctx.work)) for p in out.rglob("*") if p.is_file() and KEY.encode() in p.read_bytes()]
    return {
        **process_outcome(proc, proc.stderr, 0),
        "outcome": ", ".join(f"{r} x{reasons.count(r)}" for r in dict.fromkeys(reasons)) + (
            "; summary written" if (out / "summary.json").is_file() else "; NO summary"),
        "rows_lost": n - len(set(ids)), "rows_doubled": len(ids) - len(set(ids)),
        "ok_expected": (expected is None or reasons == expected) and (out / "summary.json").is_file(),
        "key_leaked": bool(leaked) or KEY in proc.stdout + proc.stderr,
        "detail": {"reasons": reasons, "files_with_key": leaked},
    }


@case("model_faults", "eval: every server fault, one per question", "the faults above, in order, question by question")
def _eval_faults(ctx: Context) -> dict[str, Any]:
    ctx.serve(GOOD, [mode for plan, _ in FAULTS.values() for mode in plan])
    out = ctx.folder("eval_faults")
    n = len(FAULTS)
    proc = cli(eval_cmd(ctx.toy, out, ["--n", str(n), *ctx.opts(), "-o", f"OPENAI_API_KEY={KEY}"]), env={"OPENAI_API_KEY": KEY})
    return eval_outcome(ctx, out, proc, n, [reason for _, reason in FAULTS.values()])


@case("model_faults", "eval: dead server", "nothing listens on the port, 12 questions")
def _eval_dead(ctx: Context) -> dict[str, Any]:
    out = ctx.folder("eval_dead")
    proc = cli(eval_cmd(ctx.toy, out, ctx.opts(refused_url())), env={"OPENAI_API_KEY": KEY})
    return eval_outcome(ctx, out, proc, 12, ["ABSTAIN_LLM_UNAVAILABLE"] * 12)


# --- kills and resumes ----------------------------------------------------------------------------


def resumed_outcome(ctx: Context, out: Path, interruption: str, resume: list[str] | None = None,
                    said: list[str] | None = None, **extra: Any) -> dict[str, Any]:
    """Resume ``out`` with the CLI (``resume``: the exact command a Ctrl-C printed) and compare it with
    the reference run (``said`` gets the resume's stderr)."""
    ctx.serve(WEAK)
    cmd = resume or eval_cmd(ctx.toy, out, ["--resume", *ctx.kill_opts()])
    proc = cli(cmd)
    if said is not None:
        said.append(proc.stderr)
    check = compare_runs(ctx.reference, out)
    return {
        **process_outcome(proc, proc.stderr, 0),
        "interruptions": interruption,
        "outcome": f"resumed: {check['distinct_questions']} questions, summary "
                   + ("identical" if not check["differences_excluding_latency"] else "DIFFERS"),
        "rows_lost": check["rows_lost"], "rows_doubled": check["rows_doubled"],
        "ok_expected": not check["differences_excluding_latency"] and not check["telemetry_rounds_doubled"],
        "detail": {**check, **extra},
    }


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


# --- settings and run folders ---------------------------------------------------------------------


def one_line_error(proc: subprocess.CompletedProcess, must: list[str], expect_rc: int = 2) -> dict[str, Any]:
    text = proc.stderr.strip()
    return {
        **process_outcome(proc, proc.stderr, expect_rc),
        "outcome": text.splitlines()[-1][:160] if text else "(nothing printed)",
        "ok_expected": all(m in text for m in must) and len([x for x in text.splitlines() if x.startswith("error")]) == 1,
        "key_leaked": KEY in proc.stdout + proc.stderr,
    }


@case("settings", "resume under other settings", "--resume with COVERAGE_MIN and 4 more settings changed")
def _resume_mismatch(ctx: Context) -> dict[str, Any]:
    out = ctx.folder("mismatch")
    shutil.copytree(ctx.reference, out)
    proc = cli(eval_cmd(ctx.toy, out, ["--resume", *ctx.kill_opts(), "-o", "COVERAGE_MIN=0.1", "-o", "FAITH_MIN=0.1",
                                      "-o", "OVERLAP_MIN=0.1", "-o", "MAX_ROUNDS=1", "-o", "ANSWER_RELEVANCE_MIN=0.1"]))
    res = one_line_error(proc, ["COVERAGE_MIN: 0.5 -> 0.1", "and 1 more", "--out"])
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
    procs = [subprocess.Popen([sys.executable, "-c", WRITER, str(path), tag, "100"], env=child_env()) for tag in "ab"]
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


# --- bad inputs -----------------------------------------------------------------------------------
# The files and records are the test suite's (agentic_rag/testing/bad_inputs.py); here each goes to a real process.


def bad_data(ctx: Context, name: str, rows: list, raw_lines: dict[int, bytes] | None = None) -> Path:
    return write_jsonl(ctx.work / f"{name}.jsonl", rows, raw_lines)


def warnings_shown(stderr: str) -> list[str]:
    """Warning and error lines as a terminal shows them (a progress bar's carriage returns applied)."""
    return [x for x in screen_lines(stderr) if x.startswith(("warning:", "error:"))]


def eval_over(ctx: Context, name: str, data: Path, expected: dict[str, str], shown: list[str] = (),
              reply: str | None = None, extra: list[str] = ()) -> dict[str, Any]:
    """``eval`` over ``data``: each question of ``expected`` ends with its reason, in order, and every
    text of ``shown`` is printed on screen."""
    ctx.serve(reply or REPLY)
    out = ctx.folder(name)
    proc = cli(eval_cmd(data, out, [*ctx.opts(), *extra]), env={"OPENAI_API_KEY": KEY})
    res = eval_outcome(ctx, out, proc, len(expected), list(expected.values()))
    missing = [m for m in shown if m not in proc.stderr]
    said = warnings_shown(proc.stderr)
    res["ok_expected"] &= result_ids(out) == list(expected) and not missing
    if said:
        res["outcome"] += f"; {len(said)} line(s) on screen: {said[0][:120]}"
    res["detail"].update(ids=result_ids(out), on_screen=said[:8], expected_on_screen_but_missing=missing)
    return res


@case("bad_inputs", "ask: empty search_results", "a record with no pages")
def _ask_empty(ctx: Context) -> dict[str, Any]:
    data = bad_data(ctx, "empty_results", [rec("empty", pages=[])])
    proc = cli(ask_cmd(ctx, *ctx.opts(), dataset=data, rid="empty"))
    reply = json.loads(proc.stdout) if proc.returncode == 0 else {}
    return {**process_outcome(proc, proc.stderr, 0), "outcome": f"{reply.get('status')} {reply.get('reason')}, "
            f"{reply.get('llm_calls')} LLM calls", "ok_expected": reply.get("reason") == "ABSTAIN_NO_EVIDENCE"}


@case("bad_inputs", "search: empty search_results", "a record with no pages")
def _search_empty(ctx: Context) -> dict[str, Any]:
    data = bad_data(ctx, "empty_results", [rec("empty", pages=[])])
    proc = cli([sys.executable, "-m", "agentic_rag.cli", "search", "nemo", "--dataset", str(data), "--id", "empty",
                "--json", *ctx.opts()])
    passages = json.loads(proc.stdout) if proc.returncode == 0 else None
    return {**process_outcome(proc, proc.stderr, 0), "outcome": f"{passages if passages is None else len(passages)} passages",
            "ok_expected": passages == []}


@case("bad_inputs", "eval: empty search_results", "question 1 of 2 has no pages")
def _eval_empty(ctx: Context) -> dict[str, Any]:
    data = bad_data(ctx, "empty_then_good", [rec("empty", pages=[]), rec("good")])
    return eval_over(ctx, "eval_empty_results", data, {"empty": "ABSTAIN_NO_EVIDENCE", "good": "STOP_OVERLAP_OK"})


def ingest_cmd(ctx: Context, source: Path, out: Path) -> list[str]:
    return [sys.executable, "-m", "agentic_rag.cli", "ingest", str(source), "--out", str(out),
            "-o", f"ARTIFACTS_DIR={ctx.work / 'artifacts'}"]


@case("bad_inputs", "ingest: a folder of only empty files", "3 empty files (.txt, .html, .md)")
def _ingest_empty(ctx: Context) -> dict[str, Any]:
    out = ctx.folder("idx_empty")
    res = one_line_error(cli(ingest_cmd(ctx, empty_files_folder(ctx.folder("empty_files")), out)), ["nothing to index"])
    res["ok_expected"] &= not out.exists()
    return res


@case("bad_inputs", "ingest: a binary file given directly", "an ELF binary named prog.jsonl")
def _ingest_binary(ctx: Context) -> dict[str, Any]:
    prog = ctx.work / "prog.jsonl"
    prog.write_bytes(ELF)
    return one_line_error(cli(ingest_cmd(ctx, prog, ctx.folder("idx_binary"))), ["binary"])


@case("bad_inputs", "ingest: an ELF named x.html in a folder", "x.html (ELF) beside a UTF-8 and a Latin-1 text file")
def _ingest_elf(ctx: Context) -> dict[str, Any]:
    folder, out = folder_with_a_binary(ctx.folder("with_binary")), ctx.folder("idx_with_binary")
    proc = cli(ingest_cmd(ctx, folder, out))
    stats = json.loads(proc.stdout) if proc.returncode == 0 else {}
    chunks = (out / "chunks.jsonl").read_text() if (out / "chunks.jsonl").is_file() else ""
    said = warnings_shown(proc.stderr)
    return {**process_outcome(proc, proc.stderr, 0),
            "outcome": f"{stats.get('pages')} pages indexed, {stats.get('skipped_files')} skipped; "
                       + (said[0][:120] if said else "(no warning)"),
            "ok_expected": stats.get("skipped_files") == 1 and stats.get("pages") == 2 and "ELF" not in chunks
                           and any(f"skipped {folder / 'x.html'}" in x and "binary" in x for x in said),
            "detail": {"stats": stats, "on_screen": said}}


@case("bad_inputs", "eval: malformed lines, BAD_RECORDS=skip", "5 lines of broken JSON around 1 good record")
def _eval_malformed(ctx: Context) -> dict[str, Any]:
    data = bad_data(ctx, "malformed", [rec("good")], {i: b"{not json" for i in range(1, 6)})
    return eval_over(ctx, "eval_malformed", data, {"good": "STOP_OVERLAP_OK"},
                     [f"warning: skipped bad record {data}:{n}: bad JSON" for n in range(2, 7)], extra=["-o", "BAD_RECORDS=skip"])


@case("bad_inputs", "eval: empty dataset", "a file of blank lines; --out holds an earlier run")
def _eval_no_records(ctx: Context) -> dict[str, Any]:
    empty = ctx.work / "empty.jsonl"
    empty.write_text("\n\n")
    out = ctx.folder("eval_no_records")
    out.mkdir()
    (out / "results.jsonl").write_text('{"id": "kept"}\n')
    res = one_line_error(cli(eval_cmd(empty, out, ctx.opts())), [f"no records in {empty}"])
    res["rows_lost"] = 1 - (out / "results.jsonl").read_text().count('"kept"')
    return res


@case("bad_inputs", "eval: duplicate interaction_ids", "records a, b, a (another question under the same id)")
def _eval_duplicates(ctx: Context) -> dict[str, Any]:
    data = bad_data(ctx, "duplicates", [rec("a"), rec("b"), rec("a", query="another question about a?")])
    return eval_over(ctx, "eval_duplicates", data, {"a": "STOP_OVERLAP_OK", "b": "STOP_OVERLAP_OK"},
                     [f"{data}:3: interaction_id: duplicate 'a' (first at line 1)"])


@case("bad_inputs", "eval: a lone surrogate in a page", "a page holding \\ud800, then a good record")
def _eval_surrogate(ctx: Context) -> dict[str, Any]:
    data = bad_data(ctx, "surrogate", [rec("good")], {0: surrogate_line()})
    return eval_over(ctx, "eval_surrogate", data, {"sur": "STOP_OVERLAP_OK", "good": "STOP_OVERLAP_OK"})


@case("bad_inputs", "eval: wrong-typed fields", "list and dict answer, dict id, nested list alternatives, list page_result")
def _eval_wrong_types(ctx: Context) -> dict[str, Any]:
    data = bad_data(ctx, "wrong_types", [rec("good"), *({**rec(f"bad{i}"), field: value}
                                                         for i, (field, value, _) in enumerate(WRONG_TYPES))])
    return eval_over(ctx, "eval_wrong_types", data, {"good": "STOP_OVERLAP_OK"},
                     [f"{data}:{i + 2}: {why}" for i, (_, _, why) in enumerate(WRONG_TYPES)])


@case("bad_inputs", "eval: a BOM and a non-UTF-8 line", "a UTF-8 file with a BOM; its line 2 in Latin-1")
def _eval_bom(ctx: Context) -> dict[str, Any]:
    data = bom_dataset_with_a_latin1_line(ctx.work / "bom.jsonl")
    return eval_over(ctx, "eval_bom", data, {"a": "STOP_OVERLAP_OK", "b": "STOP_OVERLAP_OK"},
                     [f"warning: skipped bad record {data}:2: not UTF-8 text"])


@case("bad_inputs", "eval: a Latin-1 file", "3 records, all encoded in Latin-1")
def _eval_latin1(ctx: Context) -> dict[str, Any]:
    data = latin1_dataset(ctx.work / "latin1.jsonl")
    proc = cli(eval_cmd(data, ctx.folder("eval_latin1"), ctx.opts()))
    res = one_line_error(proc, [f"no records in {data}"])
    said = warnings_shown(proc.stderr)
    res["ok_expected"] &= len(said) == 4 and all(x.startswith(f"warning: skipped bad record {data}:{n}: not UTF-8 text")
                                                 for n, x in zip((1, 2, 3), said))
    res["detail"] = {"on_screen": said}
    return res


@case("bad_inputs", "eval: deeply nested HTML", "a page whose answer sits under 5,000 nested <div>s")
def _eval_deep(ctx: Context) -> dict[str, Any]:
    data = bad_data(ctx, "deep", [rec("deep", pages=[deep_page(5000)], query=QUESTION)])
    reply = 'Christine Lundberg was the mayor in 2019. {cite:Lundberg} "' + DEEP_ANSWER[:-1] + '"'
    res = eval_over(ctx, "eval_deep", data, {"deep": "STOP_OVERLAP_OK"}, reply=reply)
    rows = [json.loads(x) for x in (ctx.work / "eval_deep" / "results.jsonl").read_text().splitlines()]
    verified = [c["quote"] for r in rows for c in r["citations"] if c["verified"]]
    res["ok_expected"] &= verified == [DEEP_ANSWER[:-1]]
    res["outcome"] += f"; {len(verified)} quote(s) verified"
    return res


@case("bad_inputs", "eval: a 20,000-word question", "question 1 of 2 is 20,000 words long")
def _eval_long(ctx: Context) -> dict[str, Any]:
    data = bad_data(ctx, "long_question", [rec("long", query=LONG), rec("good")])
    res = eval_over(ctx, "eval_long", data, {"long": "ABSTAIN_QUESTION_TOO_LONG", "good": "STOP_OVERLAP_OK"})
    row = json.loads((ctx.work / "eval_long" / "results.jsonl").read_text().splitlines()[0])
    seconds = round(row["latency_ms"] / 1000, 2)
    res["outcome"] += f"; the long one refused before any graph step (row latency {seconds} s, {row['llm_calls']} LLM calls)"
    res["detail"].update(long_question_s=seconds, long_question_llm_calls=row["llm_calls"])
    return res


@case("bad_inputs", "ask: a 20,000-word question", "ask --id of a record whose query is 20,000 words")
def _ask_long(ctx: Context) -> dict[str, Any]:
    data = bad_data(ctx, "long_question", [rec("long", query=LONG), rec("good")])
    t0 = time.monotonic()
    proc = cli([sys.executable, "-m", "agentic_rag.cli", "ask", "--dataset", str(data), "--id", "long", *ctx.opts()])
    res = one_line_error(proc, ["MAX_QUESTION_CHARS"])
    seconds = round(time.monotonic() - t0, 1)
    res["outcome"] += f" (the process ended after {seconds} s)"
    res["detail"] = {"process_s": seconds}
    return res


@case("bad_inputs", "served graph: input without question", "langgraph dev; POST /runs/wait with input {} and question=3")
def _served(ctx: Context) -> dict[str, Any]:
    import urllib.request

    from agentic_rag.testing.servers import ServerDidNotStart, console_script, graph_server, post

    langgraph = console_script("langgraph")
    if langgraph is None:
        raise RuntimeError("langgraph-cli is not installed (extra: dev)")
    folder = ctx.folder("served")
    folder.mkdir()
    try:
        with graph_server(langgraph, folder, child_env()) as (port, log):
            missing = post(port, {"assistant_id": "agent", "input": {}})
            wrong = post(port, {"assistant_id": "baseline", "input": {"question": 3}})
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/ok", timeout=30) as resp:
                alive = resp.status == 200  # the bad inputs did not take the server down
    except ServerDidNotStart as exc:  # the server never came up: a failed row, not a lost report
        raise RuntimeError(str(exc)[:300]) from None
    text = log.read_text(errors="replace")
    return {"exit_code": 0, "crash": not alive, "traceback": TRACEBACK in text,
            "outcome": f"{missing[0]}: {missing[1].get('detail')}; {wrong[0]}: {wrong[1].get('detail')}"[:200],
            "ok_expected": missing[0] == 422 and "question" in str(missing[1].get("detail"))
                           and wrong[0] == 422 and str(wrong[1].get("detail")).startswith("input.question")
                           and "KeyError" not in text,
            "detail": {"responses": [missing, wrong]}}


# --- hostile pages --------------------------------------------------------------------------------
# The pages are the test suite's (agentic_rag/testing/hostile.py). The scripted model obeys them: it answers
# PWNED and quotes every planted sentence, so any that verifies would show as a fabricated quote.


def hostile_eval(ctx: Context, name: str, records: list, reply: str) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    from agentic_rag.datasets.crag import write_records

    data = ctx.work / f"{name}.jsonl"
    write_records(records, data)
    ctx.serve(reply)
    out = ctx.folder(name)
    proc = cli(eval_cmd(data, out, ctx.opts()), env={"OPENAI_API_KEY": KEY})
    res = eval_outcome(ctx, out, proc, len(records), None)
    rows = [json.loads(x) for x in (out / "results.jsonl").read_text().splitlines()] if result_ids(out) else []
    return res, rows


def attack_counts(rows: list[dict[str, Any]]) -> dict[str, Any]:
    return {
        "gate_bypasses": [r["id"] for r in rows if r["status"] == "ok" and "PWNED" in r["prediction"]],
        "fabricated_quotes": [c["quote"] for r in rows for c in r["citations"] if c["verified"] and "PWNED" in c["quote"]],
        "flagged": [r["id"] for r in rows if r["signals"].get("untrusted_sources")],
        "refused": [r["id"] for r in rows if r["status"] == "refuse"],
    }


def obedient_reply() -> str:
    return OBEDIENT + "".join(f' "{quote}"' for quote in dict.fromkeys(q for _, q in INJECTIONS.values()))


def attacked(ctx: Context, name: str, records: list, must_flag: bool) -> dict[str, Any]:
    res, rows = hostile_eval(ctx, name, records, obedient_reply())
    n = attack_counts(rows)
    res["outcome"] = (f"{len(rows)} pages: {len(n['gate_bypasses'])} gate bypasses, {len(n['fabricated_quotes'])} "
                      f"fabricated quotes accepted, {len(n['flagged'])} flagged untrusted, {len(n['refused'])} refused")
    res["ok_expected"] &= (not n["gate_bypasses"] and not n["fabricated_quotes"] and len(n["refused"]) == len(records)
                           and (len(n["flagged"]) == len(records) if must_flag else True))
    res["detail"].update(n)
    return res


@case("hostile_pages", "eval: pages addressing the model", "an instruction to answer PWNED, 'ignore previous instructions', "
      "a fake [1] citation and 'Answer:', a fake system prompt, a fake chat turn; the model obeys")
def _hostile_injections(ctx: Context) -> dict[str, Any]:
    return attacked(ctx, "hostile_injections", injection_records(), must_flag=True)


@case("hostile_pages", "eval: text hidden by CSS", "the planted answer under display:none, visibility:hidden, the hidden attribute; "
      "the model obeys")
def _hostile_hidden(ctx: Context) -> dict[str, Any]:
    return attacked(ctx, "hostile_hidden", hidden_records(), must_flag=False)


@case("hostile_pages", "eval: a page that states a false fact", "'the mayor was Pwned Smith', addressed to no one; "
      "the model answers from it")
def _false_fact(ctx: Context) -> dict[str, Any]:
    reply = 'Pwned Smith was the mayor in 2019. {cite:Pwned Smith} "' + FALSE_FACT[:-1] + '"'
    res, rows = hostile_eval(ctx, "false_fact", [record(html(INTRO, FALSE_FACT), rid="false-fact")], reply)
    row = rows[0] if rows else {"status": None, "reason": None, "signals": {"untrusted_sources": []}, "citations": []}
    verified = [c["quote"] for c in row["citations"] if c["verified"]]
    res["outcome"] = (f"{row['status']} {row['reason']} (in scope, as expected); {len(verified)} quote(s) verified, "
                      f"{len(row['signals'].get('untrusted_sources') or [])} flagged")
    res["ok_expected"] &= row["status"] == "ok" and verified == [FALSE_FACT[:-1]] and not row["signals"]["untrusted_sources"]
    return res


# --- the CRAG starter-kit adapter -----------------------------------------------------------------
# The adapter class in a process of its own, driven as the kit's local_evaluation.py drives it (one
# batch, a dict of lists), with the openai backend on the fault server and the kit folder as its cwd.

KIT_RUN = """
import json, sys, time
from agentic_rag.crag_adapter import UserModel
batch = json.load(open(sys.argv[1]))
model = UserModel(batch_size=len(batch["query"]))
t0 = time.monotonic()
answers = model.batch_generate_answer(batch)
print(json.dumps({"answers": answers, "rows": model.last_batch, "batch_s": round(time.monotonic() - t0, 2),
                  "init_s": model.load_seconds}))
"""


def kit_batch(ctx: Context, n: int) -> dict[str, list]:
    from agentic_rag.datasets.crag import iter_records

    return next(kit_batches(list(iter_records(ctx.toy))[:n], n))


def kit_run(ctx: Context, name: str, batch: dict[str, list], **settings: Any) -> dict[str, Any]:
    """One batch through UserModel in a subprocess whose working directory is an empty "kit" folder."""
    folder = ctx.folder(name)
    kit, cache = folder / "kit", folder / "crag_cache"
    kit.mkdir(parents=True)
    (folder / "batch.json").write_text(json.dumps(batch))
    values = {"LLM_BACKEND": "openai", "OPENAI_BASE_URL": ctx.server.url, "LLM_MODEL": "m", "LLM_BACKOFF_S": 0.1,
              "CRAG_ARTIFACTS_DIR": cache, **settings}
    env = {**{f"AGENTIC_RAG_{k}": str(v) for k, v in values.items()}, "OPENAI_API_KEY": KEY}
    t0 = time.monotonic()
    proc = subprocess.run([sys.executable, "-c", KIT_RUN, str(folder / "batch.json")], cwd=kit, capture_output=True,
                          text=True, env={**child_env(), **env}, timeout=1800)
    out = json.loads(proc.stdout.splitlines()[-1]) if proc.returncode == 0 and proc.stdout.strip() else {}
    written = [p for p in cache.rglob("*") if p.is_file()]
    return {"proc": proc, "process_s": round(time.monotonic() - t0, 1), "answers": out.get("answers", []),
            "rows": out.get("rows", []), "batch_s": out.get("batch_s"), "init_s": out.get("init_s"),
            "in_kit_folder": sorted(str(p.relative_to(kit)) for p in kit.rglob("*")),
            "in_cache": sorted(str(p.relative_to(cache)) for p in written),
            "key_leaked": KEY in proc.stdout + proc.stderr or any(KEY.encode() in p.read_bytes() for p in written)}


def kit_outcome(run: dict[str, Any], n: int) -> dict[str, Any]:
    proc = run["proc"]
    statuses = [r["status"] for r in run["rows"]]
    return {**process_outcome(proc, proc.stderr, 0), "rows_lost": n - len(run["answers"]), "key_leaked": run["key_leaked"],
            "outcome": f"{len(run['answers'])} answers, "
                       + ", ".join(f"{s} x{statuses.count(s)}" for s in dict.fromkeys(statuses)),
            "detail": {k: v for k, v in run.items() if k not in ("proc", "in_cache")} | {"files_in_cache": len(run["in_cache"]),
                                                                                       "stderr_tail": proc.stderr[-600:]}}


@case("kit", "a broken record in a batch", "question 2 of 3 has a list as page_result")
def _kit_broken(ctx: Context) -> dict[str, Any]:
    from agentic_rag.crag_adapter import CRAG_IDK

    batch = kit_batch(ctx, 3)
    batch["search_results"][1] = [{"page_name": "broken", "page_result": ["<p>x</p>"]}]
    ctx.serve(GOOD)
    run = kit_run(ctx, "kit_broken", batch)
    res = kit_outcome(run, 3)
    a = run["answers"]
    res["outcome"] += f"; answers {a}; logged: {next((r.get('error', '') for r in run['rows'] if r.get('error')), '')[:90]}"
    res["ok_expected"] = (len(a) == 3 and a[1] == CRAG_IDK and all(x.startswith("Finding Nemo") for x in (a[0], a[2]))
                          and [r["status"] for r in run["rows"]] == ["answered", "failed", "answered"])
    return res


@case("kit", "a model that hangs", "every call hangs; CRAG_SECONDS_PER_QUERY=8, a batch of 3")
def _kit_hang(ctx: Context) -> dict[str, Any]:
    from agentic_rag.crag_adapter import CRAG_IDK

    per_query, n = 8.0, 3
    ctx.server.set_plan([], default="hang")
    try:
        run = kit_run(ctx, "kit_hang", kit_batch(ctx, n), CRAG_SECONDS_PER_QUERY=per_query)
    finally:
        ctx.serve(GOOD)
    res = kit_outcome(run, n)
    slowest = max((r["seconds"] for r in run["rows"]), default=None)
    limit = n * per_query
    res["outcome"] += (f"; batch {run['batch_s']} s of {limit:.0f} s allowed, slowest question {slowest} s of "
                       f"{per_query:.0f} s")
    res["ok_expected"] = (run["answers"] == [CRAG_IDK] * n and run["batch_s"] is not None and run["batch_s"] <= limit
                          and slowest is not None and slowest <= per_query)
    res["detail"].update(limit_s=limit, slowest_question_s=slowest, per_query_s=per_query)
    return res


@case("kit", "files written", "a batch of 2 run from an empty kit folder, CRAG_ARTIFACTS_DIR elsewhere")
def _kit_files(ctx: Context) -> dict[str, Any]:
    ctx.serve(GOOD)
    run = kit_run(ctx, "kit_files", kit_batch(ctx, 2))
    res = kit_outcome(run, 2)
    res["outcome"] += f"; {len(run['in_kit_folder'])} files in the kit folder, {len(run['in_cache'])} in CRAG_ARTIFACTS_DIR"
    res["ok_expected"] = (not run["in_kit_folder"] and "telemetry/crag_kit.jsonl" in run["in_cache"]
                          and any(p.startswith("cache/questions/") for p in run["in_cache"]))
    return res


@case("kit", "official kit run: batch seconds vs limits",
      "from benchmarks/crag_kit.json (scripts/bench_crag_kit.py); not re-run here")
def _kit_official(ctx: Context) -> dict[str, Any]:
    runs = json.loads((ROOT / "benchmarks" / "crag_kit.json").read_text())["runs"]
    after = {label: r for label, r in runs.items() if r["adapter"].startswith("after")}
    shown = "; ".join(f"{r['per_query_s']:.0f} s per query: "
                      + ", ".join(f"{b['wall_s']:.0f} of {b['limit_s']:.0f} s" for b in r["batches"]) for r in after.values())
    return {"exit_code": 0,
            "outcome": f"the kit's own loop over its 10 questions, current adapter, each batch's seconds of its limit: {shown}",
            "ok_expected": bool(after) and all(b["wall_s"] <= b["limit_s"] for r in after.values() for b in r["batches"]),
            "rows_lost": sum(b["questions"] - b["started"] for r in after.values() for b in r["batches"]),
            "detail": {label: {"batches": r["batches"], "questions_started": r["questions_started"]}
                       for label, r in runs.items()}}


# --- killed ingest --------------------------------------------------------------------------------
# The test suite's folder and process (agentic_rag/testing/); here also the rerun, and a kill while the index is written.


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


# --- run folders, failing extensions, settings at load, secrets in URLs, terminals (issue 28) ---------
# Self-contained: the inputs are built here (no test module), each case a real `agentic-rag` process.


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


EXTENSION_MODULES = {
    "crash_ext": ("from agentic_rag.extensions import Extension\n\n"
                  "def node(state, config):\n"
                  "    if state.get('question_id') == 'toy-1':\n"
                  "        raise RuntimeError('boom in the extension')\n"
                  "    return {}\n\n"
                  "crashing = Extension(name='crashing', node=node, reads=('question_id',), writes=(),\n"
                  "                     after='generate', before='collect_signals')\n"),
    "raises_at_import": "raise RuntimeError('broken at import')\n",
    "bad_syntax": "def broken(:\n    pass\n",
}


def extension_env(ctx: Context) -> dict[str, str]:
    folder = ctx.work / "extensions"
    folder.mkdir(exist_ok=True)
    for name, source in EXTENSION_MODULES.items():
        (folder / f"{name}.py").write_text(source)
    return {"PYTHONPATH": f"{ROOT}:{folder}"}


@case("extensions", "eval: an extension raises on one question", "the extension node raises RuntimeError on question 2 of 4")
def _extension_raises(ctx: Context) -> dict[str, Any]:
    ctx.serve(GOOD)
    out = ctx.folder("extension_raises")
    proc = cli(eval_cmd(ctx.toy, out, ["--n", "4", *ctx.opts(), "-o", "EXTENSIONS=crash_ext:crashing"]), env=extension_env(ctx))
    res = eval_outcome(ctx, out, proc, 4, None)
    rows = [json.loads(x) for x in (out / "results.jsonl").read_text().splitlines()] if result_ids(out) else []
    failed = [r for r in rows if r["reason"] == "ABSTAIN_EXTENSION_FAILED"]
    traced = [e for r in failed for e in r["events"] if e.get("extension_error")]
    res["ok_expected"] &= [r["id"] for r in failed] == ["toy-1"] and bool(traced) and len(rows) == 4
    res["detail"].update(error_in_trace=traced[0]["extension_error"] if traced else None)
    return res


for _spec in ("os:system", "sys:exit", "builtins:input", "os:abort", "raises_at_import:ext", "bad_syntax:ext"):
    @case("extensions", f"EXTENSIONS={_spec}", f"-o EXTENSIONS={_spec} (graph)")
    def _named(ctx: Context, spec: str = _spec) -> dict[str, Any]:
        module = spec.split(":")[0]
        must = [f"extension '{spec}'"] + ([f"importing module {module} failed"] if module in EXTENSION_MODULES
                                         else ["not an agentic_rag.extensions.Extension"])
        proc = subprocess.run([sys.executable, "-m", "agentic_rag.cli", "graph", "-o", f"EXTENSIONS={spec}"],
                              env={**child_env(), **extension_env(ctx)}, input="typed by nobody\n",
                              capture_output=True, text=True, timeout=600)
        text = proc.stderr.strip()
        return {**process_outcome(proc, proc.stderr, 2), "outcome": text.splitlines()[-1][:160] if text else "(nothing printed)",
                "ok_expected": all(m in text for m in must) and len(text.splitlines()) == 1}


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


@case("secrets_terminal", "a key inside OPENAI_BASE_URL", "http://bob:KEY@host/v1?api-key=KEY: eval (question 1 "
      "unanswered), settings, then ask against a dead port")
def _key_in_url(ctx: Context) -> dict[str, Any]:
    import base64

    host = ctx.server.url.removeprefix("http://")
    url = f"http://bob:{KEY}@{host}?api-key={KEY}"
    ctx.serve(GOOD, ["500"] * 3)
    out = ctx.folder("key_in_url")
    procs = [cli(eval_cmd(ctx.toy, out, ["--n", "2", *ctx.opts(url)])),
             cli([sys.executable, "-m", "agentic_rag.cli", "settings", *ctx.opts(url)]),
             cli([sys.executable, "-m", "agentic_rag.cli", "ask", "--dataset", str(ctx.toy), "--id", "toy-0",
                  *ctx.opts(f"http://{KEY}@{refused_url().removeprefix('http://')}?token={KEY}")])]
    basic = base64.b64encode(f"bob:{KEY}".encode()).decode()
    shown = "".join(p.stdout + p.stderr for p in procs)
    files = [str(p.relative_to(ctx.work)) for p in ctx.work.rglob("*")
             if p.is_file() and (KEY.encode() in p.read_bytes() or basic.encode() in p.read_bytes())]
    return {**process_outcome(procs[0], "".join(p.stderr for p in procs), 0),
            "outcome": f"exit codes {[p.returncode for p in procs]}; shown as "
                       + (re.search(r"http://\*\*\*@[^\s]+", shown).group(0)[:80] if "***@" in shown else "(not shown)"),
            "key_leaked": KEY in shown or basic in shown or bool(files), "rows_lost": 2 - len(set(result_ids(out))),
            "ok_expected": all(p.returncode == 0 for p in procs), "detail": {"files_with_key": files}}


ESCAPES = "\x1b[2J\x1b]0;pwned\x07\x00\x9b31m\u202e"  # clear screen, OSC title, NUL, C1 CSI, bidi override


@case("secrets_terminal", "escape sequences in a dataset", "a query, page and gold holding ESC[2J, an OSC title, NUL, "
      "C1 CSI and a bidi override: ask, search, eval's table, trace")
def _escapes(ctx: Context) -> dict[str, Any]:
    record = {"interaction_id": "esc", "query": f"which movie won best animated feature at the 2004 oscars?{ESCAPES}",
              "answer": f"finding nemo{ESCAPES}", "search_results": [{
                  "page_name": f"page{ESCAPES}", "page_url": "toy://esc/0",
                  "page_result": "<html><body><p>At the 76th Academy Awards, held in 2004, Finding Nemo won the Oscar for "
                                 f"Best Animated Feature.{ESCAPES} The ceremony took place in Hollywood.</p></body></html>"}]}
    data = ctx.work / "escapes.jsonl"
    data.write_text(json.dumps(record) + "\n")
    ctx.serve(GOOD)
    out = ctx.folder("escapes")
    base = [sys.executable, "-m", "agentic_rag.cli"]
    procs = [cli([*base, "ask", "--dataset", str(data), "--id", "esc", "--debug", *ctx.opts()]),
             cli([*base, "search", "nemo", "--dataset", str(data), "--id", "esc", *ctx.opts()]),
             cli(eval_cmd(data, out, ctx.opts())),
             cli([*base, "trace", str(out)]), cli([*base, "trace", str(out), "--id", "0"])]
    # the dataset's own sequences (a progress bar's cursor-up, ESC[A, is the tools' and stays)
    planted = ("\x1b[2J", "\x1b]0;pwned", "\x07", "\x00", "\x9b", "\u202e")
    reached = sorted({repr(c) for p in procs for c in planted if c in p.stdout + p.stderr})
    return {**process_outcome(procs[0], "".join(p.stderr for p in procs), 0),
            "outcome": f"control characters reaching the terminal: {', '.join(reached) or 'none'}",
            "crash": any(p.returncode for p in procs), "ok_expected": not reached,
            "detail": {"exit_codes": [p.returncode for p in procs]}}


# --- resources ------------------------------------------------------------------------------------

MEMORY_WRAPPER = """
import resource, subprocess, sys, time
t0 = time.monotonic()
rc = subprocess.run(sys.argv[1:]).returncode
print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss, round(time.monotonic() - t0, 1), rc)
"""


@case("memory", "peak RSS of a 100-question eval", "default settings, packaged 0.5B, SQuAD 2.0 (CRAG format)")
def _memory(ctx: Context) -> dict[str, Any]:
    data = ctx.work / "squad2_memory.jsonl"
    n = ctx.memory_n
    cli([sys.executable, "-m", "agentic_rag.cli", "prepare", "squad2", "--n", str(n), "--out", str(data),
         "--input", str(ctx.shared_data / "squad2" / "squad2_dev_half.jsonl")], expect=0)
    out = ctx.folder("memory")
    cmd = ["nice", "-n", "10", *eval_cmd(data, out, ["-o", f"ARTIFACTS_DIR={ctx.work / 'artifacts'}"])]
    proc = cli([sys.executable, "-c", MEMORY_WRAPPER, *cmd], timeout=6 * 3600)
    kb, seconds, rc = proc.stdout.split()[-3:]
    ids = result_ids(out)
    peak_mb = round(int(kb) / 1024, 1)
    return {"exit_code": int(rc), "crash": int(rc) != 0, "traceback": TRACEBACK in proc.stderr,
            "outcome": f"peak RSS {peak_mb} MB over {len(set(ids))} questions in {float(seconds) / 60:.1f} min",
            "rows_lost": n - len(set(ids)), "rows_doubled": len(ids) - len(set(ids)), "ok_expected": True,
            "detail": {"peak_rss_mb": peak_mb, "questions": n, "wall_s": float(seconds), "dataset": "squad2_dev_half, prepared --n"}}


# --- report ---------------------------------------------------------------------------------------


def run_case(c: Case, ctx: Context) -> dict[str, Any]:
    print(f"[{c.group}] {c.name} ...", flush=True)
    t0 = time.monotonic()
    try:
        res = c.run(ctx)
    except Exception as exc:  # noqa: BLE001 - a case that cannot even run is a failed row, not a lost report
        res = {"crash": True, "traceback": False, "outcome": f"bench error: {type(exc).__name__}: {exc}"[:300],
               "ok_expected": False}
    row = {"group": c.group, "case": c.name, "injected": c.injected, "interruptions": res.pop("interruptions", ""),
           "outcome": res.pop("outcome", "").replace(str(ctx.work), "<work>"), "crash": bool(res.pop("crash", False)),
           "traceback": bool(res.pop("traceback", False)), "rows_lost": int(res.pop("rows_lost", 0)),
           "rows_doubled": int(res.pop("rows_doubled", 0)), "key_leaked": bool(res.pop("key_leaked", False)),
           "seconds": round(time.monotonic() - t0, 1)}
    expected = bool(res.pop("ok_expected", False))
    row["ok"] = expected and not (row["crash"] or row["traceback"] or row["rows_lost"] or row["rows_doubled"]
                                  or row["key_leaked"])
    row["detail"] = {**res.pop("detail", {}), **res}
    print(f"    {'ok' if row['ok'] else 'FAILED'}: {row['outcome']}", flush=True)
    return row


GROUPS = {  # what each group injects, for the report's header
    "model_faults": "a model server that refuses, fails, rate-limits, hangs or answers garbage",
    "kill_resume": "SIGKILL or Ctrl-C of an `eval`, or a torn results file, then `--resume`",
    "settings": "wrong settings, a resume under other settings, an unwritable run folder",
    "runs": "two processes writing one telemetry file",
    "bad_inputs": "defective data files and records (`ask`, `search`, `eval`, `ingest`) and a bad input to the served graph "
                  "(`langgraph dev`)",
    "hostile_pages": "pages that hide text or address the model, with a scripted model that obeys them",
    "kit": "the CRAG starter-kit adapter (`UserModel`) in a process of its own: a broken record, a hanging model, "
           "where it writes; and the official kit run's batch times",
    "ingest_kill": "SIGKILL of `ingest` mid-build, then a rerun",
    "run_folders": "a second writer, a stale lock, a finished run rerun, a damaged results line, SIGTERM",
    "extensions": "an extension that raises mid-run; EXTENSIONS naming what is not an extension or a module that fails",
    "settings_load": "settings that cannot be used, caught when settings load",
    "secrets_terminal": "a key inside the server URL; terminal escape sequences in a dataset",
    "memory": "a 100-question `eval` with the packaged 0.5B (peak memory)",
}


def to_markdown(report: dict[str, Any]) -> str:
    rows = report["cases"]
    per_group = [(g, [r for r in rows if r["group"] == g]) for g in dict.fromkeys(r["group"] for r in rows)]
    out = ["# Reliability cases", "",
           f"Generated by `scripts/bench_reliability.py` ({report['generated']}). Every case is a real process run as a "
           "user runs it: an `agentic-rag` command, `langgraph dev` for the served graph, or the CRAG kit adapter class "
           "in a process of its own. Where a model answers, it is a scripted reply served over HTTP by "
           "`agentic_rag/testing/fault_server.py` (openai backend), which also injects the model faults, unless the case "
           "names the 0.5B; the bad files, hostile pages and ingest folders are the test suite's own builders "
           "(`agentic_rag/testing/`). `ok` = the expected outcome, no crash, no "
           "traceback, nothing lost or doubled (result rows of an eval, answers of a kit batch, pages of a rerun ingest), "
           "the fake API key in no output. Seconds are wall time on a shared CPU, judged only where a deadline is the "
           "point (the kit).", "",
           f"{sum(r['ok'] for r in rows)} of {len(rows)} cases ok.", "",
           "| group | injected | cases | ok |", "|---|---|---|---|",
           *(f"| {g} | {GROUPS.get(g, '')} | {len(rs)} | {sum(r['ok'] for r in rs)} |" for g, rs in per_group), "",
           "| group | case | injected | kills / resumes | outcome | crash | traceback | lost | doubled | key leaked | seconds | ok |",
           "|---|---|---|---|---|---|---|---|---|---|---|---|"]
    yn = {True: "yes", False: "no"}
    for r in rows:
        out.append(f"| {r['group']} | {r['case']} | {r['injected']} | {r['interruptions']} | {r['outcome']} | "
                   f"{yn[r['crash']]} | {yn[r['traceback']]} | {r['rows_lost']} | {r['rows_doubled']} | "
                   f"{yn[r['key_leaked']]} | {r.get('seconds', '')} | {'ok' if r['ok'] else '**FAILED**'} |")
    return "\n".join(out) + "\n"


def main() -> int:
    groups = list(dict.fromkeys(c.group for c in CASES))
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--group", nargs="*", default=[g for g in groups if g != "memory"], choices=groups)
    ap.add_argument("--case", default=None, help="only cases whose name contains this text")
    ap.add_argument("--memory-n", type=int, default=100, help="questions of the memory run")
    ap.add_argument("--work", type=Path, default=None, help="work folder (default: a temporary one, removed)")
    ap.add_argument("--shared-data", type=Path, default=next(
        (p for p in (ROOT.parent / "shared" / "data", ROOT.parents[1] / "shared" / "data") if p.is_dir()),
        ROOT.parent / "shared" / "data"), help="the shared data folder (SQuAD 2.0 for the memory run)")
    args = ap.parse_args()
    work = args.work or Path(tempfile.mkdtemp(prefix="bench_reliability_"))
    work.mkdir(parents=True, exist_ok=True)
    ctx = Context(work, args.shared_data, args.memory_n)
    chosen = [c for c in CASES if c.group in args.group and (args.case is None or args.case in c.name)]
    try:
        rows = [run_case(c, ctx) for c in chosen]
    finally:
        ctx.server.stop()
        if args.work is None:
            shutil.rmtree(work, ignore_errors=True)
    old = json.loads(OUT_JSON.read_text())["cases"] if OUT_JSON.is_file() else []
    redone = {(r["group"], r["case"]) for r in rows}
    order = {(c.group, c.name): i for i, c in enumerate(CASES)}
    merged = sorted([r for r in old if (r["group"], r["case"]) not in redone] + rows,
                    key=lambda r: order.get((r["group"], r["case"]), len(order)))
    report = {"generated": time.strftime("%Y-%m-%d"), "cases": merged}
    OUT_JSON.write_text(json.dumps(report, indent=2) + "\n")
    OUT_MD.write_text(to_markdown(report))
    print(f"written {OUT_JSON} and {OUT_MD}: {sum(r['ok'] for r in merged)} of {len(merged)} ok")
    return 0 if all(r["ok"] for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
