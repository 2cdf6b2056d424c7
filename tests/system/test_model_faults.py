"""Model faults end as refusals: a real local HTTP server injects them into the openai backend
(connection refused, HTTP 500/429/401, a hang past the timeout, an empty completion, malformed JSON,
no choices, a dropped connection); the scripted model checks the graph's handling of a failure at
each LLM call site (grader, generator, reflect, verifier)."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import pytest

from agentic_rag.configuration import Settings
from agentic_rag.eval.runner import run_eval
from agentic_rag.runner import answer
from testkit.fakes import NO_TIME, UNAVAILABLE
from testkit.fault_server import FaultServer, refused_url
from testkit.processes import KEY, SUITE_SETTINGS, child_env, cli
from testkit.records import QUOTE_2004, record
from testkit.records import toy_dataset as dataset
from testkit.scripted_runs import run

ROOT = Path(__file__).resolve().parents[2]
REPLY = f'Finding Nemo won {{cite:76th academy}} "{QUOTE_2004}".'
RETRIES = 2


@pytest.fixture(scope="module")
def server():
    with FaultServer(reply=REPLY, hang_s=30) as srv:
        yield srv


def remote(settings: Settings, url: str, **extra) -> Settings:
    """One question's retries against the module's server: its breaker is off (each test plans its own
    faults), and the breaker's own tests turn it on."""
    return settings.replace(LLM_BACKEND="openai", OPENAI_BASE_URL=url, LLM_MODEL="m", OPENAI_API_KEY=KEY,
                            LLM_TIMEOUT_S=1.0, LLM_RETRIES=RETRIES, LLM_BACKOFF_S=0.05, LLM_BREAKER_COOLDOWN_S=0.0,
                            **extra)


def ask(server: FaultServer, settings: Settings, plan: list[str], system: str = "agent", url: str | None = None):
    server.set_plan(plan)
    before = len(server.requests)
    t0 = time.monotonic()
    result = answer(system, remote(settings, url or server.url), record=record())
    return result, server.modes_served()[before:], time.monotonic() - t0


UNAVAILABLE_CASES = {
    "http_500": (["500"] * 3, "HTTP 500"),
    "hang_past_timeout": (["hang"] * 3, "no reply within 1.0 s"),
    "malformed_json": (["malformed"] * 3, "malformed reply"),
    "no_choices": (["no_choices"] * 3, "the completion has no choices"),
    "dropped_connection": (["drop"] * 3, "connection failed"),
}


@pytest.mark.parametrize("case", UNAVAILABLE_CASES)
def test_a_server_that_stays_faulty_ends_as_an_llm_unavailable_refusal(server, agent_settings, case):
    plan, error = UNAVAILABLE_CASES[case]
    result, served, _ = ask(server, agent_settings, plan)
    assert result.status == "refuse" and result.reason == "ABSTAIN_LLM_UNAVAILABLE"
    assert result.abstention_layer == "llm_unavailable" and result.citations == []
    assert served == plan  # one attempt and LLM_RETRIES retries
    assert server.url in result.explanation and error in result.explanation
    assert f"{RETRIES + 1} attempts" in result.explanation
    assert KEY not in json.dumps(result.model_dump())  # the 500 body echoes the Authorization header


def test_connection_refused_names_the_url_and_the_errno(server, agent_settings):
    url = refused_url()
    result, served, elapsed = ask(server, agent_settings, [], url=url)
    assert result.reason == "ABSTAIN_LLM_UNAVAILABLE" and served == []
    assert url in result.explanation and "Connection refused" in result.explanation
    assert elapsed < 30


def test_baseline_without_a_model_refuses_instead_of_crashing(server, agent_settings):
    result, served, _ = ask(server, agent_settings, ["500"] * 3, system="baseline")
    assert result.status == "refuse" and result.reason == "ABSTAIN_LLM_UNAVAILABLE" and len(served) == 3


def test_429_twice_then_success_answers(server, agent_settings):
    result, served, _ = ask(server, agent_settings, ["429", "429"])
    assert served == ["429", "429", "ok"]
    assert result.status == "ok" and result.reason == "STOP_OVERLAP_OK" and "Finding Nemo" in result.answer
    assert result.llm_calls == 1  # retries are attempts of one call, not calls against MAX_LLM_CALLS


