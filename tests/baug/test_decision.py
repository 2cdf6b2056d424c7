"""Signals every backend can give (token log-probabilities, the verifier's P(yes) from top_logprobs) and
the fitted decision: fitting on synthetic signals, the cut a wrong answer's cost implies, refusals of a
split too small or one-sided and of a decision for another model, and BAUG's routing under it."""

from __future__ import annotations

import json
import math
import random
from pathlib import Path

import numpy as np
import pytest
from langchain_core.messages import HumanMessage
from typer.testing import CliRunner

from agentic_rag.baug.fitted import (
    FITTED_REASONS,
    DecisionFile,
    DecisionMismatchError,
    FittedModel,
    available_features,
    configured_decision,
    cut_for,
    decide_fitted,
    model_key,
    policy_in_force,
)
from agentic_rag.baug.policy import REASONS, Flags
from agentic_rag.cli import app
from agentic_rag.configuration import Settings
from agentic_rag.eval.provenance import model_identity
from agentic_rag.llm.choices import yes_probability
from agentic_rag.llm.factory import get_chat_model
from agentic_rag.llm.logprobs import NOT_RETURNED, RETURNED, reply_signals, request_kwargs
from agentic_rag.runner import answer
from agentic_rag.training.decision import (
    MIN_DRAFTS,
    DevSplitError,
    MonotoneLogistic,
    _boosting,
    _export,
    _matrix,
    check_split,
    draft_records,
    fit_decision,
    signal_aucs,
)
from testkit.fault_server import FaultServer
from testkit.records import QUOTE_2004, record
from testkit.scripted_runs import run

SUPPORTED = f'Finding Nemo won. {{cite:76th academy}} "{QUOTE_2004}"'
UNSUPPORTED = "It was Shrek, made by DreamWorks in 2004 {cite:76th academy}."
WEAKLY_SUPPORTED = "It was Finding Nemo, made by DreamWorks in 2004 {cite:76th academy}."  # one name of two found
LOGPROBS = {"token": -0.3, "top": {"yes": math.log(0.6), " No": math.log(0.2), "maybe": math.log(0.2)}}


# -- signals every backend can give -------------------------------------------------------------------
def remote(settings: Settings, url: str, **extra) -> Settings:
    return settings.replace(LLM_BACKEND="openai", OPENAI_BASE_URL=url, LLM_MODEL="m", LLM_TIMEOUT_S=30.0, **extra)


def test_a_server_that_returns_logprobs_gives_the_drafts_signals_and_the_verifiers_split(agent_settings):
    with FaultServer(reply=SUPPORTED, logprobs=LOGPROBS) as srv:
        s = remote(agent_settings, srv.url)
        result = answer("agent", s, record=record())
        split, _ = yes_probability([HumanMessage("Is it supported?")], s, "verify")
    assert srv.requests[0]["logprobs"] is True  # the generation call asked for them
    assert result.signals["logprobs"] == RETURNED
    assert result.signals["lp_mean"] == result.signals["lp_min"] == -0.3
    assert result.signals["p_first"] == round(math.exp(-0.3), 4)
    assert srv.requests[-1]["top_logprobs"] == 20
    assert split == pytest.approx(0.6 / 0.8, abs=1e-4)  # "yes" against " No"; "maybe" is neither choice


def test_a_server_that_ignores_logprobs_leaves_the_signals_none_and_the_run_says_so(agent_settings, tmp_path):
    from agentic_rag.eval.runner import run_eval
    from testkit.records import toy_dataset as dataset

    with FaultServer(reply="yes, " + SUPPORTED) as srv:  # as `transformers serve`: the request is ignored
        s = remote(agent_settings, srv.url)
        run = run_eval(dataset(tmp_path, n=2), "agent", s, tmp_path / "run", progress=False)
        split, _ = yes_probability([HumanMessage("Is it supported?")], s, "verify")
    signals = run["rows"][0]["signals"]
    assert signals["logprobs"] == NOT_RETURNED
    assert signals["lp_mean"] is None and signals["lp_min"] is None and signals["p_first"] is None  # not 0
    config = json.loads((tmp_path / "run" / "config.json").read_text())
    assert config["logprobs"]["status"] == "not returned"
    assert split == 1.0  # fell back to the decoded word


