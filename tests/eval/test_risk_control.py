"""Abstention with a stated risk (RISK): the threshold SGR certifies on calibration drafts, its promise kept
on questions like them, the promise set against what a run gave, the shift warning, and the bad input
`calibrate --risk` refuses in one line with nothing written."""

from __future__ import annotations

import hashlib
import json
import random

import pytest
from typer.testing import CliRunner

from agentic_rag.baug.fitted import DecisionFile, FittedModel, load_decision, model_key, risk_level
from agentic_rag.cli import app
from agentic_rag.eval.risk_control import (
    MIN_DRAFTS,
    Draft,
    RiskCalibrationError,
    calibrate,
    drafts_of,
    oracle_coverage,
    promise_outcome,
    realized,
    shift,
    upper_bound,
)
from testkit.fakes import ScriptedChat
from testkit.records import record, write_records
from testkit.records import toy_dataset as dataset


def _drafts(rng: random.Random, n: int, skew: float = 0.3) -> list[Draft]:
    """Drafts whose P(right) is calibrated: right with probability P; a tenth refused before a draft."""
    out = []
    for _ in range(n):
        if rng.random() < 0.1:
            out.append(Draft(None, False))
            continue
        p = rng.random() ** skew
        out.append(Draft(p, rng.random() < p))
    return out


def test_the_certified_threshold_keeps_its_promise_on_fresh_questions_like_the_calibration_set():
    """Calibrated on 400 drafts and tested on 3,000 like them, 100 times: the wrong share among the answered
    stays at most the risk far more often than 1 - delta; the coverage is near the hindsight best."""
    rng = random.Random(7)
    held, tried, ratios = 0, 0, []
    for _ in range(100):
        cal, test = _drafts(rng, 400), _drafts(rng, 3000)
        for alpha in (0.2, 0.3):
            level = calibrate(cal, alpha, 0.1)
            got = realized(test, level["threshold"], alpha)
            held += got["held"]
            tried += 1
            ratios.append(got["coverage"] / oracle_coverage(test, got["risk"]))
            assert level["bound"] <= alpha and level["risk"] <= level["bound"]
    assert held / tried >= 0.9 and min(ratios) > 0.9


def test_a_higher_risk_answers_more_and_a_stricter_one_may_be_out_of_reach():
    cal = _drafts(random.Random(1), 400)
    low, high = calibrate(cal, 0.2, 0.1), calibrate(cal, 0.3, 0.1)
    assert high["threshold"] <= low["threshold"] and high["coverage"] >= low["coverage"]
    with pytest.raises(RiskCalibrationError, match="no threshold keeps the wrong share at most 0.01"):
        calibrate(cal, 0.01, 0.1)
    assert upper_bound(0, 30, 0.1) == pytest.approx(1 - 0.1 ** (1 / 30))  # the exact binomial bound with nothing wrong


@pytest.mark.parametrize("drafts, said", [
    ([Draft(0.9, True)] * (MIN_DRAFTS - 1), "a bound needs at least"),
    ([Draft(0.9, False)] * 50, "no calibration draft is right"),
])
def test_a_set_that_cannot_support_a_promise_is_refused(drafts, said):
    with pytest.raises(RiskCalibrationError, match=said):
        calibrate(drafts, 0.2, 0.1)


def test_the_shift_test_fires_on_another_distribution_or_an_uncalibrated_type_and_not_on_the_same():
    rng = random.Random(3)
    same = shift([rng.random() for _ in range(200)], [rng.random() for _ in range(300)], {"simple"}, {"simple", "bridge"})
    moved = shift([rng.random() ** 4 for _ in range(200)], [rng.random() for _ in range(300)], {"simple"}, {"simple"})
    new_type = shift([rng.random() for _ in range(200)], [rng.random() for _ in range(300)], {"comparison"}, {"simple"})
    assert not same["fires"] and moved["fires"] and moved["p_value"] < 0.01
    assert new_type["fires"] and new_type["types_not_calibrated"] == ["comparison"]


def _decision(settings, path):
    model = FittedModel("logistic", ["overlap_est"], [0.5], {"mean": [0.5], "scale": [1.0], "coef": [4.0], "intercept": 0.0})
    path.write_text(json.dumps(DecisionFile(model_key(settings), settings.llm.LLM_BACKEND, ["overlap_est"], model).to_dict()))
    return path