def test_a_rejected_key_is_not_retried(server, agent_settings):
    result, served, _ = ask(server, agent_settings, ["401"])
    assert served == ["401"] and result.reason == "ABSTAIN_LLM_UNAVAILABLE" and "HTTP 401" in result.explanation


def test_an_empty_completion_is_its_own_refusal_not_low_budget(server, agent_settings):
    result, served, _ = ask(server, agent_settings, ["empty"])
    assert served == ["empty"]
    assert result.status == "refuse" and result.reason == "ABSTAIN_EMPTY_ANSWER"
    assert result.abstention_layer == "empty_answer" and "empty" in result.explanation
    assert "budget" not in result.explanation


def test_no_call_outlives_the_questions_wall_time(server, agent_settings):
    # a server that never answers, a 60 s request timeout and 2 retries: the old worst case was
    # WALL_TIME_S plus two timeouts; the question's deadline cuts the one attempt it has time for
    server.set_plan(["hang"] * 3)
    s = remote(agent_settings, server.url).replace(WALL_TIME_S=3.0, LLM_TIMEOUT_S=60.0)
    t0 = time.time()
    result = answer("agent", s, record=record())
    assert result.reason == "ABSTAIN_LLM_UNAVAILABLE"
    assert time.time() - t0 < 3.0 + 1.5  # retrieval included; no second attempt was started
    assert "1 attempt " in result.explanation


def test_a_backoff_that_would_pass_the_deadline_is_not_waited(server, agent_settings):
    server.set_plan(["500"] * 3)
    s = remote(agent_settings, server.url).replace(WALL_TIME_S=4.0, LLM_BACKOFF_S=30.0)
    t0 = time.time()
    result = answer("agent", s, record=record())
    assert result.reason == "ABSTAIN_LLM_UNAVAILABLE" and time.time() - t0 < 4.0


def test_an_eval_against_a_server_that_never_answers_waits_one_timeout_not_one_per_question(settings, tmp_path):
    """The server accepts the connection and never replies: the first question waits out LLM_TIMEOUT_S,
    the others end at once as refusals that say since when the server stopped answering."""
    timeout, n = 3.0, 4
    with FaultServer(default="hang", hang_s=60) as silent:
        s = remote(settings, silent.url).replace(LLM_TIMEOUT_S=timeout, LLM_RETRIES=0, LLM_BREAKER_COOLDOWN_S=600.0)
        res = run_eval(dataset(tmp_path, n=n), "agent", s, tmp_path / "run", progress=False)
        asked = len(silent.requests)
    rows = res["rows"]
    assert [r["reason"] for r in rows] == ["ABSTAIN_LLM_UNAVAILABLE"] * n and res["summary"]["llm_unavailable"] == n
    # the time the questions waited for the model (a cold process's model loads are not the server's)
    waited_s = [r["llm_ms"] / 1000 for r in rows]
    assert asked == 1 and waited_s[0] >= timeout and sum(waited_s[1:]) < timeout  # was: a timeout per question
    assert f"no reply within {timeout:.1f} s" in rows[0]["explanation"]
    for row in rows[1:]:
        assert silent.url in row["explanation"] and "stopped answering at" in row["explanation"]
        assert "not sent to it" in row["explanation"] and "LLM_BREAKER_COOLDOWN_S" in row["explanation"]


def test_a_server_that_answers_a_retry_is_asked_by_the_next_question(server, agent_settings):
    result, served, _ = ask(server, agent_settings, ["hang", "ok"])
    assert result.status == "ok" and served == ["hang", "ok"]
    s = remote(agent_settings, server.url).replace(LLM_BREAKER_COOLDOWN_S=600.0)
    server.set_plan(["hang", "ok", "ok"])
    first, second = (answer("agent", s, record=record()) for _ in range(2))
    assert first.status == second.status == "ok" and server.modes_served()[-3:] == ["hang", "ok", "ok"]


# --- the graph's handling at every call site (scripted model) ---------------------------------------


def test_an_outage_at_reflect_refuses_rather_than_showing_the_unrevised_draft(agent_settings):
    weak = "It was Shrek, made by DreamWorks in 2004 {cite:76th academy}."
    result, fake, rows = run(agent_settings, [weak, UNAVAILABLE], OVERLAP_TAU=0.99, REFLECT_MIN_OVERLAP=0.0)
    assert [r["reason"] for r in rows] == ["REFLECT_LOW_FAITH", "ABSTAIN_LLM_UNAVAILABLE"]
    assert rows[-1]["llm_error"]["last_error"] == "scripted outage"
    assert result.reason == "ABSTAIN_LLM_UNAVAILABLE" and "scripted://model" in result.explanation


