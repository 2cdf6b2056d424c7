"""The answerability probe: fitting, the file format, the model check and the decision it drives."""

import json

import numpy as np
import pytest

from agentic_rag.baug.policy import Flags, decide
from agentic_rag.eval.metrics import auc
from agentic_rag.reader.probe import (
    PACKAGED_PROBE,
    ProbeMismatchError,
    load_probe,
    packaged_probe_for,
)
from agentic_rag.reader.read import GENERATION, LOCAL, plan_for, read_other_prompt, reading_of_reply
from agentic_rag.training.fitting import fit_probe
from testkit import REPO
from testkit.fakes import ScriptedChat


def _synthetic(n=160, layers=4, hidden=8, informative=2, seed=0):
    """States where only ``informative`` carries the label (along one direction), the rest is noise."""
    rng = np.random.default_rng(seed)
    y = np.array([i % 2 for i in range(n)])
    X = rng.normal(size=(n, layers, hidden))
    X[:, informative, 3] += 2.5 * (2 * y - 1)
    groups = [f"article{i % 8}" for i in range(n)]
    return X, y, groups


def test_fit_picks_the_informative_layer_and_scores_held_out_rows():
    X, y, groups = _synthetic()
    probe, report = fit_probe(X, y, groups, model_key="k" * 64)
    assert probe.layer == 2 and report["chosen_layer"] == 2
    assert report["layer_auc"][2] > 0.9 and max(report["layer_auc"][i] for i in (0, 1, 3)) < 0.75
    Xt, yt, _ = _synthetic(seed=1)
    scores = np.array([probe.score(x[2]) for x in Xt])
    assert auc(yt, scores) > 0.9
    assert scores[yt == 1].mean() > 0.5 > scores[yt == 0].mean()


def test_auc_matches_the_rank_definition_with_ties():
    y = np.array([1, 1, 0, 0, 1])
    s = np.array([0.9, 0.5, 0.5, 0.1, 0.2])
    pairs = [(a, b) for a in s[y == 1] for b in s[y == 0]]
    expected = sum(1.0 if a > b else 0.5 if a == b else 0.0 for a, b in pairs) / len(pairs)
    assert auc(y, s) == pytest.approx(expected)


def test_file_round_trip_and_model_check(tmp_path):
    X, y, groups = _synthetic()
    probe, _ = fit_probe(X, y, groups, model_key="a" * 64, layers=[2])
    path = probe.save(tmp_path / "p.json")
    loaded = load_probe(path)
    assert loaded.layer == 2 and loaded.score(X[0, 2]) == pytest.approx(probe.score(X[0, 2]), abs=1e-4)
    loaded.check_model("a" * 64, 8)
    with pytest.raises(ProbeMismatchError, match="Train one for it"):
        loaded.check_model("b" * 64, 8)
    with pytest.raises(ProbeMismatchError):
        loaded.score(np.zeros(5))
    (tmp_path / "bad.json").write_text('{"layer": 1}')
    with pytest.raises(ValueError, match="not an answerability probe"):
        load_probe(tmp_path / "bad.json")
    with pytest.raises(FileNotFoundError, match="PROBE_PATH"):
        load_probe(tmp_path / "none.json")


@pytest.mark.parametrize("name, hidden", [("packaged", 896), ("packaged-1.5b", 1536)])
def test_each_packaged_model_ships_a_probe_that_fits_it_and_is_found_by_its_folder(name, hidden, tmp_path):
    from agentic_rag.llm.packaged import CONVERTED_MARKER, PACKAGED_MODELS

    spec = PACKAGED_MODELS[name]
    folder = tmp_path / spec.converted_dir
    folder.mkdir()
    (folder / CONVERTED_MARKER).write_text(json.dumps({"source_key": spec.sha256}))
    path = packaged_probe_for(str(folder))
    assert path.name == spec.probe_file
    probe = load_probe(path)
    probe.check_model(spec.sha256, hidden)
    assert probe.meta["cv_auc"] > 0.6 and probe.meta["n"] >= 500
    for other in PACKAGED_MODELS.values():
        if other is not spec:
            with pytest.raises(ProbeMismatchError):
                probe.check_model(other.sha256)


