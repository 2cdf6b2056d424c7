"""What every reliability case shares: the registry (``@case``) and its groups, the work context with
its fault server, a CLI child process, and the outcomes several groups read (an eval's rows, a resumed
run against the reference run, a one-line error, the warnings a terminal shows)."""

from __future__ import annotations

import shlex
import shutil
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import Any

from agentic_rag.eval.results import read_results
from testkit.bad_inputs import screen_lines
from testkit.fault_server import FaultServer
from testkit.processes import child_env, compare_runs, eval_cmd, result_ids
from testkit.records import toy_dataset

KEY = "sk-bench-5e1f0a9b77c4"  # distinctive: grepped for in every output of the fault cases
GOOD = ('Finding Nemo won {cite:76th academy} "At the 76th Academy Awards, held in 2004, '
        'Finding Nemo won the Oscar for Best Animated Feature".')
WEAK = "It was Shrek, made by DreamWorks in 2004 {cite:76th academy}."  # two calls and two rounds per question
TRACEBACK = "Traceback (most recent call last)"

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
    "security": "a run folder, a page, a dataset or a server client that tries to run code, take the key, write where "
                "it chooses or inject text and markup",
    "silent_loss": "inputs that made rows, records, pages or spans vanish without a word (line separators, a piped "
                   "dataset, a numeric id, a full span queue, text on screen that the extractor dropped)",
    "hangs": "inputs or a server that made a command hang, blow up or outlive its parent (quadratic pages, a record "
             "that exhausts memory, a server that never answers, a killed `serve`)",
    "actionable_errors": "outputs that cannot be written, refused in one line before the work",
    "bounds_links": "links in a folder a command writes into, a page of fragments, and inputs with no bound (a number "
                    "of 5,000 digits, deep nesting, a 70 MB line, a served record of 2,000 pages, a zlib bomb and a "
                    "recursive view in a checkpoint file, a looping decision file, rows of the wrong types, 100 KB replies)",
    "memory": "a 100-question `eval` with the packaged 0.5B (peak memory)",
}


@dataclass
class Case:
    group: str
    name: str
    injected: str
    run: Callable[[Context], dict[str, Any]]


CASES: list[Case] = []  # in the order registered; report.all_cases() orders them by GROUPS


def case(group: str, name: str, injected: str):
    if group not in GROUPS:
        raise ValueError(f"case {name!r}: group {group!r} is not in GROUPS")

    def register(fn: Callable[[Context], dict[str, Any]]):
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
        # the scripted server answers every call with its reply, the verifier's yes/no question too, which
        # reads as "no" and would withhold every good answer: the cases inject faults, not verdicts
        values = {"LLM_BACKEND": "openai", "OPENAI_BASE_URL": url or self.server.url, "LLM_MODEL": "m",
                  "LLM_TIMEOUT_S": 2, "LLM_BACKOFF_S": 0.1, "VERIFIER_ENABLED": False,
                  "ARTIFACTS_DIR": str(self.work / "artifacts"), **extra}
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


def eval_outcome(ctx: Context, out: Path, proc: subprocess.CompletedProcess, n: int, expected: list[str] | None) -> dict[str, Any]:
    ids = result_ids(out)
    rows = read_results(out / "results.jsonl")
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


def one_line_error(proc: subprocess.CompletedProcess, must: list[str], expect_rc: int = 2) -> dict[str, Any]:
    text = proc.stderr.strip()
    return {
        **process_outcome(proc, proc.stderr, expect_rc),
        "outcome": text.splitlines()[-1][:160] if text else "(nothing printed)",
        "ok_expected": all(m in text for m in must) and len([x for x in text.splitlines() if x.startswith("error")]) == 1,
        "key_leaked": KEY in proc.stdout + proc.stderr,
    }


def warnings_shown(stderr: str) -> list[str]:
    """Warning and error lines as a terminal shows them (a progress bar's carriage returns applied)."""
    return [x for x in screen_lines(stderr) if x.startswith(("warning:", "error:"))]


def served_graph(ctx: Context, name: str, requests: Callable[[list[str], Path], Any]) -> Any:
    """``requests(langgraph command, folder)`` with `langgraph dev` installed and a fresh work folder ``name``;
    a server that never comes up is a failed row (RuntimeError), not a lost report."""
    from testkit.servers import ServerDidNotStart, console_script

    langgraph = console_script("langgraph")
    if langgraph is None:
        raise RuntimeError("langgraph-cli is not installed (extra: dev)")
    folder = ctx.folder(name)
    folder.mkdir()
    try:
        return requests(langgraph, folder)
    except ServerDidNotStart as exc:
        raise RuntimeError(str(exc)[:300]) from None


def ingest_cmd(ctx: Context, source: Path, out: Path) -> list[str]:
    return [sys.executable, "-m", "agentic_rag.cli", "ingest", str(source), "--out", str(out),
            "-o", f"ARTIFACTS_DIR={ctx.work / 'artifacts'}"]
