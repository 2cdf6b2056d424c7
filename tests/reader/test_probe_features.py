"""The probe's views of one prefill (training/views.py): reading, comparing and fitting a probe per view."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest

from agentic_rag.llm.local import token_span
from agentic_rag.reader.cross_encoder import join_readings
from agentic_rag.reader.probe import AnswerabilityProbe, ProbeMismatchError, ProbeSet, load_probe
from agentic_rag.reader.read import GENERATION, LOCAL, plan_for, reading_of_reply
from agentic_rag.training.fitting import VIEW_C, fit_probe
from agentic_rag.training.views import ensembles, feature_sets
from testkit import REPO
from testkit.fakes import ScriptedChat

ROOT = REPO


def test_token_span_keeps_only_tokens_inside_the_characters():
    offsets = [(0, 0), (0, 5), (5, 9), (9, 12), (12, 20)]
    assert token_span(offsets, 5, 12) == (2, 4)
    with pytest.raises(ValueError, match="no token"):
        token_span(offsets, 20, 30)


def _views(n: int, signal: float, rng: np.random.Generator) -> dict[str, np.ndarray]:
    y = np.arange(n) % 2
    views = {v: rng.normal(size=(n, 5, 8)).astype(np.float16) for v in ("last", "evidence", "question")}
    views["evidence"][:, 3, 0] += (signal * y).astype(np.float16)  # only the pooled evidence view carries the label
    return {**views, "y": y, "ids": np.array([f"q{i}" for i in range(n)]), "groups": np.array([f"g{i // 2}" for i in range(n)]),
            "sources": np.array(["a"] * n), "prompt_tokens": np.full(n, 100), "ms": np.full(n, 50)}


@pytest.mark.system  # starts a child process
def test_compare_ranks_the_feature_set_that_carries_the_signal(tmp_path):
    from studies.feature_report import compare_views, features_table

    rng = np.random.default_rng(0)
    report = compare_views(_views(120, 3.0, rng), {"test": _views(60, 3.0, rng)}, layer=3, c_grid=[1.0, 0.01])
    sets = report["feature_sets"]
    assert set(sets) == {k for k in feature_sets(3, 4) if "draft" not in k} | set(ensembles(3))
    assert report["not_compared"] == [k for k in feature_sets(3, 4) if "draft" in k]
    assert sets["evidence@3"]["cv_auc"] > 0.9 and sets["evidence@3"]["auc_test"] > 0.9
    assert sets["last@3"]["auc_test"] < 0.75 and sets["question@3"]["cv_auc"] < 0.75
    joined = sets["last@3 + question@3, mean logit"]
    assert joined["features"] == 16 and joined["cv_auc"] < 0.75  # neither member carries the signal
    gain = sets["evidence@3"]["vs_base"]["test"]
    assert gain["ci95_low"] > 0.1 and "vs_base" not in sets["last@3"]  # measured against the shipped view
    assert "| evidence@3 | 8 | 1.0 |" in features_table(report, ["test"])
    bad = subprocess.run([sys.executable, str(ROOT / "scripts" / "compare_probe_features.py"), "compare",
                          "--train", str(tmp_path / "none")], capture_output=True, text=True, check=False)
    assert bad.returncode == 1 and bad.stderr.strip().count("\n") == 0 and "no views" in bad.stderr


def test_auc_difference_is_paired_and_its_interval_holds_the_noise():
    from agentic_rag.training.probe_report import auc_difference

    rng = np.random.default_rng(0)
    y = np.arange(200) % 2
    noisy = y + rng.normal(scale=2.0, size=200)
    same = auc_difference(y, noisy, noisy)
    assert same == {"diff": 0.0, "ci95_low": 0.0, "ci95_high": 0.0}
    better = auc_difference(y, noisy, y + rng.normal(scale=0.5, size=200))
    assert better["diff"] > 0.2 and 0 < better["ci95_low"] < better["diff"] < better["ci95_high"]
    close = auc_difference(y, noisy, noisy + rng.normal(scale=0.3, size=200))
    assert close["ci95_low"] < 0 < close["ci95_high"]


def _layered(n: int, signal: float, rng: np.random.Generator, multi_hop: int = 0) -> dict[str, np.ndarray]:
    """A collection of layer 18 only (as the training job keeps it), whose last view carries the label
    with ``signal``: [rows, 1, hidden] per view."""
    y = np.arange(n) % 2
    views = {v: rng.normal(size=(n, 1, 8)).astype(np.float16) for v in ("last", "question")}
    views["last"][:, 0, 0] += (signal * y).astype(np.float16)
    sources = np.array(["hotpotqa"] * multi_hop + ["squad2"] * (n - multi_hop))
    return {**views, "y": y, "ids": np.array([f"q{i}" for i in range(n)]), "groups": np.array([f"g{i}" for i in range(n)]),
            "sources": sources, "layers": np.array([18]), "n_layers": np.array(28), "dtype": np.array("float32")}


def test_the_split_learning_curve_steps_to_the_full_size_and_says_where_it_flattens(tmp_path):
    from studies.probe_curve import curve_table, flattens_at, plot_curve, sizes_for, split_curve

    assert sizes_for(3000, 400) == [400, 800, 1600, 3000] and sizes_for(300, 400) == [300]
    assert sizes_for(3350, 400) == [400, 800, 1600, 3350]  # no last step of 150 rows that must read as flat
    rng = np.random.default_rng(1)
    train, test = _layered(1600, 1.0, rng, multi_hop=200), _layered(400, 1.0, rng)
    baseline = {"test": rng.normal(size=400) + 0.5 * test["y"]}
    report = split_curve(train, {"test": test}, 18, sizes=[100, 400, 1600], draws=2, baseline=baseline)
    points = report["readers"]["last@18"]["test"]["points"]
    assert [p["rows"] for p in points] == [100, 400, 1600] and report["multi_hop_rows"] == 200
    assert points[-1]["auc"] > 0.7 and points[-1]["ci95"][0] < points[-1]["auc"] < points[-1]["ci95"][1]
    assert "step" not in points[0] and set(points[1]["step"]) == {"diff", "ci95_low", "ci95_high"}
    assert points[-1]["vs_shipped"]["diff"] > 0  # the signal is stronger than the baseline's
    assert report["shipped"]["test"]["auc"] < points[-1]["auc"]
    table = curve_table(report)
    assert "| last@18 | 1600 |" in table and "| shipped probe | - |" in table and "- last@18: test:" in table
    assert f"- last@18 at 1600 rows against the shipped probe (paired 95% interval): test {points[-1]['vs_shipped']['diff']:+.3f}" in table
    assert plot_curve(report, tmp_path / "curve.png").stat().st_size > 1000
    # where it flattens: the first size after which no step gains beyond its interval
    gain = {"step": {"ci95_low": 0.01}}
    flat = {"step": {"ci95_low": -0.01}}
    assert flattens_at([{"rows": 1}, {"rows": 2, **gain}, {"rows": 4, **flat}, {"rows": 8, **flat}]) == 2
    assert flattens_at([{"rows": 1}, {"rows": 2, **flat}, {"rows": 4, **gain}]) is None


def test_a_reader_per_route_reads_a_signal_whose_sign_the_route_flips(tmp_path):
    from studies.probe_routes import route_report, routes_table

    rng = np.random.default_rng(3)
    train, test = _layered(600, 2.0, rng, multi_hop=300), _layered(200, 2.0, rng, multi_hop=100)
    for views in (train, test):  # on multi-hop rows the same feature points the other way: one reader reads neither
        hop = views["sources"] == "hotpotqa"
        views["last"][hop, 0, 0] = (-views["last"][hop, 0, 0].astype(np.float32) + 2.0).astype(np.float16)
    route = {"one": np.full(600, "all"), "by route": np.where(train["sources"] == "hotpotqa", "multi", "single")}
    test_route = {"test": {"one": np.full(200, "all"), "by route": np.where(test["sources"] == "hotpotqa", "multi", "single")}}
    report = route_report(train, route, {"test": test}, test_route)
    one, routed = report["routings"]["one"], report["routings"]["by route"]
    assert routed["routes"] == {"multi": 300, "single": 300}
    assert routed["out_of_fold"]["all"] > 0.8 > one["out_of_fold"]["all"]
    assert routed["out_of_fold_vs_one"]["hotpotqa"]["ci95_low"] > 0 and "out_of_fold_vs_one" not in one
    assert routed["test"]["test"]["auc"] > 0.8 > one["test"]["test"]["auc"] and routed["test"]["test"]["vs_one"]["diff"] > 0
    table = routes_table(report)
    assert table.count("\n| ") == 2 and f"| by route | multi: 300, single: 300 | {routed['out_of_fold']['all']:.3f}, +" in table
    with pytest.raises(ValueError, match="no training row is routed to 'other'"):
        route_report(train, {"one": route["one"]}, {"test": test}, {"test": {"one": np.full(200, "other")}})



def test_the_routes_read_each_rows_plan_from_its_question():
    from studies.probe_routes import plan_routes
    from testkit.chains import BRIDGE_Q, COMPARE_Q

    views = _layered(4, 1.0, np.random.default_rng(5), multi_hop=2)
    asked = {"q0": BRIDGE_Q, "q1": COMPARE_Q, "q2": "When was the Eiffel Tower built?", "q3": "Who wrote Hamlet?"}
    train_routes, eval_routes = plan_routes(views, {"test": views}, asked)
    assert list(train_routes["a reader per hop plan"]) == ["multi-hop", "multi-hop", "single", "single"]
    assert list(train_routes["a reader per source (not known at run time)"]) == ["hotpotqa", "hotpotqa", "other", "other"]
    assert set(train_routes["one reader"]) == {"all"} and set(eval_routes["test"]) == {"one reader", "a reader per hop plan"}
    with pytest.raises(ValueError, match=r"no question in the draws or splits named for 1 of 4 views \(first: q3\)"):
        plan_routes(views, {}, {k: v for k, v in asked.items() if k != "q3"})


def test_a_probe_fitted_on_some_layers_reads_the_layer_it_was_fitted_on():
    views = _layered(200, 2.0, np.random.default_rng(2))
    probe, report = fit_probe(views["last"], views["y"], [str(g) for g in views["groups"]], "key", collected=[18])
    assert probe.layer == 18 and report["chosen_layer"] == 18 and probe.meta["cv_auc"] > 0.8
    with pytest.raises(ValueError, match=r"layers \[12\] were not collected"):
        fit_probe(views["last"], views["y"], [str(g) for g in views["groups"]], "key", layers=[12], collected=[18])


def test_packing_keeps_each_value_within_half_a_step_of_its_chunks_scale():
    from agentic_rag.training.views import pack

    rng = np.random.default_rng(3)
    chunk = rng.normal(size=(25, 1, 64)).astype(np.float32) * rng.uniform(0.1, 30, size=64).astype(np.float32)
    codes, lo, step = pack(chunk)
    assert codes.dtype == np.uint8 and lo.shape == step.shape == (1, 64)
    assert np.abs(lo + step * codes - chunk).max() <= step.max() / 2 + 1e-5
    # the rounding is small against each dimension's spread: a standardised linear probe cannot tell it apart
    assert (step / 2 / chunk.std(axis=0)).max() < 0.01
    one, lo1, step1 = pack(chunk[:1])  # a chunk of one row keeps it as it is
    assert np.allclose(lo1 + step1 * one, chunk[:1], atol=1e-6)


def test_train_probe_on_a_views_folder_writes_a_probe_per_view_joined_as_one_set(tmp_path, monkeypatch):
    """``agentic-rag train probe --views last,question``: one probe per view at the layer the first picks, each
    with its view's C, saved as one set file that reads both views; its out-of-fold AUC is the joined
    reading's. Only the question view carries the label here, so the set beats the last view alone."""
    import json
    import runpy

    from typer.testing import CliRunner

    from agentic_rag.cli import app

    rng = np.random.default_rng(4)
    views = _layered(240, 0.0, rng)
    views["question"][:, 0, 1] += (2.5 * views["y"]).astype(np.float16)
    folder = tmp_path / "views"
    folder.mkdir()
    np.savez(folder / "chunk_0000.npz", **views, model_key=np.array("k" * 64), packed=np.array(False),
             prompt_tokens=np.full(240, 100), ms=np.full(240, 50))

    def train(*args: str):
        return CliRunner().invoke(app, ["train", "probe", "--views-from", str(folder), *args])

    def fit(views_asked: str, exclude: tuple[str, ...] = ()) -> dict:
        out, report = tmp_path / f"{views_asked}.json", tmp_path / f"{views_asked}_report.json"
        done = train("--views", views_asked, "--out", str(out), "--report", str(report),
                     *(a for e in exclude for a in ("--exclude", e)))
        assert done.exit_code == 0, done.output
        return {**json.loads(report.read_text()), "probe": load_probe(out)}

    both, last = fit("last,question"), fit("last")
    assert isinstance(both["probe"], ProbeSet) and both["probe"].views == ("last", "question")
    assert [m.meta["c"] for m in both["probe"].members] == [VIEW_C["last"], VIEW_C["question"]]
    assert both["probe"].layer == 18 and last["probe"].views == ("last",)
    assert both["probe"].meta["trained_by"] == "agentic-rag train"
    assert both["oof_auc"] > 0.8 > 0.65 > last["oof_auc"]
    # a decision fit's dev questions are left out, with each of their variants ("q3-answerable" is question q3)
    from agentic_rag.datasets.crag import write_records
    from testkit.records import record

    write_records([record().model_copy(update={"interaction_id": f"q{i}-answerable"}) for i in range(20)], tmp_path / "dev.jsonl")
    assert fit("last", exclude=(str(tmp_path / "dev.jsonl"),))["n"] == 220
    # a bad option or folder is one line with exit 2, nothing written
    for args, said in ((["--views", "evidence"], "--views takes comma-separated names of last, question"),
                       (["--layers", "x"], "--layers takes comma-separated whole numbers"),
                       (["--layers", "7", "--out", str(tmp_path / "x.json")], "layers [7] were not collected")):
        bad = train(*args)
        assert bad.exit_code == 2 and said in bad.output and "Traceback" not in bad.output
    empty = CliRunner().invoke(app, ["train", "probe", "--views-from", str(tmp_path / "nowhere")])
    assert empty.exit_code == 2 and "is not a views folder" in empty.output
    assert not (tmp_path / "x.json").exists()
    # without --out a probe goes to the shipped file of the model its states came from, and to none for a model
    # that ships no probe (the default once wrote the 0.5B's file whatever model the states were read from)
    report = ["--report", str(tmp_path / "r.json")]
    unshipped = train(*report)
    assert unshipped.exit_code == 2 and "a model that ships no probe: give --out" in unshipped.output
    from agentic_rag.llm.packaged import DEFAULT_MODEL

    np.savez(folder / "chunk_0000.npz", **views, model_key=np.array(DEFAULT_MODEL.sha256), packed=np.array(False),
             prompt_tokens=np.full(240, 100), ms=np.full(240, 50))
    monkeypatch.setattr("agentic_rag.reader.probe.PROBES_DIR", tmp_path / "probes")
    assert train(*report).exit_code == 0
    assert load_probe(tmp_path / "probes" / DEFAULT_MODEL.probe_file).model_key == DEFAULT_MODEL.sha256
    # the learning curve from the same folder, set against the probe just fitted: its JSON, and its table under
    # the command that regenerates it
    script = str(ROOT / "scripts" / "study_probe.py")
    curve_out = tmp_path / "curve.json"
    monkeypatch.setattr(sys, "argv", [script, "curve", "--train", str(folder), "--eval", f"test={folder}", "--draws", "1",
                                      "--probe", str(tmp_path / "last.json"), "--out", str(curve_out)])
    with pytest.raises(SystemExit) as ended:
        runpy.run_path(script, run_name="__main__")
    assert not ended.value.code and json.loads(curve_out.read_text())["eval_rows"] == {"test": 240}
    md = curve_out.with_suffix(".md").read_text()
    assert md.startswith("# The answerability probe's learning curve\n\nEach reader fitted on growing random subsets of the 240")
    assert f"Generated by `python scripts/study_probe.py curve --train {folder} --eval test={folder}`.\n\n| reader |" in md
    assert "| shipped probe | - |" in md and curve_out.with_suffix(".png").stat().st_size > 1000