def test_a_backend_turned_off_is_not_asked(agent_settings):
    with FaultServer(reply=SUPPORTED, logprobs=LOGPROBS) as srv:
        s = remote(agent_settings, srv.url, REQUEST_LOGPROBS=False)
        assert request_kwargs(get_chat_model(s), s) == {}
        result = answer("agent", s, record=record())
    assert srv.requests[0]["logprobs"] is None and result.signals["lp_mean"] is None


@pytest.mark.model
def test_the_local_model_records_each_generated_tokens_log_probability(settings):
    """The recorded log-probability of the first token is the prefill's own distribution's."""
    import torch

    from agentic_rag.llm.local import _load

    model = get_chat_model(settings, max_tokens=8)
    messages = [HumanMessage("What is the capital of France? Answer in one word.")]
    kwargs = request_kwargs(model, settings)
    message = model.bind(max_tokens=8, **kwargs).invoke(messages)
    values = message.response_metadata["token_logprobs"]
    signals = reply_signals(message, kwargs)
    assert signals["logprobs"] == RETURNED and all(v <= 0 for v in values) and values
    assert signals["lp_min"] == round(min(values), 4) and signals["lp_min"] <= signals["lp_mean"]
    hf, tokenizer, _ = _load(model.model_path, model.dtype)
    inputs = model._inputs(messages)
    with torch.inference_mode():
        logits = hf(**inputs).logits[0, -1].float()
    first = tokenizer.encode(str(message.content), add_special_tokens=False)[0]
    assert values[0] == pytest.approx(float(torch.log_softmax(logits, -1)[first]), abs=0.05)
    assert len(values) <= message.usage_metadata["output_tokens"]  # the end token is not the answer


# -- fitting -----------------------------------------------------------------------------------------
def synthetic(n: int, seed: int = 0, right_share: float | None = None) -> list[dict]:
    """Drafts whose rightness follows their overlap and mean log-probability; relevance is noise."""
    rng = random.Random(seed)
    out = []
    for i in range(n):
        overlap, lp, rel = rng.random(), -3 * rng.random(), rng.random()
        p = 1 / (1 + math.exp(-(6 * (overlap - 0.5) + 2 * (lp + 1.5))))
        right = rng.random() < (p if right_share is None else right_share)
        out.append({"id": str(i), "judgement": "right" if right else "wrong", "right": right, "status": "ok",
                    "overlap_est": round(overlap, 4), "lp_mean": round(lp, 4), "answer_relevance": round(rel, 4),
                    "faith_est": None, "support_verdict": None})
    return out


def test_fitting_on_synthetic_signals_ranks_drafts_and_reproduces_sklearn(settings):
    records = synthetic(300)
    decision, oof = fit_decision(records, settings, {"model": {"model": "packaged"}})
    assert decision.features == ["overlap_est", "answer_relevance", "lp_mean"]  # faith never measured: left out
    assert decision.meta["cv"]["chosen"] in ("logistic", "boosting") and decision.meta["cv"]["why"]
    assert decision.meta["cv"]["logistic"]["auc"] > 0.8
    assert decision.model_key == model_key(settings)
    p_good = decision.base.probability({"overlap_est": 0.95, "lp_mean": -0.1, "answer_relevance": 0.5})
    p_bad = decision.base.probability({"overlap_est": 0.05, "lp_mean": -2.9, "answer_relevance": 0.5})
    assert p_good > 0.8 > 0.2 > p_bad
    contributions = decision.base.contributions({"overlap_est": 0.05, "lp_mean": -1.5, "answer_relevance": 0.5})
    assert min(contributions, key=contributions.get) == "overlap_est"
    # a decision file is plain JSON and reads back to the same probabilities
    again = DecisionFile.from_dict(json.loads(json.dumps(decision.to_dict())))
    assert again.base.probability({"overlap_est": 0.3}) == pytest.approx(decision.base.probability({"overlap_est": 0.3}))
    assert len(oof["base"]) == len(records)


