"""Eval runs lose or double nothing: killed at any point, resumed under a new server port, written by
two processes at once, pointed at a folder that cannot be written (Ctrl-C and SIGTERM:
test_run_signals.py).

The model is the scripted reply served over real HTTP by testkit/fault_server.py (openai backend), so the
runs are real `agentic-rag eval` processes, killed and resumed for real."""

from __future__ import annotations

import base64
import json
import os
import signal
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import pytest
from typer.testing import CliRunner

from agentic_rag.cli import app
from agentic_rag.configuration import Settings
from agentic_rag.eval.runner import run_eval
from agentic_rag.telemetry import read_rows
from testkit.fault_server import FaultServer
from testkit.processes import ROOT, WEAK, as_options, lines, overrides, result_ids, start_eval, wait_for
from testkit.records import toy_dataset as dataset

TIMING = {"latency_p50_ms", "latency_p95_ms"}


@pytest.fixture(scope="module")
def server():
    with FaultServer(reply=WEAK, hang_s=60) as srv:
        yield srv


def same_run(a: Path, b: Path) -> None:
    """Each question once, the same summary but latency, and each question's telemetry rounds once."""
    assert sorted(result_ids(b)) == sorted(set(result_ids(b))) == sorted(result_ids(a))
    sa, sb = (json.loads((p / "summary.json").read_text()) for p in (a, b))
    assert {k: v for k, v in sa.items() if k not in TIMING} == {k: v for k, v in sb.items() if k not in TIMING}
    rounds = [Counter((r["question_id"], r["round"], r["reason"]) for r in read_rows(p / "telemetry.jsonl")) for p in (a, b)]
    assert rounds[0] == rounds[1] and set(rounds[1].values()) == {1}


def test_sigkill_at_any_point_then_resume_loses_and_doubles_nothing(server, tmp_path):
    data, values = dataset(tmp_path), overrides(server.url, tmp_path)
    settings = Settings.load(overrides=values)
    server.set_plan([])
    run_eval(data, "agent", settings, tmp_path / "full", progress=False)
    assert len(read_rows(tmp_path / "full" / "telemetry.jsonl")) == 10  # two rounds per question

    # early: killed while it starts, before any question
    early = tmp_path / "early"
    proc = start_eval(data, early, values)
    time.sleep(2.0)
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()
    assert lines(early / "results.jsonl") == 0

    # mid-question (question 3 has written its first round and hangs in its revision call) and while
    # writing (killed the moment the first result line reaches the file), two runs at once, each with a
    # server of its own; the resume below talks to the first server, on another port than the second's
    mid, writing = tmp_path / "mid", tmp_path / "writing"
    server.set_plan(["ok"] * 5 + ["hang"])
    before = len(server.requests)
    with FaultServer(reply=WEAK, hang_s=60) as other:
        in_mid, in_writing = start_eval(data, mid, values), start_eval(data, writing, overrides(other.url, tmp_path))
        wait_for(lambda: (writing / "results.jsonl").is_file() and (writing / "results.jsonl").stat().st_size > 0,
                 in_writing, step=0.001)
        os.killpg(in_writing.pid, signal.SIGKILL)
        in_writing.wait()
        wait_for(lambda: len(server.requests) - before == 6 and lines(mid / "results.jsonl") == 2, in_mid)
        wait_for(lambda: len(read_rows(mid / "telemetry.jsonl")) == 5, in_mid)
        os.killpg(in_mid.pid, signal.SIGKILL)
        in_mid.wait()
    assert [r["question_id"] for r in read_rows(mid / "telemetry.jsonl")][-1] == "toy-2"  # a round without a result

    for out in (early, mid, writing):
        run_eval(data, "agent", settings, out, resume=True, progress=False)
        same_run(tmp_path / "full", out)


