"""Reliability cases end to end: faults injected into real `agentic-rag` processes, and the outcome.

Each case starts the CLI as a user would (`ask`, `eval`, `settings`), injects one fault (a model
server that refuses, fails, rate-limits, hangs or answers garbage; SIGKILL or Ctrl-C at a chosen
point; a bad setting; an unwritable folder) and records: did the process crash, did it print a
traceback, were result rows lost or doubled, and what the user got. The model is the scripted reply
of tests/fault_server.py over real HTTP (openai backend); the Ctrl-C exit time and the memory of a
100-question run use the packaged 0.5B.

Cases live in groups (`@case(group, name, injected)`); other groups (bad inputs, hostile pages, the
CRAG kit adapter) are appended by adding functions, and `--group` reruns one group, replacing only its
rows in benchmarks/reliability.json. Writes benchmarks/reliability.json and benchmarks/reliability.md.

Usage: python scripts/bench_reliability.py [--group model_faults kill_resume settings runs memory] [--memory-n 100]
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

from bench_resume import ROOT, child_env, compare_runs, eval_cmd, kill, lines, result_ids, start, wait_until

sys.path.insert(0, str(ROOT))
from tests.fault_server import FaultServer, refused_url  # noqa: E402

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
        from tests.test_eval_runner import dataset

        return dataset(self.work, n=12)  # the test suite's toy questions; every other gold is "i don't know"

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


def ask_cmd(ctx: Context, *opts: str) -> list[str]:
    return [sys.executable, "-m", "agentic_rag.cli", "ask", "--dataset", str(ctx.toy), "--id", "toy-0", "--json", *opts]


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


def resumed_outcome(ctx: Context, out: Path, interruption: str, resume: list[str] | None = None, **extra: Any) -> dict[str, Any]:
    """Resume ``out`` with the CLI (``resume``: the exact command a Ctrl-C printed) and compare it with
    the reference run."""
    ctx.serve(WEAK)
    cmd = resume or eval_cmd(ctx.toy, out, ["--resume", *ctx.kill_opts()])
    proc = cli(cmd)
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


def to_markdown(report: dict[str, Any]) -> str:
    rows = report["cases"]
    out = ["# Reliability cases", "",
           f"Generated by `scripts/bench_reliability.py` ({report['generated']}). Every case is a real `agentic-rag` "
           "process; the model is a scripted reply served over HTTP by `tests/fault_server.py` (openai backend) "
           "unless the case names the 0.5B. `ok` = the expected outcome, no crash, no traceback, no row lost or "
           "doubled, the fake API key in no output.", "",
           f"{sum(r['ok'] for r in rows)} of {len(rows)} cases ok.", "",
           "| group | case | injected | kills / resumes | outcome | crash | traceback | rows lost | rows doubled | key leaked | ok |",
           "|---|---|---|---|---|---|---|---|---|---|---|"]
    yn = {True: "yes", False: "no"}
    for r in rows:
        out.append(f"| {r['group']} | {r['case']} | {r['injected']} | {r['interruptions']} | {r['outcome']} | "
                   f"{yn[r['crash']]} | {yn[r['traceback']]} | {r['rows_lost']} | {r['rows_doubled']} | "
                   f"{yn[r['key_leaked']]} | {'ok' if r['ok'] else '**FAILED**'} |")
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