def _calibration_run(settings, tmp_path, decision):
    """An agent run folder made under ``decision``: 150 questions, each with its draft's P(right); the right
    right above P 0.35, a fifth unanswerable and answered (wrong), a few refused before any draft."""
    from agentic_rag.eval.runner import run_eval

    run = tmp_path / "calrun"
    run_eval(dataset(tmp_path, 2), "baseline", settings, run, progress=False,
             extra_config={"llm": ScriptedChat(replies=["Finding Nemo won."])})
    template = json.loads((run / "results.jsonl").read_text().splitlines()[0])
    rng, rows = random.Random(5), []
    for i in range(150):
        p = round(rng.random(), 4)
        right = p > 0.35 and i % 5
        row = {**template, "id": f"cal-{i}", "status": "ok", "p_right": p, "question_type": "simple",
               "gold": "finding nemo" if i % 5 else "i don't know", "judgement": "accurate" if right else "incorrect",
               "events": [{"node": "decide", "decision": {"action": "STOP", "reason": "STOP_FITTED", "p_right": p}}]}
        if i % 17 == 0:
            row.update(status="refuse", reason="ABSTAIN_NO_EVIDENCE", judgement="missing", events=[])
        rows.append(row)
    (run / "results.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    (run / "telemetry.jsonl").unlink(missing_ok=True)
    config = json.loads((run / "config.json").read_text())
    config.update(system="agent", decision={"path": str(decision), "sha256": hashlib.sha256(decision.read_bytes()).hexdigest()})
    (run / "config.json").write_text(json.dumps(config))
    return run, rows


def test_calibrate_risk_on_a_run_stores_a_threshold_per_risk_that_a_run_then_promises(settings, tmp_path):
    decision = _decision(settings, tmp_path / "d.json")
    run, rows = _calibration_run(settings, tmp_path, decision)
    out = tmp_path / "risked.json"
    over = ["-o", f"DECISION_FILE={decision}", "-o", "GATE_POLICY=fitted"]
    res = CliRunner().invoke(app, ["calibrate", "--risk", "0.4,0.5", "--run", str(run), "--decision-file", str(out), *over])
    assert res.exit_code == 0, res.output
    stored = load_decision(out)
    level = risk_level(stored, 0.4)
    assert level["delta"] == 0.1 and level["n"] == 150 and 0 < level["threshold"] < 1 and level["bound"] <= 0.4
    refused = sum(r["status"] != "ok" for r in rows)
    assert level["calibration"]["questions"] == 150 and len(level["calibration"]["p_right"]) == 150 - refused
    assert risk_level(stored, 0.5)["threshold"] <= level["threshold"]
    # the same questions under that promise: wrong among answered, coverage, held, no shift
    drafts = drafts_of(rows, {r["id"]: r["p_right"] for r in rows if r["status"] == "ok"}, 0.5)
    answered = [r for r, d in zip(rows, drafts) if d.p is not None and d.p >= level["threshold"]]
    kept = [{**r, "status": "ok" if r in answered else "refuse"} for r in rows]
    outcome = promise_outcome(kept, {"alpha": 0.4, **level})
    assert outcome["answered"] == len(answered) and outcome["held"] == (outcome["risk"] <= 0.4)
    assert outcome["shift"]["fires"] is False and "at most 40% of shown answers wrong" in outcome["line"]


def test_a_run_made_under_another_decision_is_refused_for_calibration(settings, tmp_path):
    decision = _decision(settings, tmp_path / "d.json")
    run, _ = _calibration_run(settings, tmp_path, decision)
    other = _decision(settings, tmp_path / "other.json")
    other.write_text(other.read_text().replace('"intercept": 0.0', '"intercept": 1.0'))
    res = CliRunner().invoke(app, ["calibrate", "--risk", "0.3", "--run", str(run), "--out", str(tmp_path / "o"),
                                   "-o", f"DECISION_FILE={other}", "-o", "GATE_POLICY=fitted"])
    assert res.exit_code == 2 and "another decision's" in res.output and not (tmp_path / "o").exists()


@pytest.mark.parametrize("args, said", [
    (["--risk", "0"], "between 0 and 1"), (["--risk", "1.5"], "between 0 and 1"), (["--risk", "0.1", "--delta", "0"], "--delta"),
    (["--risk", "ten"], "shares of wrong answers"),
])
def test_bad_risks_are_one_line_exit_2_and_nothing_written(args, said, tmp_path):
    res = CliRunner().invoke(app, ["calibrate", *args, "--dataset", "example", "--out", str(tmp_path / "o")])
    assert res.exit_code == 2 and said in res.output and "Traceback" not in res.output
    assert not (tmp_path / "o").exists()


def test_a_calibration_set_too_small_or_with_nothing_answerable_is_refused_before_any_run(settings, tmp_path):
    decision = _decision(settings, tmp_path / "d.json")
    over = ["-o", f"DECISION_FILE={decision}", "-o", "GATE_POLICY=fitted"]
    small = CliRunner().invoke(app, ["calibrate", "--risk", "0.2", "--dataset", str(dataset(tmp_path)), "--out",
                                     str(tmp_path / "a"), *over])
    assert small.exit_code == 2 and f"at least {MIN_DRAFTS}" in small.output and not (tmp_path / "a").exists()
    recs = []
    for i in range(MIN_DRAFTS + 5):
        r = record()
        r.interaction_id, r.answer = f"u-{i}", "i don't know"
        recs.append(r)
    write_records(recs, tmp_path / "unanswerable.jsonl")
    none = CliRunner().invoke(app, ["calibrate", "--risk", "0.2", "--dataset", str(tmp_path / "unanswerable.jsonl"),
                                    "--out", str(tmp_path / "b"), *over])
    assert none.exit_code == 2 and "no answerable question" in none.output and not (tmp_path / "b").exists()