def test_a_foreign_model_folder_gets_the_default_probe_which_then_refuses_it(tmp_path):
    (tmp_path / "config.json").write_text("{}")
    path = packaged_probe_for(str(tmp_path))
    assert path == PACKAGED_PROBE
    with pytest.raises(ProbeMismatchError, match="agentic-rag train views"):
        load_probe(path).check_model(None, 896)


def test_an_injected_model_without_states_is_not_read_and_says_why(settings):
    plan = plan_for(ScriptedChat(replies=["x"]), settings)
    assert plan.how == "unavailable" and "hidden states" in plan.why
    assert reading_of_reply(None, plan) == {"status": "unavailable", "why": plan.why}
    off = settings.model_copy(update={"PROBE_ENABLED": False})
    assert reading_of_reply(None, plan_for(ScriptedChat(replies=["x"]), off)) == {"status": "off", "why": "off (PROBE_ENABLED)"}


def test_a_served_generator_is_read_by_the_packaged_reader_it_serves_or_the_one_named(settings):
    """Whatever model a server runs, the prompt is read here: by the packaged model the server serves when
    it is one (its own probe), else by READER_MODEL (auto: the default 1.5B)."""
    served = settings.replace(LLM_BACKEND="openai", OPENAI_BASE_URL="http://127.0.0.1:1/v1", LLM_MODEL="qwen2.5-coder-0.5b",
                              READER_MODEL="auto")
    plan = plan_for(ScriptedChat(replies=["x"]), served)
    assert (plan.how, plan.reader, plan.layer) == (LOCAL, "qwen2.5-coder-0.5b", load_probe(plan.probe_path).layer)
    assert plan.probe_path.endswith("answerability-qwen2.5-coder-0.5b.json") and plan.call_kwargs("Q?") == {}
    other = plan_for(ScriptedChat(replies=["x"]), served.replace(LLM_MODEL="gpt-4o"))
    assert other.reader == "qwen2.5-coder-1.5b" and other.probe_path.endswith("answerability-qwen2.5-coder-1.5b.json")
    chosen = plan_for(ScriptedChat(replies=["x"]), served.replace(LLM_MODEL="gpt-4o", READER_MODEL="packaged"))
    assert chosen.reader == "qwen2.5-coder-0.5b"
    foreign = PACKAGED_PROBE.with_name("answerability-qwen2.5-coder-1.5b.json")
    with pytest.raises(ProbeMismatchError):  # a probe file of another model than the reader is refused
        plan_for(ScriptedChat(replies=["x"]), served.replace(LLM_MODEL="gpt-4o", READER_MODEL="packaged", PROBE_PATH=str(foreign)))


SUPPORTED = {"overlap_est": 1.0, "faith_est": 1.0, "answer_relevance": 1.0, "anchor_coverage": 1.0, "tokens_left": 3000}


@pytest.mark.parametrize(
    "signal, minimum, value, grounding, expected",
    [
        ("answerability", "ANSWERABILITY_MIN", 0.2, True, "ABSTAIN_NOT_ANSWERABLE"),
        ("answerability", "ANSWERABILITY_MIN", 0.8, True, "STOP_OVERLAP_OK"),
        ("answerability", "ANSWERABILITY_MIN", None, True, "STOP_OVERLAP_OK"),  # probe unavailable: the rest decide
        ("answerability", "ANSWERABILITY_MIN", 0.2, False, "STOP_OVERLAP_OK"),  # layer 2 switched off
        ("verified_score", "VERIFIER_MIN", 0.3, True, "ABSTAIN_NOT_VERIFIED"),
        ("verified_score", "VERIFIER_MIN", 0.7, True, "STOP_OVERLAP_OK"),
        ("verified_score", "VERIFIER_MIN", None, True, "STOP_OVERLAP_OK"),  # verifier off or not yet asked
        ("verified_score", "VERIFIER_MIN", 0.3, False, "STOP_OVERLAP_OK"),  # layer 2 switched off
    ],
)
def test_policy_refuses_what_the_probe_or_the_support_verifier_turns_down(settings, signal, minimum, value, grounding,
                                                                          expected):
    s = settings.model_copy(update={"GROUNDING_ENABLED": grounding, minimum: 0.5})
    signals = dict(SUPPORTED, **({} if value is None else {signal: value}))
    flags = Flags(has_evidence=True, has_draft=True, reflected=False)
    assert decide(signals, flags, s).reason == expected


