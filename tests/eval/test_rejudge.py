"""A committed run restored into a run folder and judged again by today's judge, with no model call; its
fitted P(right) read back from its rows where the run left no telemetry."""

from __future__ import annotations

import gzip
import hashlib
import json

from agentic_rag.baug.fitted import DECISIONS_DIR, PREVIOUS_DECISIONS_DIR, load_decision
from agentic_rag.eval.frontier import p_right_by_question
from agentic_rag.eval.rejudge import rejudge_run, restore_run
from testkit.fakes import ScriptedChat
from testkit.records import QUOTE_2004
from testkit.records import toy_dataset as dataset

SHIPPED = DECISIONS_DIR / "decision-qwen2.5-coder-1.5b.json"


def _committed(tmp_path, settings):
    """A finished toy run written as a benchmark commits it: gzipped rows beside config and summary."""
    from agentic_rag.eval.runner import run_eval

    run = tmp_path / "run"
    fake = ScriptedChat(replies=[f'Finding Nemo won {{cite:76th academy}} "{QUOTE_2004}".'])
    run_eval(dataset(tmp_path), "baseline", settings, run, n=2, progress=False, extra_config={"llm": fake})
    committed = tmp_path / "committed"
    committed.mkdir()
    rows = [json.loads(line) for line in (run / "results.jsonl").read_text().splitlines()]
    return run, committed, rows


def _commit(committed, rows, run):
    (committed / "baseline_results.jsonl.gz").write_bytes(
        gzip.compress("".join(json.dumps(r) + "\n" for r in rows).encode()))
    for name in ("config.json", "summary.json"):
        (committed / f"baseline_{name}").write_bytes((run / name).read_bytes())


def test_a_committed_run_judged_by_an_older_rule_is_scored_again_from_its_rows(tmp_path, settings):
    run, committed, rows = _committed(tmp_path, settings)
    # the answer names both options and picks the other: an older judge's `contains` found it accurate
    rows[0].update(query="Who is older, Ferdi Taygan or Mahesh Bhupathi?", gold="Ferdi Taygan", alternatives=[],
                   prediction="Mahesh Bhupathi is older than Ferdi Taygan.", status="ok",
                   judgement="accurate", judge_rule="contains", score=1)
    _commit(committed, rows, run)
    restored = restore_run(committed, "baseline", tmp_path / "restored")
    summary, changed = rejudge_run(restored)
    assert changed == 1
    again = [json.loads(line) for line in (restored / "results.jsonl").read_text().splitlines()]
    assert (again[0]["judgement"], again[0]["judge_rule"], again[0]["score"]) == ("incorrect", "choice_other", -1)
    assert again[0]["short_answer"] == "Mahesh Bhupathi"
    assert summary["n"] == 2 and summary["score"] == sum(r["score"] for r in again) / 2
    assert f"| score | {summary['score']} |" in (restored / "report.md").read_text()  # the report follows


def test_restoring_a_run_that_was_not_committed_names_the_missing_file(tmp_path):
    import pytest

    with pytest.raises(FileNotFoundError, match="agent_results.jsonl.gz is not committed"):
        restore_run(tmp_path, "agent", tmp_path / "out")


def test_p_right_is_read_back_from_the_rows_where_the_run_left_no_telemetry(tmp_path, settings):
    run, committed, rows = _committed(tmp_path, settings)
    signals = {"overlap_est": 1.0, "faith_est": 1.0, "answer_relevance": 0.8, "anchor_coverage": 1.0,
               "answerability": 0.7, "lp_mean": -0.3, "lp_min": -1.5, "p_first": 0.4, "hops_found": 1.0}
    fitted = {"node": "decide", "decision": {"action": "STOP", "reason": "STOP_FITTED"}}
    rows[0].update(signals=signals, events=[fitted])  # an older row: its decide event kept no P
    rows[1].update(events=[{"node": "decide", "decision": {"action": "STOP", "reason": "STOP_FITTED", "p_right": 0.61}}])
    _commit(committed, rows, run)
    restored = restore_run(committed, "baseline", tmp_path / "restored")
    config = json.loads((restored / "config.json").read_text())
    config["decision"] = {"path": "/elsewhere/" + SHIPPED.name, "sha256": hashlib.sha256(SHIPPED.read_bytes()).hexdigest()}
    (restored / "config.json").write_text(json.dumps(config))
    want = round(load_decision(SHIPPED).base.probability(signals), 4)
    assert p_right_by_question(restored) == {rows[0]["id"]: want, rows[1]["id"]: 0.61}
    # another decision file than the run read gives no replayed P: only what the rows kept
    config["decision"]["sha256"] = "0" * 64
    (restored / "config.json").write_text(json.dumps(config))
    assert p_right_by_question(restored) == {rows[1]["id"]: 0.61}
    # a run made under a decision a refit replaced replays it from the previous decisions it was moved to
    (replaced,) = PREVIOUS_DECISIONS_DIR.glob(SHIPPED.name.removesuffix(".json") + ".*.json")
    config["decision"]["sha256"] = hashlib.sha256(replaced.read_bytes()).hexdigest()
    (restored / "config.json").write_text(json.dumps(config))
    old = round(load_decision(replaced).base.probability(signals), 4)
    assert old != want and p_right_by_question(restored) == {rows[0]["id"]: old, rows[1]["id"]: 0.61}


def test_the_rejudge_command_says_what_changed_and_refuses_a_folder_in_use(tmp_path, settings):
    from typer.testing import CliRunner

    from agentic_rag.cli import app
    from agentic_rag.eval.lock import RunLock

    run, committed, rows = _committed(tmp_path, settings)
    rows[0].update(query="Which is older, Pistacia or Dracula?", gold="Dracula", alternatives=[], status="ok",
                   prediction="Pistacia is older than Dracula.", judgement="accurate", judge_rule="contains", score=1)
    _commit(committed, rows, run)
    restored = restore_run(committed, "baseline", tmp_path / "restored")
    res = CliRunner().invoke(app, ["rejudge", str(restored)])
    assert res.exit_code == 0 and "1 judgements changed" in res.output
    missing = CliRunner().invoke(app, ["rejudge", str(tmp_path / "nothing")])
    assert missing.exit_code == 2 and "not a finished run folder" in missing.output and "Traceback" not in missing.output
    held = RunLock(restored).acquire()
    try:
        busy = CliRunner().invoke(app, ["rejudge", str(restored)])
    finally:
        held.release()
    assert busy.exit_code == 2 and "in use" in busy.output
