"""Ctrl-C and SIGTERM during an eval: the questions answered so far are saved, the command that resumes
the run is printed, the process exits at once (130, 143) without a traceback, and the resumed run doubles
nothing. The model is the fault server's scripted reply (see test_run_reliability.py); one check
interrupts the packaged 0.5B while it decodes."""

from __future__ import annotations

import re
import shlex
import signal
import sys
import time
from collections import Counter

import pytest
from typer.testing import CliRunner

from agentic_rag.cli import app
from agentic_rag.telemetry import read_rows
from testkit.fault_server import FaultServer
from testkit.processes import SUITE_SETTINGS, WEAK, lines, overrides, result_ids, start, start_eval, wait_for
from testkit.records import toy_dataset as dataset


@pytest.fixture(scope="module")
def server():
    with FaultServer(reply=WEAK, hang_s=60) as srv:
        yield srv


def test_ctrl_c_saves_prints_the_resume_command_and_exits_130_at_once(server, tmp_path):
    data, values, out = dataset(tmp_path), overrides(server.url, tmp_path), tmp_path / "run"
    server.set_plan(["ok"] * 5 + ["hang"])
    before = len(server.requests)
    proc = start_eval(data, out, values, "--workers", "1")
    wait_for(lambda: len(server.requests) - before == 6 and lines(out / "results.jsonl") == 2, proc)
    t0 = time.monotonic()
    proc.send_signal(signal.SIGINT)
    _, stderr = proc.communicate(timeout=60)
    took = time.monotonic() - t0
    assert proc.returncode == 130 and took < 5.0, (took, stderr[-2000:])
    assert "Traceback" not in stderr and "2 of 5 questions are saved" in stderr
    command = re.search(r"resume with:\n\s+(.+)", stderr).group(1)
    argv = shlex.split(command)
    assert argv[:3] == ["python", "-m", "agentic_rag.cli"] and argv[-1] == "--resume" and str(out) in argv

    # the printed command, run as its arguments say (in this process: `python -m agentic_rag.cli` itself is
    # what every child above runs)
    resumed = CliRunner().invoke(app, argv[3:], catch_exceptions=False)
    assert resumed.exit_code == 0, resumed.output[-2000:]
    assert sorted(result_ids(out)) == [f"toy-{i}" for i in range(5)]
    rounds = Counter((r["question_id"], r["round"], r["reason"]) for r in read_rows(out / "telemetry.jsonl"))
    assert len(rounds) == 10 and set(rounds.values()) == {1}  # question 3's first decision is not doubled


SHORT_REPLY = 24  # tokens: the check needs a reply under way, not a long one (the 0.5B's run to 160 took most of the test)


@pytest.mark.model
def test_ctrl_c_during_a_real_model_answer_exits_130_at_once(tmp_path):
    """The one end-to-end check with the packaged 0.5B: Ctrl-C while it decodes in a worker thread (the
    baseline: one call per question, so the second question is decoding a second after the first is
    saved). That the printed command resumes is checked against the fault server above."""
    from testkit.records import lightest_examples

    out = tmp_path / "run"
    data = str(lightest_examples(tmp_path, 3))
    proc = start([sys.executable, "-m", "agentic_rag.cli", "eval", "--dataset", data, "--n", "3", "--system",
                  "baseline", "--out", str(out), "-o", f"ARTIFACTS_DIR={tmp_path / 'artifacts'}",
                  "-o", f"MAX_OUTPUT_TOKENS={SHORT_REPLY}"], keep=SUITE_SETTINGS)
    wait_for(lambda: lines(out / "results.jsonl") >= 1, proc, timeout=900)
    time.sleep(1.0)  # the second question is under way
    t0 = time.monotonic()
    proc.send_signal(signal.SIGINT)
    _, stderr = proc.communicate(timeout=120)
    took = time.monotonic() - t0
    assert proc.returncode == 130 and took < 5.0, (took, stderr[-2000:])
    assert "--resume" in stderr and "Traceback" not in stderr and re.search(r"\b[12] of 3 questions are saved", stderr)
    assert len(result_ids(out)) == len(set(result_ids(out))) >= 1


def test_sigterm_saves_prints_the_resume_command_and_exits_143(server, tmp_path):
    data, values, out = dataset(tmp_path), overrides(server.url, tmp_path), tmp_path / "run"
    server.set_plan(["ok"] * 5 + ["hang"])
    before = len(server.requests)
    proc = start_eval(data, out, values)
    wait_for(lambda: len(server.requests) - before == 6 and lines(out / "results.jsonl") == 2, proc)
    proc.send_signal(signal.SIGTERM)
    _, stderr = proc.communicate(timeout=60)
    assert proc.returncode == 143, stderr[-2000:]
    assert "Traceback" not in stderr and "2 of 5 questions are saved" in stderr
    argv = shlex.split(re.search(r"resume with:\n\s+(.+)", stderr).group(1))
    assert argv[-1] == "--resume" and str(out) in argv
    assert not (out / "run.lock").exists()  # released on the way out