def test_low_answerability_with_missing_anchors_retrieves_first(settings):
    signals = dict(SUPPORTED, anchor_coverage=0.0, answerability=0.1)
    flags = Flags(has_evidence=True, has_draft=True)
    assert decide(signals, flags, settings).reason == "RETRIEVE_MISSING_ANCHORS"
    done = Flags(has_evidence=True, has_draft=True, one_shot_done=True)
    assert decide(signals, done, settings).reason == "ABSTAIN_NOT_ANSWERABLE"


@pytest.mark.model
def test_real_model_state_from_the_generation_call_matches_a_forward_pass(settings):
    """The probe reads the prefill of the answer call itself; training reads a separate forward pass."""
    from langchain_core.messages import HumanMessage

    from agentic_rag.llm.calls import call_model
    from agentic_rag.llm.factory import get_chat_model

    model = get_chat_model(settings, max_tokens=4)
    plan = plan_for(model, settings)
    assert plan.how == GENERATION
    layer = plan.layer
    messages = [HumanMessage(content="Sources:\n[1] Paris is the capital of France.\nQuestion: What is the capital of France?")]
    message, usage = call_model(messages, settings.model_copy(update={"MAX_OUTPUT_TOKENS": 4}), "generation", model,
                                **plan.call_kwargs("What is the capital of France?"))
    reading = reading_of_reply(message, plan)
    assert reading["status"] == "scored" and 0.0 <= reading["answerability"] <= 1.0 and reading["layer"] == layer
    states = model.prompt_states(messages).numpy()
    forward = states[layer]
    generated = np.array(message.response_metadata["prompt_state"]["state"])
    assert np.allclose(generated, forward, atol=0.05 * np.abs(forward).max())
    assert usage["generation"]["calls"] == 1
    # the capture hook reaches both ends too: the embeddings (0) and the final, normed layer
    for end in (0, len(states) - 1):
        reply = model.invoke(messages, prompt_state_layer=end, max_tokens=1)  # the state is the prompt's: one token will do
        got = np.array(reply.response_metadata["prompt_state"]["state"])
        assert np.allclose(got, states[end], atol=0.05 * np.abs(states[end]).max())
    with pytest.raises(ValueError, match="outside"):
        model.invoke(messages, prompt_state_layer=len(states))


@pytest.mark.model
def test_real_model_views_match_the_probe_state_and_pool_their_own_tokens(settings):
    """The "last" view is the very state the shipped probe reads; the pooled views average the sources'
    and the question's tokens, so they differ from it and from each other; the draft view follows the
    first tokens of the greedy draft."""
    from agentic_rag.llm.factory import get_chat_model
    from agentic_rag.prompts import messages_for
    from agentic_rag.training.views import prefill_states

    model = get_chat_model(settings)
    sources, question = "[1] Paris\nParis is the capital of France.", "What is the capital of France?"
    messages = messages_for("answer", sources=sources, question=question, query_time="unknown")
    views = prefill_states(model, messages, question, sources, draft_tokens=3)
    states = model.prompt_states(messages).numpy()
    assert views["last"].shape == views["evidence"].shape == views["question"].shape == states.shape
    last = views["last"].astype(np.float32)
    assert np.allclose(last, states, atol=0.02 * np.abs(states).max())
    layer = len(states) // 2
    assert not np.allclose(views["evidence"][layer], views["question"][layer], atol=1e-2)
    assert not np.allclose(views["evidence"][layer], last[layer], atol=1e-2)
    assert views["draft_text"].strip() and views["draft"].shape == states.shape
    assert not np.allclose(views["draft"][layer], last[layer], atol=1e-2)  # the state moved on with the draft
    with pytest.raises(ValueError, match="does not hold"):
        prefill_states(model, messages, "Another question?", sources)
    # some layers only: the forward pass stops after the deepest, and the views are those of the whole pass
    some = prefill_states(model, messages, question, sources, layers=(layer, 2))
    assert some["last"].shape == (2, states.shape[1]) and list(some["layers"]) == [layer, 2]
    for i, at in enumerate((layer, 2)):
        for view in ("last", "evidence", "question"):
            full = views[view][at].astype(np.float32)
            assert np.allclose(some[view][i].astype(np.float32), full, atol=0.02 * np.abs(full).max())
    with pytest.raises(ValueError, match="not all within"):
        prefill_states(model, messages, question, sources, layers=(len(states),))