def test_a_probe_set_reads_each_view_with_its_own_probe_and_joins_them_by_mean_logit(tmp_path):
    """A probe per view of one prefill (the last token's state, the question tokens' mean), one file: its
    reading is the mean logit of its members' readings, as two readers join; a set of mixed layers or
    models, or one view twice, is no set."""
    rng = np.random.default_rng(5)
    views = _layered(160, 2.0, rng)
    y, groups = views["y"], [str(g) for g in views["groups"]]
    last, _ = fit_probe(views["last"], y, groups, "a" * 64, collected=[18])
    question, _ = fit_probe(views["question"], y, groups, "a" * 64, collected=[18], view="question")
    both = load_probe(ProbeSet([last, question], {"trained_by": "test"}).save(tmp_path / "set.json"))
    assert isinstance(both, ProbeSet) and both.views == ("last", "question") and both.layer == 18
    states = {"last": views["last"][0, 0].tolist(), "question": views["question"][0, 0].tolist()}
    assert both.read(states) == pytest.approx(join_readings(last.score(states["last"]), question.score(states["question"])),
                                              abs=1e-4)
    assert last.read(states) == pytest.approx(last.score(states["last"]))
    both.check_model("a" * 64, 8)
    with pytest.raises(ProbeMismatchError):
        both.check_model("b" * 64, 8)
    with pytest.raises(ValueError, match="one model, layer"):
        ProbeSet([last, AnswerabilityProbe(**{**question.to_dict(), "layer": 12})])
    with pytest.raises(ValueError, match="each view once"):
        ProbeSet([last, last])
    with pytest.raises(ValueError, match="reads one of"):
        AnswerabilityProbe(**{**last.to_dict(), "view": "draft"})