def test_exported_trees_give_sklearns_probabilities():
    records = synthetic(200, seed=3)
    features = ["overlap_est", "lp_mean", "answer_relevance"]
    x, y, reference = _matrix(records, features)
    fitted = _boosting(x, y)
    model = _export("boosting", fitted, features, reference)
    ours = [1 / (1 + math.exp(-model.logit(list(row)))) for row in x[:40]]
    assert np.allclose(ours, fitted.predict_proba(x[:40])[:, 1], atol=1e-4)
    split_on = {int(f) for est in fitted.estimators_[:, 0] for f in est.tree_.feature if f >= 0}
    assert [model.reads(f) for f in features] == [i in split_on for i in range(len(features))]
    assert model.reads("overlap_est") and not model.reads("support_verdict")  # overlap drives rightness


def test_the_logistic_fit_matches_sklearn_where_free_and_never_weighs_support_against_an_answer():
    from sklearn.linear_model import LogisticRegression
    from sklearn.preprocessing import StandardScaler

    records = synthetic(300, seed=5)
    x, y, _ = _matrix(records, ["overlap_est", "lp_mean"])
    ours = MonotoneLogistic().fit(x, y)
    theirs = LogisticRegression(C=1.0).fit(StandardScaler().fit_transform(x), y)
    assert np.allclose(ours.coef_, theirs.coef_[0], atol=1e-3) and ours.intercept_ == pytest.approx(theirs.intercept_[0], abs=1e-3)
    # a near copy of overlap: left free, the pair splits into a large and a negative weight
    rng = np.random.default_rng(0)
    twin = np.column_stack([x[:, 0], x[:, 0] + 0.05 * rng.normal(size=len(y))])
    assert LogisticRegression(C=100.0).fit(StandardScaler().fit_transform(twin), y).coef_[0].min() < 0
    bounded = MonotoneLogistic(c=100.0).fit(twin, y)
    assert bounded.coef_.min() >= 0 and bounded.coef_.sum() > 1
    model = _export("logistic", bounded, ["overlap_est", "faith_est"], [0.5, 0.5])
    p = [model.probability({"overlap_est": 0.6, "faith_est": f}) for f in (0.2, 0.6, 1.0)]
    assert p[0] <= p[1] <= p[2]


def test_too_small_or_one_sided_splits_are_refused():
    with pytest.raises(DevSplitError, match=f"at least {MIN_DRAFTS}"):
        check_split(synthetic(MIN_DRAFTS - 1))
    with pytest.raises(DevSplitError, match="one-sided: 60 right and 0 wrong"):
        check_split(synthetic(60, right_share=1.0))
    check_split(synthetic(MIN_DRAFTS + 10))


def test_signal_aucs_separate_right_from_wrong_and_answerable_from_not():
    records = synthetic(200, seed=1)
    for r in records[:50]:
        r.update(judgement="unanswerable", right=False)
    aucs = signal_aucs(records)
    assert aucs["overlap_est"]["right_vs_wrong"] > 0.75 and 0.35 < aucs["answer_relevance"]["right_vs_wrong"] < 0.65
    assert aucs["faith_est"] == {"n": 0, "right_vs_wrong": None, "answerable_vs_unanswerable": None}


def test_cut_follows_the_cost_of_a_wrong_answer():
    assert cut_for(1.0) == 0.5  # CRAG's +1 / 0 / -1
    assert cut_for(3.0) == 0.75 and cut_for(1 / 3) == 0.25


# -- the fitted policy ---------------------------------------------------------------------------------
def write_decision(path: Path, settings: Settings, intercept: float, coef_overlap: float = 4.0,
                   coef_verdict: float | None = None, key: str | None = None, features=("overlap_est",)) -> Path:
    """A logistic decision on overlap (standardised around 0.5), optionally a verified model on top."""
    def logistic(feats, coefs):
        return FittedModel("logistic", list(feats), [0.5] * len(feats),
                           {"mean": [0.5] * len(feats), "scale": [1.0] * len(feats), "coef": coefs, "intercept": intercept})

    base = logistic(features, [coef_overlap] * len(features))
    verified = (logistic([*features, "support_verdict"], [coef_overlap] * len(features) + [coef_verdict])
                if coef_verdict is not None else None)
    decision = DecisionFile(key or model_key(settings), settings.llm.LLM_BACKEND, list(features), base, verified)
    path.write_text(json.dumps(decision.to_dict()))
    return path