@pytest.mark.model
def test_real_model_view_collection_saves_in_chunks_and_resumes_without_rereading(settings, tmp_path):
    from agentic_rag.llm.factory import get_chat_model
    from agentic_rag.training.views import at_layer, collect_views, load_views

    pairs = [{"id": f"p{i}", "question": q, "sources": f"[1] Paris\n{text}", "label": label, "group": "paris", "source": "toy"}
             for i, (q, text, label) in enumerate([("What is the capital of France?", "Paris is the capital of France.", 1),
                                                   ("Who founded Paris?", "Paris lies on the Seine.", 0)])]
    model = get_chat_model(settings)
    assert collect_views(model, pairs[:1], tmp_path, chunk=1) == 1
    assert collect_views(model, pairs, tmp_path, chunk=1) == 1  # the saved pair is not read again
    views = load_views(tmp_path)
    assert list(views["ids"]) == ["p0", "p1"] and list(views["y"]) == [1, 0]
    assert views["last"].shape[:1] == views["question"].shape[:1] == (2,) and (views["prompt_tokens"] > 20).all()
    assert str(views["dtype"]) == model.dtype and sorted(p.name for p in tmp_path.iterdir()) == ["chunk_0000.npz", "chunk_0001.npz"]
    with pytest.raises(FileNotFoundError, match="no views"):
        load_views(tmp_path / "none")
    # a collection of some layers and views: what it holds is named, and a resume with others is refused
    some = tmp_path / "some"
    collect_views(model, pairs, some, chunk=2, layers=(3,), views=("last", "question"))
    views = load_views(some)
    assert views["last"].shape == (2, 1, views["last"].shape[-1]) and "evidence" not in views
    assert at_layer(views, "question", 3).shape == (2, views["last"].shape[-1])
    with pytest.raises(KeyError, match="layer 4 was not collected"):
        at_layer(views, "last", 4)
    with pytest.raises(ValueError, match=r"other layers \[3\] \(now \[4\]\)"):
        collect_views(model, pairs, some, layers=(4,), views=("last", "question"))
    with pytest.raises(ValueError, match="other views"):
        collect_views(model, pairs, some, layers=(3,))
    # packed (one byte per value, to be committed): read back within a rounding step of the float16 views
    packed = tmp_path / "packed"
    assert collect_views(model, iter(pairs), packed, chunk=1, layers=(3,), views=("last", "question"), packed=True) == 2
    back = load_views(packed)
    assert np.load(packed / "chunk_0000.npz")["last"].dtype == np.uint8 and back["last"].dtype == np.float32
    exact = views["last"].astype(np.float32)
    steps = np.stack([np.load(packed / f"chunk_{i:04d}.npz")["last_step"] for i in range(2)])
    assert np.all(np.abs(back["last"] - exact) <= steps / 2 + 1e-6)
    with pytest.raises(ValueError, match="other packed"):
        collect_views(model, pairs, packed, layers=(3,), views=("last", "question"))


