"""`eval --judge llm`: CRAG's grading protocol against a real OpenAI-compatible server on 127.0.0.1 (a
scripted judge), and a judge that cannot grade leaving the answer unjudged, never accurate."""

from __future__ import annotations

import pytest
from typer.testing import CliRunner

from agentic_rag.cli import app
from agentic_rag.configuration import Settings, SettingsError
from agentic_rag.eval.judge import judge
from agentic_rag.eval.llm_judge import judge_settings, llm_judge, reply_score
from testkit.fakes import ScriptedChat
from testkit.fault_server import FaultServer, refused_url
from testkit.records import toy_dataset as dataset

CHOICE = "Who is older, Ferdi Taygan or Mahesh Bhupathi?"


def _judged(settings, url, prediction, gold="Ferdi Taygan", question=CHOICE, refused=False):
    s = settings.replace(EVAL_JUDGE="llm", EVAL_JUDGE_BASE_URL=url, EVAL_JUDGE_MODEL="judge", LLM_BACKOFF_S=0.01,
                         LLM_RETRIES=0)
    ruled = judge(prediction, prediction, gold, [], refused, question=question)
    return llm_judge(question, gold, [], prediction, ruled, s)


def test_the_judge_endpoint_must_be_named_and_must_not_be_the_system_itself():
    with pytest.raises(SettingsError, match="EVAL_JUDGE_BASE_URL"):
        judge_settings(Settings.load(overrides={"EVAL_JUDGE": "llm"}))
    own = Settings.load(overrides={"LLM_BACKEND": "openai", "OPENAI_BASE_URL": "http://127.0.0.1:9/v1", "LLM_MODEL": "m",
                                   "EVAL_JUDGE_BASE_URL": "http://127.0.0.1:9/v1", "EVAL_JUDGE_MODEL": "m"})
    with pytest.raises(SettingsError, match="own model"):
        judge_settings(own)


@pytest.mark.parametrize("args, said", [
    (["--judge", "llm"], "EVAL_JUDGE_BASE_URL"),
    (["--judge", "maybe"], "EVAL_JUDGE"),
])
def test_eval_with_a_judge_it_cannot_use_is_one_line_and_exit_2(args, said, tmp_path):
    res = CliRunner().invoke(app, ["eval", "--dataset", str(dataset(tmp_path)), "--out", str(tmp_path / "run"), *args])
    assert res.exit_code == 2 and said in res.output and "Traceback" not in res.output
    assert not (tmp_path / "run" / "results.jsonl").exists()


def test_the_judge_grades_by_its_reply_and_the_prompt_carries_the_case(settings):
    with FaultServer(reply='{"score": 0, "explanation": "It picks the other option."}') as server:
        j, usage = _judged(settings, server.url, "Mahesh Bhupathi is older than Ferdi Taygan.")
        assert (j.label, j.rule) == ("incorrect", "llm_judge") and usage["eval_judge"]["calls"] == 1
        prompt = server.requests[0]["prompt"]
        assert "Ground truth: Ferdi Taygan" in prompt and f"Question: {CHOICE}" in prompt and '{"score"' in prompt
    with FaultServer(reply='{"explanation": "wait", "score": 0} no: {"score": 1, "explanation": "right"}') as server:
        j, _ = _judged(settings, server.url, "Taygan is the older of the two.")
        assert (j.label, j.rule) == ("accurate", "llm_judge")  # the last score, as CRAG reads a reply that corrects itself


def test_what_the_protocol_decides_without_the_judge_never_calls_it(settings):
    with FaultServer(reply='{"score": 1}') as server:
        assert _judged(settings, server.url, "ferdi taygan")[0].rule == "exact"
        assert _judged(settings, server.url, "I don't know.", refused=True)[0].label == "missing"
        assert _judged(settings, server.url, "It is Taygan.", gold="i don't know")[0].label == "incorrect"
        assert _judged(settings, server.url, "There is no such album.", gold="invalid question",
                       question="What is Taylor Swift's rap album?")[0].rule == "false_premise"
        assert server.requests == []


def test_a_judge_that_cannot_grade_leaves_the_answer_unjudged_never_accurate(settings):
    with FaultServer(reply="Looks right to me.") as server:  # no score in the reply
        assert _judged(settings, server.url, "Taygan is older.")[0].label == "unjudged"
    assert _judged(settings, refused_url(), "Taygan is older.")[0].label == "unjudged"  # the endpoint is down
    assert reply_score('{"score": "1"}') == 1 and reply_score('{"score": 2}') is None


def test_a_run_counts_unjudged_answers_apart_and_keeps_the_rule_verdict(settings, tmp_path):
    from agentic_rag.eval.runner import run_eval

    s = settings.replace(EVAL_JUDGE="llm", EVAL_JUDGE_BASE_URL=refused_url(), EVAL_JUDGE_MODEL="judge",
                         LLM_BACKOFF_S=0.01, LLM_RETRIES=0)
    res = run_eval(dataset(tmp_path), "baseline", s, tmp_path / "run", progress=False,
                   extra_config={"llm": ScriptedChat(replies=["Finding Dory won."])})
    unjudged = [r for r in res["rows"] if r["judgement"] == "unjudged"]
    assert unjudged and all(r["rule_judgement"] in ("accurate", "incorrect") for r in unjudged)
    summary = res["summary"]
    assert summary["unjudged"] == len(unjudged) and sorted(summary["unjudged_ids"]) == sorted(r["id"] for r in unjudged)
    assert summary["n"] == len(res["rows"]) - len(unjudged)  # never scored, right or wrong