def fitted(settings: Settings, tmp_path: Path, **kw) -> Settings:
    overrides = {k: kw.pop(k) for k in list(kw) if k.isupper()}
    return settings.replace(GATE_POLICY="fitted", DECISION_FILE=str(write_decision(tmp_path / "d.json", settings, **kw)),
                            **overrides)


def test_a_confident_draft_stops_without_the_verifier(agent_settings, tmp_path):
    s = fitted(agent_settings, tmp_path, intercept=1.0, coef_verdict=5.0, VERIFIER_ENABLED=True)
    result, fake, rows = run(s, [SUPPORTED])
    assert result.status == "ok" and result.reason == "STOP_FITTED"
    assert len(fake.calls) == 1  # P = sigmoid(1 + 4 * 0.5) is far above the cut: no verifier call
    assert rows[-1]["reason"] == "STOP_FITTED" and rows[-1]["p_right"] == round(1 / (1 + math.exp(-3.0)), 4)


def test_an_unlikely_draft_is_refused_with_the_signal_that_pulled_p_down(agent_settings, tmp_path):
    s = fitted(agent_settings, tmp_path, intercept=0.0, REFLECT_ENABLED=False)
    result, fake, _ = run(s, [WEAKLY_SUPPORTED])
    assert result.status == "refuse" and result.reason == "ABSTAIN_LOW_SUPPORT"
    assert "The fitted decision gives" in result.explanation
    assert "of its sentences matched a cited source" in result.explanation and len(fake.calls) == 1


def test_a_draft_nothing_in_the_sources_backs_is_refused_whatever_the_fitted_p(agent_settings, tmp_path):
    # a decision that reads only anchor coverage, and gives every draft P > 0.95: the supported draft stops,
    # the one with no matched sentence and no name found in its sources is refused, and says why
    s = fitted(agent_settings, tmp_path, intercept=3.0, coef_overlap=0.0, features=("anchor_coverage",),
               REFLECT_ENABLED=False)
    assert run(s, [SUPPORTED])[0].reason == "STOP_FITTED"
    result = run(s, [UNSUPPORTED])[0]
    assert result.status == "refuse" and result.reason == "ABSTAIN_LOW_SUPPORT"
    assert "0% of its sentences matched a cited source" in result.explanation
    assert "0% of its names and numbers occur in them" in result.explanation


def test_the_cost_of_a_wrong_answer_moves_the_cut(agent_settings, tmp_path):
    # P = sigmoid(-1.55 + 4 * 0.5) = 0.61: answered at CRAG's cost, refused when a wrong answer costs 3
    s = fitted(agent_settings, tmp_path, intercept=-1.55, GREY_ZONE_WIDTH=0.0)
    assert run(s, [SUPPORTED])[0].reason == "STOP_FITTED"
    refused = run(s.replace(WRONG_ANSWER_COST=3.0), [SUPPORTED])[0]
    assert refused.status == "refuse" and "more than 75%" in refused.explanation


def test_a_stated_risk_moves_the_cut_to_its_calibrated_threshold_and_says_so(agent_settings, tmp_path):
    # P = 0.61 as above; the decision file holds thresholds calibrated for the risks 0.1 (0.70) and 0.3 (0.60)
    s = fitted(agent_settings, tmp_path, intercept=-1.55, GREY_ZONE_WIDTH=0.0)
    data = json.loads(Path(s.baug.DECISION_FILE).read_text())
    data["meta"]["risk"] = {"calibration": {"dataset": "dev.jsonl", "questions": 300},
                            "levels": {"0.1": {"threshold": 0.7, "delta": 0.1}, "0.3": {"threshold": 0.6, "delta": 0.1}}}
    Path(s.baug.DECISION_FILE).write_text(json.dumps(data))
    refused = run(s.replace(RISK=0.1), [SUPPORTED])[0]
    assert refused.status == "refuse" and refused.p_right == round(1 / (1 + math.exp(1.55 - 4 * 0.5)), 4)
    assert "answering needs P(right) >= 0.70 for the 10% risk you set (RISK=0.1); this draft has 0.61" in refused.explanation
    assert run(s.replace(RISK=0.3), [SUPPORTED])[0].reason == "STOP_FITTED"
    with pytest.raises(DecisionMismatchError, match=r"no threshold calibrated for RISK=0\.2 \(it holds: 0\.1, 0\.3\)"):
        configured_decision(s.replace(RISK=0.2))
    res = CliRunner().invoke(app, ["ask", "--dataset", "example", "--id", "@1", "-o", f"DECISION_FILE={s.baug.DECISION_FILE}",
                                   "-o", "GATE_POLICY=fitted", "-o", "RISK=0.2"])
    assert res.exit_code == 2 and "no threshold calibrated for RISK=0.2" in res.output and "Traceback" not in res.output