def test_not_answerable_refusal_names_the_figures_and_the_question_terms_the_passage_lacks(settings):
    from agentic_rag.baug.refusal import explain_refusal
    from agentic_rag.baug.signals import unmatched_question_terms

    passage = "The Cape Colony published its first newspaper in 1800, and the colony grew."
    unmatched = unmatched_question_terms("In what year was The Cape Monthly first published?", passage)
    assert unmatched == ["monthly"]  # "published" meets "published", "first" and "cape" are there
    signals = {"answerability": 0.19, "question_terms_unmatched": unmatched, "missing_anchors": []}
    text, missing = explain_refusal("ABSTAIN_NOT_ANSWERABLE", signals, {}, settings)
    assert "19%" in text and f"{settings.baug.ANSWERABILITY_MIN:.0%}" in text and '"monthly"' in text
    assert missing == ["monthly"]


def test_required_auc_is_chance_at_the_diagonal_and_grows_with_the_target():
    from agentic_rag.training import probe_report as tp

    assert tp.required_auc(refusal=0.5, false_refusal=0.5) == pytest.approx(0.5)
    assert tp.required_auc(refusal=0.7, false_refusal=0.15) == pytest.approx(0.865, abs=1e-3)
    assert tp.required_auc(refusal=0.9, false_refusal=0.05) > tp.required_auc(refusal=0.7, false_refusal=0.15)


def test_learning_curve_subsamples_training_folds():
    X, y, groups = _synthetic()
    from agentic_rag.training.probe_report import learning_curve

    curve = learning_curve(X[:, 2, :], y, groups, c=0.05, fractions=(0.1, 1.0), draws=2)
    assert set(curve) == {"0.1", "1.0"} and curve["1.0"] > 0.9 and curve["0.1"] <= curve["1.0"] + 0.05


@pytest.mark.model
def test_real_model_quote_probe_reads_the_quoted_sentences_alone_in_one_booked_call(settings):
    """The quote probe is the packaged probe on the answer prompt whose only source is the quote: its
    reading equals a forward pass over that prompt, and its call decodes one token under 'verify'."""
    from agentic_rag.baug.verifier import VERIFY_STAGE
    from agentic_rag.llm.factory import get_chat_model
    from agentic_rag.reader.probe import quote_bundle, quote_probe_messages

    model = get_chat_model(settings)
    plan = plan_for(model, settings)
    bundle = {"passages": [{"n": 1, "page_name": "France", "text": "France is in Europe. Paris is the capital of France."}]}
    sentences = [{"supported": True, "n": 1, "quote": "Paris is the capital of France."}]
    messages = quote_probe_messages("What is the capital of France?", sentences, bundle)
    assert "France is in Europe" not in messages[1].content
    question, quoted = "What is the capital of France?", quote_bundle(sentences, bundle)
    reading, usage = read_other_prompt(question, quoted, plan, settings, VERIFY_STAGE, model)
    probe = load_probe(plan.probe_path)
    forward = probe.score(model.prompt_states(messages)[probe.layer].numpy())
    assert reading["status"] == "scored" and abs(reading["answerability"] - forward) < 0.05
    assert usage[VERIFY_STAGE]["calls"] == 1 and usage[VERIFY_STAGE]["output_tokens"] == 1
    # the packaged reader, as for a served generator, gives the same reading from its own prefill and no LLM call
    local = plan_for(ScriptedChat(replies=["x"]), settings.replace(LLM_BACKEND="openai", LLM_MODEL="qwen2.5-coder-0.5b",
                                                                   OPENAI_BASE_URL="http://127.0.0.1:1/v1"))
    read_here, no_usage = read_other_prompt(question, quoted, local, settings, VERIFY_STAGE, None)
    assert read_here["how"] == LOCAL and read_here["ms"] > 0 and read_here["prompt_tokens"] > 10 and no_usage == {}
    assert abs(read_here["answerability"] - reading["answerability"]) < 0.02
    # an injected model that exposes no hidden states gets no reading and makes no call
    unread = plan_for(ScriptedChat(replies=["x"]), settings)
    assert read_other_prompt(question, quoted, unread, settings, VERIFY_STAGE, None) == ({"status": "unavailable", "why": unread.why}, {})