def test_an_outage_at_the_verifier_withholds_the_draft(agent_settings):
    good = f'Finding Nemo won. {{cite:76th academy}} "{QUOTE_2004}"'
    result, fake, rows = run(agent_settings, [good, UNAVAILABLE], VERIFIER_ENABLED=True)
    assert len(fake.calls) == 2 and result.status == "refuse" and result.reason == "ABSTAIN_LLM_UNAVAILABLE"


def test_an_outage_at_the_grader_refuses_before_generation(agent_settings):
    result, fake, rows = run(agent_settings, [UNAVAILABLE], USE_RERANKER=True, RERANKER_KIND="llm", MAX_LLM_CALLS=8)
    assert len(fake.calls) == 1 and result.reason == "ABSTAIN_LLM_UNAVAILABLE"
    assert "generation" not in result.tokens["detail"]


def test_a_call_the_wall_time_left_no_room_for_is_a_budget_refusal_not_an_outage(agent_settings):
    from agentic_rag.llm.remote import call_with_retries
    from agentic_rag.llm.usage import LLMUnavailableError, llm_deadline

    with llm_deadline(time.time() - 1.0), pytest.raises(LLMUnavailableError) as err:
        call_with_retries(lambda timeout: pytest.fail("no attempt may start"), url="u", timeout_s=5, retries=2,
                          backoff_s=0)
    assert not err.value.tried and "WALL_TIME_S" in err.value.last_error
    result, fake, rows = run(agent_settings, [NO_TIME])
    assert result.reason == "ABSTAIN_LOW_BUDGET" and rows[-1]["llm_error"]["attempts"] == 0
    good = f'Finding Nemo won. {{cite:76th academy}} "{QUOTE_2004}"'
    result, fake, rows = run(agent_settings, [good, NO_TIME], VERIFIER_ENABLED=True)
    assert result.status == "ok" and result.signals["support_verdict_skipped"] == "budget"


def test_an_eval_against_a_dead_server_writes_every_row_and_the_summary(server, settings, tmp_path):
    data = dataset(tmp_path)
    res = run_eval(data, "agent", remote(settings, refused_url()), tmp_path / "run", progress=False)
    assert [r["reason"] for r in res["rows"]] == ["ABSTAIN_LLM_UNAVAILABLE"] * 5
    assert res["summary"]["n"] == 5 and res["summary"]["llm_unavailable"] == 5
    assert (tmp_path / "run" / "summary.json").is_file()


# --- end to end, as a user runs it ------------------------------------------------------------------


def cli_started(*args: str, env: dict[str, str] | None = None) -> subprocess.Popen:
    """``cli`` started, not waited for: an independent command runs beside another one."""
    return subprocess.Popen([sys.executable, "-m", "agentic_rag.cli", *args], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env={**child_env(keep=SUITE_SETTINGS), **(env or {})})


def finished(proc: subprocess.Popen) -> subprocess.CompletedProcess:
    out, err = proc.communicate(timeout=600)
    return subprocess.CompletedProcess(proc.args, proc.returncode, out, err)