@pytest.mark.parametrize("verdict,reason", [("yes", "STOP_FITTED"), ("no", "ABSTAIN_NOT_VERIFIED")])
def test_the_grey_zone_asks_the_verifier_once_and_its_verdict_decides(agent_settings, tmp_path, verdict, reason):
    # P = sigmoid(-2 + 4 * 0.5) = 0.5: in the grey zone; no reflection, no retrieval left: the verifier decides
    s = fitted(agent_settings, tmp_path, intercept=-2.0, coef_verdict=6.0, VERIFIER_ENABLED=True,
               VERIFIER_COMBINE="alone", REFLECT_ENABLED=False, FACTOID_ONE_SHOT_RETRIEVAL=False)
    result, fake, _ = run(s, [SUPPORTED, verdict])
    assert result.reason == reason and len(fake.calls) == 2
    assert result.signals["support_verdict"] == (1.0 if verdict == "yes" else 0.0)


def test_the_grey_zone_does_not_ask_a_verifier_whose_verdict_weighs_nothing(agent_settings, tmp_path):
    # the same grey-zone draft; the verified model gives the verdict a zero weight (as the monotone fit does
    # when it adds nothing): P cannot move, so no call is made and P = 0.5 decides (not above the cut)
    s = fitted(agent_settings, tmp_path, intercept=-2.0, coef_verdict=0.0, VERIFIER_ENABLED=True,
               VERIFIER_COMBINE="alone", REFLECT_ENABLED=False, FACTOID_ONE_SHOT_RETRIEVAL=False)
    result, fake, _ = run(s, [SUPPORTED, "yes"])
    assert len(fake.calls) == 1 and result.status == "refuse" and "support_verdict" not in result.signals
    model = FittedModel("logistic", ["overlap_est", "support_verdict"], [0.5, 0.5],
                        {"mean": [0.5, 0.5], "scale": [1.0, 1.0], "coef": [1.0, 0.0], "intercept": 0.0})
    assert model.reads("overlap_est") and not model.reads("support_verdict") and not model.reads("lp_mean")


def test_the_grey_zone_reflects_first_while_the_budget_allows(agent_settings, tmp_path):
    s = fitted(agent_settings, tmp_path, intercept=-2.0, coef_verdict=6.0, VERIFIER_ENABLED=True,
               VERIFIER_COMBINE="alone", FACTOID_ONE_SHOT_RETRIEVAL=False)
    result, fake, rows = run(s, [SUPPORTED, SUPPORTED, "yes"])
    assert [r["reason"] for r in rows][:1] == ["REFLECT_LOW_FAITH"] and result.reason == "STOP_FITTED"
    assert len(fake.calls) == 3  # draft, revision, then the verifier


def test_fitted_reason_codes_are_reachable_and_worded(settings, tmp_path):
    path = tmp_path / "d.json"
    model = FittedModel("logistic", ["lp_mean"], [-1.0], {"mean": [-1.0], "scale": [1.0], "coef": [3.0], "intercept": 0.0})
    path.write_text(json.dumps(DecisionFile(model_key(settings), "local", ["lp_mean"], model).to_dict()))
    s = settings.replace(GATE_POLICY="fitted", DECISION_FILE=str(path), REFLECT_ENABLED=False)
    flags = Flags(has_evidence=True, has_draft=True)
    base = {"overlap_est": 1.0, "faith_est": 1.0, "anchor_coverage": 1.0, "tokens_left": 2000, "stagnation": False}
    low, high = decide_fitted({**base, "lp_mean": -3.0}, flags, s), decide_fitted({**base, "lp_mean": -0.1}, flags, s)
    assert {low.reason, high.reason} == set(FITTED_REASONS) and all(r in REASONS for r in FITTED_REASONS)
    assert "mean token log-probability of -3.00" in low.explanation