@pytest.mark.model
def test_score_applies_the_packaged_probe_to_an_evaluation_file_with_the_real_model(settings, tmp_path):
    """score runs the agent's own prompt building, reads the real model's states and fits nothing."""
    import os
    import subprocess
    import sys

    from agentic_rag.datasets.crag import IDK, write_records
    from testkit.records import record

    answerable = record()
    unanswerable = record().model_copy(update={"interaction_id": "toy-2", "answer": IDK})
    data = tmp_path / "two.jsonl"
    write_records([answerable, unanswerable], data)
    out = tmp_path / "score.json"
    root = REPO
    scores = tmp_path / "per_question.json"
    done = subprocess.run([sys.executable, "-m", "agentic_rag.cli", "train", "probe-score", "--data", str(data),
                           "--out", str(out), "--per-question", str(scores),
                           "--override", f"ARTIFACTS_DIR={settings.paths.ARTIFACTS_DIR}"],
                          env={**os.environ, "PYTHONPATH": str(root)}, capture_output=True, text=True, timeout=1200)
    assert done.returncode == 0, done.stderr[-3000:]
    report = json.loads(out.read_text())
    assert report["scored"] + report["refused_before_generation"] == 2 and report["layer"] == load_probe(None).layer
    assert report["probe"].endswith("agentic_rag/data/probes/" + PACKAGED_PROBE.name)  # the shipped probe of the model
    assert set(json.loads(scores.read_text())) == {answerable.interaction_id, "toy-2"}
    assert [row["threshold"] for row in report["at_threshold"]] == [0.3, 0.4, 0.5]
    # both records carry the same question and pages, so the same prompt and the same score: a tie
    assert report["scored"] == 2 and report["auc"] == 0.5


def test_verified_score_averages_the_readings_its_mode_names_and_the_refusal_says_so(settings):
    from agentic_rag.baug.refusal import explain_refusal
    from agentic_rag.baug.verifier import needs_verdict, verified_score

    alone = settings.model_copy(update={"VERIFIER_MIN": 0.55})
    mode = {m: alone.model_copy(update={"VERIFIER_COMBINE": m}) for m in ("mean_with_probe", "mean_with_probes", "probes")}
    read = {"support_verdict": 0.7, "answerability": 0.3, "quote_answerability": 0.2}
    assert verified_score(read, alone) == 0.7 and verified_score(read, mode["mean_with_probe"]) == 0.5
    assert verified_score(read, mode["mean_with_probes"]) == 0.4 and verified_score(read, mode["probes"]) == 0.25
    assert verified_score({"support_verdict": 0.7}, mode["mean_with_probe"]) == 0.7  # no probe reading: the verdict alone
    assert verified_score({}, mode["probes"]) is None  # nothing read: nothing to cut
    # the verifier call is skipped only when its mode does not read it and both probe readings are there
    assert not needs_verdict(read, mode["probes"]) and needs_verdict({"answerability": 0.3}, mode["probes"])
    assert needs_verdict(read, mode["mean_with_probes"])
    signals = {**read, "verified_score": 0.4,
               "sentences": [{"supported": True, "quote": "As of 2021, the player with the most wins was Navratilova."}]}
    text, missing = explain_refusal("ABSTAIN_NOT_VERIFIED", signals, {}, mode["mean_with_probes"])
    assert all(f in text for f in ("70%", "30%", "20%", "40%", "55%", "Navratilova"))
    assert missing == ["a source that states the answer to the question as asked"]
    text, _ = explain_refusal("ABSTAIN_NOT_VERIFIED", {**signals, "verified_score": 0.25}, {}, mode["probes"])
    assert "70%" not in text and "30%" in text and "20%" in text and "25%" in text  # no verdict was read