@pytest.mark.model
def test_real_model_question_view_is_read_from_the_generation_call_and_a_local_prefill_as_training_read_it(
        settings, tmp_path):
    """A probe set that reads the question view gets it from the answer call's own prefill (and from the
    packaged reader's, for a served generator): the mean state over the question's tokens, the very vector
    the training views hold for that prompt."""
    from agentic_rag.llm.calls import call_model
    from agentic_rag.llm.factory import get_chat_model
    from agentic_rag.prompts import messages_for
    from agentic_rag.reader.read import read_prompt
    from agentic_rag.training.views import prefill_states

    shipped = load_probe(None)
    question_probe = AnswerabilityProbe(**{**shipped.to_dict(), "view": "question"})
    path = ProbeSet([shipped, question_probe]).save(tmp_path / "set.json")
    on = settings.replace(PROBE_PATH=str(path))
    model = get_chat_model(on, max_tokens=2)
    plan = plan_for(model, on)
    assert plan.how == GENERATION and plan.views == ("last", "question")
    sources, question = "[1] Paris\nParis is the capital of France.", "What is the capital of France?"
    messages = messages_for("answer", sources=sources, question=question, query_time="unknown")
    message, _ = call_model(messages, on.model_copy(update={"MAX_OUTPUT_TOKENS": 2}), "generation", model,
                            **plan.call_kwargs(question))
    trained = prefill_states(model, messages, question, sources, layers=(plan.layer,))
    got = message.response_metadata["prompt_state"]
    for key, view in (("state", "last"), ("question_state", "question")):
        want = trained[view][0].astype(np.float32)
        assert np.allclose(np.array(got[key]), want, atol=0.02 * np.abs(want).max()), view
    reading = reading_of_reply(message, plan)
    expected = join_readings(shipped.score(got["state"]), question_probe.score(got["question_state"]))
    assert reading["status"] == "scored" and reading["answerability"] == pytest.approx(expected, abs=1e-3)
    # a reply without the question's state is no reading of this set
    assert reading_of_reply(model.invoke(messages, prompt_state_layer=plan.layer, max_tokens=1), plan)["status"] == "unavailable"
    # the packaged reader of a served 0.5B reads the same two views from its own prefill
    served = on.replace(LLM_BACKEND="openai", LLM_MODEL="qwen2.5-coder-0.5b", OPENAI_BASE_URL="http://127.0.0.1:1/v1")
    local = plan_for(ScriptedChat(replies=["x"]), served)
    assert local.how == LOCAL and local.views == ("last", "question")
    here = read_prompt(messages, local, served, question)
    assert abs(here["answerability"] - reading["answerability"]) < 0.02