def test_a_decision_for_another_model_or_feature_set_is_refused_in_one_line(settings, tmp_path):
    other = settings.replace(GATE_POLICY="fitted",
                             DECISION_FILE=str(write_decision(tmp_path / "other.json", settings, 0.0, key="f" * 64)))
    with pytest.raises(DecisionMismatchError, match="fitted for model ffff"):
        configured_decision(other)
    probe_file = write_decision(tmp_path / "probe.json", settings.replace(LLM_BACKEND="openai", LLM_MODEL="m"), 0.0,
                                features=("overlap_est", "answerability"))
    served = settings.replace(LLM_BACKEND="openai", LLM_MODEL="m", OPENAI_BASE_URL="http://127.0.0.1:9/v1",
                              GATE_POLICY="fitted", DECISION_FILE=str(probe_file))
    assert configured_decision(served).features == ["overlap_est", "answerability"]  # the packaged reader reads it behind a server
    with pytest.raises(DecisionMismatchError, match="reads answerability, which the configured backend does not give"):
        configured_decision(served.replace(PROBE_ENABLED=False))
    res = CliRunner().invoke(app, ["ask", "Who won?", "--override", "GATE_POLICY=fitted", "--override",
                                   f"DECISION_FILE={tmp_path / 'other.json'}"])
    assert res.exit_code == 2 and "fitted for model ffff" in res.output
    assert len(res.output.strip().splitlines()) == 1 and "Traceback" not in res.output
    said = {"other.json": "fitted for model ffff", "absent.json": "absent.json not found",
            "": "cannot be read (DECISION_FILE): Is a directory"}  # empty: the working directory
    for name, why in said.items():  # under GATE_POLICY=auto (the default's) too
        named = tmp_path / name if name else ""
        res = CliRunner().invoke(app, ["ask", "Who won?", "-o", "GATE_POLICY=auto", "-o", f"DECISION_FILE={named}"])
        assert res.exit_code == 2 and why in res.output, res.output
        assert len(res.output.strip().splitlines()) == 1 and "Traceback" not in res.output