def test_quote_bundle_keeps_only_the_quoted_sentences_under_their_own_source():
    from agentic_rag.reader.probe import quote_bundle, quote_probe_messages

    bundle = {"passages": [
        {"n": 1, "page_name": "Wimbledon 2019", "page_last_modified": "2019-07-14", "text": "A. Serena lost the final."},
        {"n": 2, "page_name": "Halep", "text": "Simona Halep won the 2019 title. She beat Serena."},
    ]}
    sentences = [
        {"supported": True, "n": 2, "quote": "Simona Halep won the 2019 title."},
        {"supported": False, "n": 1, "quote": "A."},  # an unsupported sentence's source is not shown
        {"supported": True, "n": 2, "quote": "Simona Halep won the 2019 title."},  # said twice, shown once
        {"supported": True, "n": 1, "quote": "Serena lost the final."},
    ]
    quoted = quote_bundle(sentences, bundle)
    assert [(p["n"], p["page_name"], p["text"]) for p in quoted["passages"]] == [
        (1, "Halep", "Simona Halep won the 2019 title."), (2, "Wimbledon 2019", "Serena lost the final.")]
    assert quoted["passages"][1]["page_last_modified"] == "2019-07-14"
    user = quote_probe_messages("Who won Wimbledon in 2019?", sentences, bundle)[1].content
    assert "[1] Halep\nSimona Halep won the 2019 title." in user and "She beat Serena" not in user
    assert quote_probe_messages("Who won?", [sentences[1]], bundle) is None  # nothing quoted: no reading


def test_snippet_view_keeps_the_answer_window_of_the_gold_page_and_groups_with_its_question():
    from agentic_rag.datasets.crag import CragRecord, SearchResult
    from agentic_rag.training import sets as tp

    filler = " ".join(f"word{i}" for i in range(60))
    gold = SearchResult(page_name="Titanic", page_url="nq://1", page_result=(
        f"{filler} Titanic's keel was laid down on 31 March 1909 at Harland and Wolff. {filler}"))
    other = SearchResult(page_name="Olympic", page_url="nq://2", page_result=(
        f"{filler} The Olympic keel was laid in December 1908 at the same Belfast yard. {filler}"))
    record = CragRecord(interaction_id="nq-7-answerable", query="when was the keel of the titanic laid down",
                        answer="31 March 1909", search_results=[gold, other], gold_page_urls=[gold.page_url])
    view = tp.as_snippets(record, words=20)
    g, o = view.search_results
    assert "31 March 1909" in g.page_snippet and g.page_snippet == g.page_result
    assert g.page_snippet.startswith("... ") and g.page_snippet.endswith(" ...") and len(g.page_snippet.split()) == 22
    # a page without the answer keeps the window most on the question
    assert "keel" in o.page_snippet and "word0 " not in o.page_snippet
    assert view.interaction_id == "nq-7-answerable-snippets" and tp.base_id(view.interaction_id) == "nq-7"
    assert tp.group_of(view) == tp.group_of(record) == "nq-7"
    assert tp.source_of(view.interaction_id, tp.group_of(view)) == "nq_snippets"


@pytest.mark.model
def test_the_views_job_builds_pairs_as_it_goes_and_a_rerun_reads_nothing_again(tmp_path):
    """`agentic-rag train views` on a split: each record's pair built as the job reaches it (kept for the other
    reader), its views read from a prefill that stops at the layers kept, in packed chunks; a rerun of the
    same command reads nothing again."""
    import subprocess
    import sys

    from agentic_rag.training.views import load_views
    from testkit.records import toy_dataset

    data = toy_dataset(tmp_path, n=3)
    out = tmp_path / "views"
    cmd = [sys.executable, "-m", "agentic_rag.cli", "train", "views",
           "--data", str(data), "--preset", "fast", "--layers", "2", "--chunk", "2", "--out", str(out),
           "--override", f"ARTIFACTS_DIR={tmp_path / 'artifacts'}"]
    first = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    assert first.returncode == 0, first.stderr[-2000:]
    views = load_views(out)
    pairs = [json.loads(line) for line in out.with_name("views.pairs.jsonl").read_text().splitlines()]
    assert sorted(views["ids"]) == sorted(p["id"] for p in pairs) and len(pairs) >= 1
    assert views["last"].shape[1:] == (1, 896) and bool(views["packed"]) and list(views["layers"]) == [2]
    again = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    assert again.returncode == 0 and f"{len(pairs)} of 3 records read before" in again.stdout
    assert "nothing left to read" in again.stdout and "reading last" not in again.stdout  # no model loaded
    assert len(load_views(out)["ids"]) == len(pairs)  # nothing read twice