def test_no_traceback_and_no_key_anywhere_in_ask_and_eval_against_the_fault_server(server, tmp_path):
    """Every fault in one eval (one question each), then `ask` with nothing listening: exit 0, every row
    and the summary written, no traceback, and the key (given on the command line and in the
    environment, echoed back by the server's 500) in no file, no stdout, no stderr."""
    data = dataset(tmp_path)
    backend = ["-o", "LLM_BACKEND=openai", "-o", "LLM_MODEL=m", "-o", "LLM_TIMEOUT_S=1", "-o", "LLM_BACKOFF_S=0.05"]
    opts = [*backend, "-o", f"ARTIFACTS_DIR={tmp_path / 'artifacts'}"]
    # `ask` with nothing listening needs no server: it runs beside the eval, in artifacts of its own
    url = refused_url()
    asking = cli_started("ask", "--dataset", str(data), "--id", "toy-0", "--json", "-o", f"OPENAI_BASE_URL={url}",
                         *backend, "-o", f"ARTIFACTS_DIR={tmp_path / 'artifacts_refused'}", env={"OPENAI_API_KEY": KEY})
    # the hang last: after it the server's breaker refuses the calls of later questions
    server.set_plan(["500"] * 3 + ["429", "ok"] + ["empty"] + ["no_choices"] * 3 + ["hang"] * 3)
    out = tmp_path / "run"
    ev = cli("eval", "--dataset", str(data), "--out", str(out), "-o", f"OPENAI_BASE_URL={server.url}",
             "-o", f"OPENAI_API_KEY={KEY}", *opts, env={"OPENAI_API_KEY": KEY})
    assert ev.returncode == 0, ev.stderr[-2000:]
    rows = [json.loads(line) for line in (out / "results.jsonl").read_text().splitlines()]
    assert [r["reason"] for r in rows] == ["ABSTAIN_LLM_UNAVAILABLE", "STOP_OVERLAP_OK", "ABSTAIN_EMPTY_ANSWER",
                                           "ABSTAIN_LLM_UNAVAILABLE", "ABSTAIN_LLM_UNAVAILABLE"]
    summary = json.loads((out / "summary.json").read_text())
    assert summary["llm_unavailable"] == 3
    assert "3 of 5 questions ended as ABSTAIN_LLM_UNAVAILABLE" in ev.stderr
    # served: the answerability is read by the packaged reader, said before the first question; the
    # log-probabilities the server does not return are said in the summary table, summary.json and
    # report.md, never a silent fall-back
    said = " ".join(ev.stderr.split())
    assert said.index("answerability is read by a local prefill of the packaged reader qwen2.5-coder-0.5b") \
        < said.index("this run lacked model signals")
    assert "lp_mean, lp_min, p_first missing on 1 of 1 drafts (token log-probabilities: not returned by the backend)" in said
    assert set(summary["signals_missing"]) == {"lp_mean", "lp_min", "p_first"}
    assert "lp_mean, lp_min, p_first" in " ".join(ev.stdout.split())
    report = (out / "report.md").read_text()
    assert "## model signals missing" in report and "lp_mean, lp_min, p_first missing on 1 of 1 drafts" in report
    answered = next(r for r in rows if r["reason"] == "STOP_OVERLAP_OK")
    assert 0.0 <= answered["signals"]["answerability"] <= 1.0

    # `ask` gives the same account of one answer
    server.set_plan(["ok"])
    one = cli("ask", "--dataset", str(data), "--id", answered["id"], "-o", f"OPENAI_BASE_URL={server.url}", *opts,
              env={"OPENAI_API_KEY": KEY})
    assert one.returncode == 0, one.stderr[-2000:]
    said_one = " ".join(one.stderr.split())
    assert "answerability is read by a local prefill of the packaged reader" in said_one
    assert "the answer lacked model signals: lp_mean, lp_min, p_first missing on 1 of 1 drafts" in said_one

    asked = finished(asking)
    assert asked.returncode == 0, asked.stderr[-2000:]
    reply = json.loads(asked.stdout)
    assert reply["reason"] == "ABSTAIN_LLM_UNAVAILABLE" and url in reply["explanation"]

    for proc in (ev, one, asked):
        assert "Traceback" not in proc.stderr and KEY not in proc.stdout + proc.stderr
    written = [p for p in tmp_path.rglob("*") if p.is_file() and p.suffix not in (".png",)]
    assert out / "config.json" in written and out / "telemetry.jsonl" in written
    assert any("telemetry" in p.parts for p in written if p.is_relative_to(tmp_path / "artifacts"))  # ask's trace
    leaking = [str(p) for p in written if KEY.encode() in p.read_bytes()]
    assert leaking == []


def test_the_printed_resume_command_never_shows_a_key():
    from agentic_rag.eval.resume import resume_command

    line = resume_command("agentic-rag", ["eval", "--dataset", "d.jsonl", "-o", f"OPENAI_API_KEY={KEY}",
                                          f"--override=eval_judge_api_key={KEY}", "-o", "RETRIEVAL_K=3"], "runs/x")
    command, _, note = line.partition("  # ")
    assert KEY not in line and "API_KEY" not in command and "***" not in command  # a mask run as printed is no key
    assert command.endswith("-o RETRIEVAL_K=3 --out runs/x --resume")
    assert note.startswith("first set OPENAI_API_KEY and AGENTIC_RAG_EVAL_JUDGE_API_KEY in the environment")