# -- train decision, end to end on a run folder --------------------------------------------------------
def run_folder(path: Path, settings: Settings, n: int, one_sided: bool = False) -> Path:
    """An agent run folder whose drafts are right when their overlap is high (the gold is "Paris")."""
    rng = random.Random(7)
    path.mkdir(parents=True)
    config = {"system": "agent", "dataset": "dev.jsonl", "dataset_sha256": "0" * 64, "model": model_identity(settings)}
    (path / "config.json").write_text(json.dumps(config))
    rows = []
    for i in range(n):
        overlap = rng.random()
        right = one_sided or rng.random() < overlap
        rows.append({"id": f"q{i}", "query": "What is the capital of France?", "gold": "Paris", "alternatives": [],
                     "draft": "Paris [1]" if right else "London [1]", "status": "ok", "reason": "STOP_OVERLAP_OK",
                     "signals": {"overlap_est": round(overlap, 3), "faith_est": round(rng.random(), 3)}})
    (path / "results.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def test_calibrate_fit_writes_a_decision_the_agent_can_read(settings, tmp_path):
    s = settings.replace(VERIFIER_ENABLED=False)
    run = run_folder(tmp_path / "run", s, 80)
    out = tmp_path / "fit"
    res = CliRunner().invoke(app, ["train", "decision", "--run", str(run), "--out", str(out), "-o", "VERIFIER_ENABLED=false"])
    assert res.exit_code == 0, res.output
    assert (out / "reliability.png").stat().st_size > 0 and (out / "risk_coverage.png").stat().st_size > 0
    data = json.loads((out / "decision.json").read_text())
    assert data["features"] == ["overlap_est", "faith_est"] and data["meta"]["drafts"] == 80
    assert data["meta"]["fitted_on"]["drafts_sha256"] and data["meta"]["cv"]["why"]
    decision = configured_decision(s.replace(GATE_POLICY="fitted", DECISION_FILE=str(out / "decision.json")))
    assert decision.base.probability({"overlap_est": 0.95}) > 0.5 > decision.base.probability({"overlap_est": 0.05})
    assert len(draft_records([json.loads(x) for x in (run / "results.jsonl").read_text().splitlines()])) == 80


@pytest.mark.parametrize("n,one_sided,message", [(MIN_DRAFTS - 5, False, "drafts; a fitted decision needs at least"),
                                                 (60, True, "one-sided")])
def test_calibrate_fit_refuses_a_small_or_one_sided_split_in_one_line(settings, tmp_path, n, one_sided, message):
    run = run_folder(tmp_path / "run", settings, n, one_sided)
    res = CliRunner().invoke(app, ["train", "decision", "--run", str(run), "--out", str(tmp_path / "fit")])
    assert res.exit_code == 2 and message in res.output
    assert len(res.output.strip().splitlines()) == 1 and not (tmp_path / "fit" / "decision.json").exists()


def test_the_old_sweep_still_needs_its_options(tmp_path):
    res = CliRunner().invoke(app, ["calibrate", "--dataset", "x.jsonl"])
    assert res.exit_code == 2 and "--param" in res.output


def test_calibrate_fit_runs_the_agent_under_the_thresholds_then_judges_its_drafts(agent_settings, tmp_path):
    """The run path: one agent run on the split (hand-set thresholds, whatever GATE_POLICY says), then
    the refusal of a split too small to fit, with the run kept for a later --run."""
    from agentic_rag.training.decision import calibrate_fit
    from testkit.fakes import ScriptedChat
    from testkit.records import toy_dataset as dataset

    s = fitted(agent_settings, tmp_path, intercept=-9.0)  # a fitted policy would refuse every draft
    fake = ScriptedChat(replies=[SUPPORTED])
    with pytest.raises(DevSplitError, match="gave 3 drafts"):
        calibrate_fit(s, tmp_path / "fit", dataset(tmp_path, n=3), extra_config={"llm": fake})
    rows = [json.loads(x) for x in (tmp_path / "fit" / "run" / "results.jsonl").read_text().splitlines()]
    assert [r["reason"] for r in rows] == ["STOP_OVERLAP_OK"] * 3
    assert [r["judgement"] for r in draft_records(rows)] == ["right", "unanswerable", "right"]


def test_without_decision_file_the_packaged_models_shipped_decision_is_read(settings, tmp_path, monkeypatch):
    import agentic_rag.baug.fitted as fitted_module

    monkeypatch.setattr(fitted_module, "DECISIONS_DIR", tmp_path)
    s = settings.replace(GATE_POLICY="fitted")  # the fast preset: the packaged 0.5B
    with pytest.raises(ValueError, match="no decision ships for this model"):
        configured_decision(s)
    write_decision(tmp_path / "decision-qwen2.5-coder-0.5b.json", s, 0.0)
    assert configured_decision(s).features == ["overlap_est"]


@pytest.mark.parametrize("preset", ["default", "fast"])
def test_each_packaged_models_shipped_decision_loads_for_it(preset):
    """The decisions in agentic_rag/data/decisions are the ones the fitted policy reads for the packaged
    models with their presets: each matches its model's identity and the signals the in-process
    backend gives, so GATE_POLICY=fitted works with no DECISION_FILE."""
    s = Settings.load(preset=preset, overrides={"GATE_POLICY": "fitted"})
    decision = configured_decision(s)
    assert decision.model_key == model_key(s) and set(decision.features) <= available_features(s)
    assert "answerability" in decision.features  # the in-process probe, the strongest signal on both models


def test_the_served_packaged_models_shipped_decision_loads_by_the_name_it_is_served_as():
    """`agentic-rag serve` serves the 1.5B as its short name; with that LLM_MODEL on a server, the
    decision fitted on the served model's own signals is read: no probe, its log-probabilities instead."""
    s = Settings.load(overrides={"GATE_POLICY": "fitted", "LLM_BACKEND": "openai", "LLM_MODEL": "qwen2.5-coder-1.5b",
                                 "OPENAI_BASE_URL": "http://127.0.0.1:1/v1"})
    decision = configured_decision(s)
    assert decision.model_key == model_key(s) == "openai:qwen2.5-coder-1.5b"
    assert "answerability" not in decision.features and {"lp_mean", "lp_min"} <= set(decision.features)


def test_the_default_policy_is_the_one_measured_best_for_each_model_and_backend(tmp_path):
    """GATE_POLICY=auto: the fitted decision for the packaged 1.5B in-process (it scored at or above the
    thresholds on every test split, benchmarks/decision/policy_qwen2.5-coder-1.5b_mixed.md); the thresholds
    on a server, in the presets whose decisions were not measured against them, and where no decision
    ships or its signals are switched off; a DECISION_FILE of the user's own is read."""
    default = Settings.load(preset="default")
    assert default.baug.GATE_POLICY == "auto" and policy_in_force(default) == "fitted"
    assert [policy_in_force(Settings.load(preset=p)) for p in ("fast", "lean")] == ["thresholds", "thresholds"]
    served = default.replace(LLM_BACKEND="openai", LLM_MODEL="qwen2.5-coder-1.5b", OPENAI_BASE_URL="http://127.0.0.1:1/v1")
    assert policy_in_force(served) == "thresholds"
    assert policy_in_force(default.replace(PROBE_ENABLED=False)) == "thresholds"  # the decision reads the probe
    assert policy_in_force(default.replace(LLM_MODEL=str(tmp_path / "my-model"))) == "thresholds"
    own = default.replace(LLM_MODEL=str(tmp_path / "my-model"), DECISION_FILE=str(tmp_path / "d.json"))
    with pytest.raises(FileNotFoundError, match="d.json not found"):  # named, so its absence is an error
        policy_in_force(own)
    write_decision(tmp_path / "d.json", own, 0.0)
    assert policy_in_force(own) == "fitted"
    assert policy_in_force(default.replace(GATE_POLICY="thresholds")) == "thresholds"


def test_the_chain_is_a_feature_on_every_draft_a_one_passage_question_missing_no_hop():
    """A draft without a chain (a one-passage question) reads as missing no hop, so the fit can read the
    chain on every draft; a broken chain that pulls P down most is the refusal's reason."""
    from agentic_rag.baug.fitted import driver, feature_value

    rows = [{"id": "single", "query": "q", "gold": "a", "prediction": "a", "draft": "A.", "judgement": "right",
             "signals": {"overlap_est": 1.0}},
            {"id": "bridge", "query": "q", "gold": "a", "prediction": "b", "draft": "B.", "judgement": "wrong",
             "signals": {"overlap_est": 1.0, "hops_found": 0.5}}]
    assert [r["hops_found"] for r in draft_records(rows)] == [1.0, 0.5]
    assert feature_value({}, "overlap_est") is None  # an unmeasured signal stays unmeasured
    model = FittedModel("logistic", ["overlap_est", "hops_found"], [0.8, 0.9],
                        {"intercept": 0.0, "coef": [1.0, 2.0], "mean": [0.8, 0.9], "scale": [0.2, 0.1]})
    assert model.vector({"overlap_est": 1.0}) == [1.0, 1.0]
    assert model.probability({"overlap_est": 1.0, "hops_found": 0.5}) < 0.5 < model.probability({"overlap_est": 1.0})
    reason, why = driver(model, {"overlap_est": 1.0, "hops_found": 0.5})
    assert reason == "ABSTAIN_MISSING_HOP" and why == "the sources state only 50% of the steps its answer needs"


def test_a_refusal_never_names_a_signal_that_stands_above_the_mean_draft():
    # faithfulness weighted negatively beside overlap (correlated signals): a perfectly faithful draft's
    # faithfulness lowers the logit, but the refusal names the low overlap, never "only 100% ... occur"
    from agentic_rag.baug.fitted import driver

    model = FittedModel("logistic", ["overlap_est", "faith_est"], [0.5, 0.5],
                        {"mean": [0.5, 0.5], "scale": [0.2, 0.2], "coef": [0.3, -2.0], "intercept": 0.0})
    signals = {"overlap_est": 0.4, "faith_est": 1.0}
    assert model.contributions(signals)["faith_est"] < model.contributions(signals)["overlap_est"] < 0
    code, why = driver(model, signals)
    assert code == "ABSTAIN_LOW_SUPPORT" and why == "only 40% of its sentences matched a cited source"