def test_a_cut_last_line_is_detected_and_its_question_redone(server, tmp_path):
    data, settings = dataset(tmp_path), Settings.load(overrides=overrides(server.url, tmp_path))
    server.set_plan([])
    full = tmp_path / "full"
    run_eval(data, "agent", settings, full, progress=False)
    whole = (full / "results.jsonl").read_bytes()
    last = whole.rstrip(b"\n").rsplit(b"\n", 1)[1]
    for i, cut in enumerate((1, len(last) // 2, len(last))):  # a byte, half the line, all but its newline
        out = tmp_path / f"cut{i}"
        run_eval(data, "agent", settings, out, progress=False)
        (out / "results.jsonl").write_bytes(whole[: len(whole) - len(last) - 1 + cut])
        served = len(server.requests)
        run_eval(data, "agent", settings, out, resume=True, progress=False)
        redone = cut < len(last)  # a line that is complete but for its newline is kept
        assert len(server.requests) - served == (2 if redone else 0)
        assert (out / "results.jsonl").read_bytes().count(b"\n") == 5
        same_run(full, out)


def test_resume_under_other_settings_is_one_line_naming_them_and_a_new_port_is_not_one(server, tmp_path):
    data, values, out = dataset(tmp_path), overrides(server.url, tmp_path), tmp_path / "run"
    server.set_plan([])
    runner = CliRunner()
    base = ["eval", "--dataset", str(data), "--n", "2", "--out", str(out)]
    assert runner.invoke(app, [*base, *as_options(values)]).exit_code == 0
    changed = {**values, "COVERAGE_MIN": 0.0, "ANSWER_RELEVANCE_MIN": 0.2, "FAITH_MIN": 0.1, "OVERLAP_MIN": 0.1,
               "MAX_ROUNDS": 1}
    res = runner.invoke(app, [*base, "--resume", *as_options(changed)])
    assert res.exit_code == 2 and isinstance(res.exception, SystemExit)
    message = res.stderr.strip()
    assert "\n" not in message and message.startswith(f"error: cannot resume {out}")
    assert "COVERAGE_MIN: 0.5 -> 0.0" in message and "and 1 more" in message and "a new --out" in message

    # the model server moved (other port), with other timeouts, retries and key: the same run
    with FaultServer(reply=WEAK) as moved:
        again = {**values, "OPENAI_BASE_URL": moved.url, "LLM_TIMEOUT_S": 30, "LLM_RETRIES": 5, "LLM_BACKOFF_S": 2,
                 "OPENAI_API_KEY": "sk-other"}
        res = runner.invoke(app, ["eval", "--dataset", str(data), "--n", "4", "--out", str(out), "--resume",
                                  *as_options(again)])
        assert res.exit_code == 0, res.output[-2000:]
        assert len(moved.requests) == 4  # the two new questions, two calls each
    assert sorted(result_ids(out)) == [f"toy-{i}" for i in range(4)]
    config = json.loads((out / "config.json").read_text())
    assert "sk-other" not in json.dumps(config) and config["model"]["base_url"] == moved.url


def test_an_eval_into_a_place_that_cannot_be_written_is_a_one_line_error(tmp_path):
    blocker = tmp_path / "a-file"
    blocker.write_text("x")
    places = [blocker / "run"]
    if Path("/sys").is_dir():
        places.append(Path("/sys/agentic-rag-run"))  # sysfs: no folder can be made there, even by root
    for place in places:
        res = CliRunner().invoke(app, ["eval", "--dataset", "example", "--n", "1", "--out", str(place)])
        assert res.exit_code == 2 and isinstance(res.exception, SystemExit), res.output
        assert res.stderr.strip().startswith(f"error: cannot write the run folder {place}: ")
        assert "\n" not in res.stderr.strip()


WRITER = """
import sys
from pathlib import Path
from agentic_rag.telemetry import write_row
path, tag, n = Path(sys.argv[1]), sys.argv[2], int(sys.argv[3])
for i in range(n):
    write_row(path, {"question_id": f"{tag}-{i}", "payload": tag * 150_000})
"""


def test_two_processes_appending_long_lines_never_interleave(tmp_path):
    path, n = tmp_path / "telemetry.jsonl", 60
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    procs = [subprocess.Popen([sys.executable, "-c", WRITER, str(path), tag, str(n)], env=env) for tag in "ab"]
    assert [p.wait(timeout=300) for p in procs] == [0, 0]
    raw = path.read_text().splitlines()
    assert len(raw) == 2 * n
    rows = [json.loads(line) for line in raw]  # a cut-in line would not parse
    for tag in "ab":
        mine = [r for r in rows if r["question_id"].startswith(tag)]
        assert [r["question_id"] for r in mine] == [f"{tag}-{i}" for i in range(n)]
        assert all(r["payload"] == tag * 150_000 for r in mine)


def test_a_second_writer_is_refused_and_a_stale_lock_is_reported_and_taken_over(server, tmp_path, capsys):
    data, values, out = dataset(tmp_path), overrides(server.url, tmp_path), tmp_path / "run"
    server.set_plan(["ok"] * 5 + ["hang"])
    before = len(server.requests)
    first = start_eval(data, out, values)
    wait_for(lambda: len(server.requests) - before == 6 and lines(out / "results.jsonl") == 2, first)
    for extra in ([], ["--resume"], ["--overwrite"], ["--n", "1"]):
        res = CliRunner().invoke(app, ["eval", "--dataset", str(data), "--out", str(out), *extra, *as_options(values)])
        message = res.stderr.strip()
        assert res.exit_code == 2 and "\n" not in message, res.output
        assert message.startswith(f"error: the run folder {out} is in use by process {first.pid} on ")
    assert lines(out / "results.jsonl") == 2 and first.poll() is None  # nothing written, nothing stopped
    os.killpg(first.pid, signal.SIGKILL)
    first.wait()
    assert (out / "run.lock").is_file()  # left behind by the killed run

    server.set_plan([])
    capsys.readouterr()
    run_eval(data, "agent", Settings.load(overrides=values), out, resume=True, progress=False)
    warning = capsys.readouterr().err
    assert f"was locked by process {first.pid} on " in warning and "which is gone" in warning
    assert sorted(result_ids(out)) == [f"toy-{i}" for i in range(5)] and not (out / "run.lock").exists()


def test_a_finished_run_is_never_emptied_without_overwrite(server, tmp_path):
    data, values, out = dataset(tmp_path), overrides(server.url, tmp_path), tmp_path / "run"
    server.set_plan([])
    base = ["eval", "--dataset", str(data), "--out", str(out), *as_options(values)]
    runner = CliRunner()
    assert runner.invoke(app, base).exit_code == 0
    kept = (out / "results.jsonl").read_bytes()
    for extra in ([], ["--n", "2"]):
        res = runner.invoke(app, [*base, *extra])
        message = res.stderr.strip()
        assert res.exit_code == 2 and "\n" not in message
        assert message == (f"error: {out} already holds a run (5 results): give --resume to continue it, "
                           "--overwrite to replace it, or another --out")
        assert (out / "results.jsonl").read_bytes() == kept
    res = runner.invoke(app, [*base, "--n", "2", "--overwrite"])
    assert res.exit_code == 0, res.output[-2000:]
    assert result_ids(out) == ["toy-0", "toy-1"] and json.loads((out / "summary.json").read_text())["n"] == 2
    assert runner.invoke(app, [*base, "--resume", "--overwrite"]).exit_code == 2


def test_a_damaged_line_inside_results_is_set_aside_and_its_question_answered_again(server, tmp_path, capsys):
    data, settings = dataset(tmp_path), Settings.load(overrides=overrides(server.url, tmp_path))
    server.set_plan([])
    full, out = tmp_path / "full", tmp_path / "run"
    run_eval(data, "agent", settings, full, progress=False)
    run_eval(data, "agent", settings, out, progress=False)
    rows = (out / "results.jsonl").read_bytes().splitlines(keepends=True)
    damaged = rows[2][:40] + b"\x00\xff garbage\n"
    (out / "results.jsonl").write_bytes(b"".join([*rows[:2], damaged, *rows[3:]]))
    lost = json.loads(rows[2])["id"]
    served = len(server.requests)
    capsys.readouterr()
    run_eval(data, "agent", settings, out, resume=True, progress=False)
    warning = capsys.readouterr().err
    assert "1 damaged line of" in warning and "(line 3)" in warning and "results.rejected.jsonl" in warning
    assert len(server.requests) - served == 2  # that question, drafted and revised again
    assert (out / "results.rejected.jsonl").read_bytes() == damaged
    assert damaged not in (out / "results.jsonl").read_bytes() and lost in result_ids(out)
    same_run(full, out)


def test_a_key_inside_the_server_url_is_in_no_file_and_no_output(tmp_path):
    """OPENAI_BASE_URL carrying credentials (user:key@host, ?api-key=): every place a URL is shown or
    stored (config.json, results, telemetry, the table, refusals, errors, `settings`) masks them."""
    from testkit.fault_server import refused_url
    from testkit.processes import KEY

    data, out, runner = dataset(tmp_path), tmp_path / "run", CliRunner()
    with FaultServer(reply=WEAK, plan=["500"] * 3) as srv:
        host = srv.url.removeprefix("http://")
        url = f"http://bob:{KEY}@{host}?api-key={KEY}&api-version=2024-06-01"
        values = {**overrides(url, tmp_path), "LLM_TIMEOUT_S": 5, "LLM_RETRIES": 2}
        ev = runner.invoke(app, ["eval", "--dataset", str(data), "--n", "2", "--out", str(out), *as_options(values)])
    assert ev.exit_code == 0, ev.output[-2000:]
    rows = [json.loads(line) for line in (out / "results.jsonl").read_text().splitlines()]
    assert rows[0]["reason"] == "ABSTAIN_LLM_UNAVAILABLE"
    assert f"http://***@{host.split('/')[0]}/v1?api-key=***&api-version=2024-06-01" in rows[0]["explanation"]
    config = json.loads((out / "config.json").read_text())
    assert config["settings"]["OPENAI_BASE_URL"] == config["model"]["base_url"] == \
        f"http://***@{host}?api-key=***&api-version=2024-06-01"

    gone = refused_url().removeprefix("http://")
    asked = runner.invoke(app, ["ask", "--dataset", str(data), "--id", "toy-0", *as_options(
        {**values, "OPENAI_BASE_URL": f"http://{KEY}@{gone}?key={KEY}#{KEY}", "LLM_RETRIES": 0})])
    shown = runner.invoke(app, ["settings", *as_options(
        {**values, "OPENAI_BASE_URL": f"https://u:{KEY}@example.org/v1?token={KEY}"})])
    bad = runner.invoke(app, ["settings", "-o", f"OPENAI_BASE_URL=https://u:{KEY}@example.org/v1", "-o", "LLM_RETRIES=x"])
    assert asked.exit_code == 0 and shown.exit_code == 0 and bad.exit_code == 2, asked.output[-2000:]
    assert "***@" in asked.stdout and "https://***@example.org/v1?token=***" in shown.stdout
    basic = base64.b64encode(f"bob:{KEY}".encode()).decode()  # the server's error quotes the Basic header
    for res in (ev, asked, shown, bad):
        assert KEY not in res.stdout + res.stderr and basic not in res.stdout + res.stderr
    leaking = [str(p) for p in tmp_path.rglob("*") if p.is_file() and
               (KEY.encode() in p.read_bytes() or basic.encode() in p.read_bytes())]
    assert leaking == []


# -- under load: idle OpenMP threads sleep, and threads answering at once share the cores ------------------
PROBE = "import os, sys, agentic_rag; print(os.environ.get('OMP_WAIT_POLICY'), 'torch' in sys.modules)"


def test_openmp_threads_wait_passively_unless_the_user_chose_and_before_torch_loads():
    env = {k: v for k, v in os.environ.items() if k != "OMP_WAIT_POLICY"}
    for given, expected in ((None, "PASSIVE False"), ("active", "active False")):
        run_env = {**env, "PYTHONPATH": str(ROOT), **({"OMP_WAIT_POLICY": given} if given else {})}
        said = subprocess.run([sys.executable, "-c", PROBE], env=run_env, capture_output=True, text=True, timeout=120)
        assert said.stdout.strip() == expected, said.stderr[-2000:]


def test_questions_answered_at_once_leave_torch_every_core_as_the_model_runs_one_call_at_a_time(settings):
    # splitting the cores among threads slowed `eval --workers 2` by half on a quiet machine (the model's
    # lock lets one call run at a time) and changed nothing under load: benchmarks/under_load_split.md
    from agentic_rag.eval.executors import LocalExecutor

    for workers in (1, 2, 64):
        assert LocalExecutor(workers).worker_settings(settings).llm.TORCH_THREADS == 0  # 0: every core
    chosen = settings.replace(TORCH_THREADS=3)
    assert LocalExecutor(2).worker_settings(chosen).llm.TORCH_THREADS == 3  # the user's choice stands
