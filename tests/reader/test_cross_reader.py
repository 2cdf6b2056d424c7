"""The cross-encoder answerability reader: fine-tuning and loading on a tiny model the test builds, and the
shipped reader on the packaged MiniLM."""

import json

import numpy as np
import pytest

from agentic_rag.reader.cross_encoder import (
    PACKAGED_CROSS_READER,
    CrossReader,
    CrossReaderError,
    base_sha256,
    load_cross_reader,
    save_reader,
)
from agentic_rag.training.cross_encoder import auc_by_source, cross_validated, fine_tune, predict
from testkit import REPO
from testkit.tiny_models import cat_rows, tiny_bert


@pytest.fixture(scope="module")
def tiny_base(tmp_path_factory):
    return tiny_bert(tmp_path_factory.mktemp("tiny-minilm"))


@pytest.fixture(scope="module")
def trained(tiny_base, tmp_path_factory):
    rows = cat_rows(24)
    model, tokenizer, names = fine_tune(rows, str(tiny_base), top_layers=1, epochs=8, lr=3e-3, head_lr=3e-2, batch_size=8)
    path = save_reader(tmp_path_factory.mktemp("reader") / "reader.safetensors", model, names,
                       {"base_sha256": base_sha256(tiny_base), "top_layers": 1})
    return rows, model, tokenizer, names, path


def test_fine_tuning_changes_only_the_top_layers_and_the_head(trained):
    _, _, _, names, _ = trained
    assert names and all(n.startswith(("encoder.encoder.layer.1.", "head.")) for n in names)
    assert any(n.startswith("head.") for n in names) and not any(".layer.0." in n or "embeddings" in n for n in names)


def test_a_trained_reader_separates_what_it_was_taught(trained):
    rows, model, tokenizer, _, _ = trained
    scores = predict(model, tokenizer, rows)
    table = auc_by_source(rows, scores)
    assert table["all"] == 1.0 and set(table) == {"all", "a", "b"}
    assert scores[0] > 0.5 > scores[1]


def test_the_saved_reader_loads_on_its_base_and_scores_as_trained(trained, tiny_base):
    rows, model, tokenizer, _, path = trained
    reader = CrossReader(path, tiny_base)
    expected = predict(model, tokenizer, rows[:2])
    got = [reader.score(r["question"], r["sources"]) for r in rows[:2]]
    assert got == pytest.approx(expected.tolist(), abs=2e-2)  # the file holds fp16 tensors


def test_a_reader_is_refused_for_another_base_and_a_foreign_file(trained, tiny_base, tmp_path):
    _, model, _, names, _ = trained
    other = save_reader(tmp_path / "other.safetensors", model, names, {"base_sha256": "0" * 64})
    with pytest.raises(CrossReaderError, match="another base model"):
        CrossReader(other, tiny_base)
    junk = tmp_path / "junk.safetensors"
    junk.write_text(json.dumps({"not": "a reader"}))
    with pytest.raises(CrossReaderError, match="not a cross-encoder reader file"):
        CrossReader(junk, tiny_base)
    with pytest.raises(CrossReaderError, match="not found"):
        CrossReader(tmp_path / "missing.safetensors", tiny_base)


def test_cross_validation_is_grouped_and_out_of_fold(tiny_base):
    rows = cat_rows(24)
    oof = cross_validated(rows, str(tiny_base), folds=3, top_layers=1, epochs=8, lr=3e-3, head_lr=3e-2, batch_size=8)
    assert oof.shape == (24,) and np.all((oof > 0) & (oof < 1))
    assert auc_by_source(rows, oof)["all"] > 0.9


def test_the_shipped_reader_on_the_packaged_minilm_prefers_sources_that_answer():
    reader = load_cross_reader()
    question = "In what year did the Normans conquer England?"
    answers = "[1] Norman conquest: The Norman conquest of England began in 1066, when William of Normandy invaded."
    misses = "[1] Normandy: Normandy is a region of northern France known for its cheese, cider and coastline."
    assert reader.score(question, answers) > reader.score(question, misses)


def test_the_reader_setting_picks_the_cross_encoder_alone_or_beside_the_probe(settings):
    from agentic_rag.reader.read import CROSS, LOCAL, plan_for
    from testkit.fakes import ScriptedChat

    alone = plan_for(ScriptedChat(replies=["x"]), settings.replace(ANSWERABILITY_READER="cross-encoder"))
    assert (alone.how, alone.cross_path) == (CROSS, str(PACKAGED_CROSS_READER)) and alone.call_kwargs("Q?") == {}
    assert "cross-encoder" in alone.describe()
    # an injected model without states: "both" has only the cross-encoder to read with
    assert plan_for(ScriptedChat(replies=["x"]), settings.replace(ANSWERABILITY_READER="both")).how == CROSS
    served = settings.replace(LLM_BACKEND="openai", OPENAI_BASE_URL="http://127.0.0.1:1/v1", LLM_MODEL="qwen2.5-coder-0.5b",
                              ANSWERABILITY_READER="both")
    both = plan_for(ScriptedChat(replies=["x"]), served)
    assert both.how == LOCAL and both.cross_path == str(PACKAGED_CROSS_READER) and "cross-encoder" in both.describe()
    assert plan_for(ScriptedChat(replies=["x"]), served.replace(ANSWERABILITY_READER="probe")).cross_path == ""


def test_both_readers_average_their_logits_and_keep_each_part(settings):
    import math

    from agentic_rag.reader.read import CROSS, GENERATION, ReaderPlan, read_cross, with_cross

    plan = ReaderPlan(GENERATION, cross_path=str(PACKAGED_CROSS_READER))
    bundle = {"passages": [{"n": 1, "page_name": "Norman conquest", "text": "The Norman conquest of England began in 1066."}]}
    question = "When did the Norman conquest of England begin?"
    cross = read_cross(question, bundle, plan, settings)["answerability"]
    joined = with_cross({"status": "scored", "answerability": 0.9, "how": GENERATION, "ms": 0.0}, question, bundle, plan, settings)
    logit = lambda p: math.log(p / (1 - p))  # noqa: E731
    assert joined["parts"] == {"probe": 0.9, CROSS: cross}
    assert joined["answerability"] == pytest.approx(1 / (1 + math.exp(-(logit(0.9) + logit(cross)) / 2)), abs=1e-3)
    assert joined["ms"] > 0
    # nothing to join: a reading that is not a score, or a plan without the cross-encoder, passes unchanged
    assert with_cross({"status": "unavailable"}, question, bundle, plan, settings) == {"status": "unavailable"}
    assert with_cross({"status": "scored", "answerability": 0.9}, question, bundle, ReaderPlan(GENERATION),
                      settings)["answerability"] == 0.9


def test_an_agent_run_reads_answerability_with_the_cross_encoder_in_its_own_step(agent_settings):
    """A generator that exposes no states (the scripted fake) still gets a reading: the cross-encoder's,
    taken in the read step, which the decision reads like the probe's."""
    from testkit.records import QUOTE_2004
    from testkit.scripted_runs import run

    reply = f'Finding Nemo won. {{cite:76th academy}} "{QUOTE_2004}"'
    result, _, rows = run(agent_settings, [reply], ANSWERABILITY_READER="cross-encoder", ANSWERABILITY_MIN=0.0)
    reading = rows[-1]["probe"]
    assert reading["how"] == "cross-encoder" and reading["reader"] == "minilm-cross" and reading["ms"] > 0
    assert result.signals["answerability"] == reading["answerability"] and 0.0 < reading["answerability"] < 1.0
    refused, _, _ = run(agent_settings, [reply], ANSWERABILITY_READER="cross-encoder", ANSWERABILITY_MIN=1.0)
    assert refused.reason == "ABSTAIN_NOT_ANSWERABLE"


def test_training_pairs_hold_the_sources_the_answer_prompt_shows(settings):
    """The cross-encoder is trained on the very sources the generator's prompt shows (the bundle it was
    rendered from), so what it reads at answer time is what it was trained on."""
    import graphs  # noqa: F401  (registers the agent graph)
    from agentic_rag.prompts import answer_messages, render_sources
    from agentic_rag.training.prompts import generator_inputs
    from testkit.records import record

    rec = record()
    prompt, bundle = generator_inputs(rec, settings)
    assert bundle["passages"] and render_sources(bundle) in prompt[-1].content
    assert [m.content for m in answer_messages(rec.query, bundle, rec.query_time)] == [m.content for m in prompt]


def test_reader_pairs_keep_the_exact_prompt_skip_refused_records_and_resume(settings, tmp_path):
    """The pairs both readers train on: one row per record with a prompt (the probe's prefill reads it back
    exactly), none for a record refused before generation, and a rerun adds only what is missing."""
    import graphs  # noqa: F401  (registers the agent graph)
    from agentic_rag.training.prompts import generator_inputs, write_pairs
    from agentic_rag.training.views import pair_messages
    from testkit.records import record

    answered, empty = record(), record().model_copy(update={"interaction_id": "empty", "search_results": []})
    out = tmp_path / "pairs.jsonl"
    assert write_pairs([empty], settings, out, "toy", progress=False) == (0, 1)
    assert write_pairs([answered, empty], settings, out, "toy", progress=False) == (1, 1)
    assert write_pairs([answered, empty], settings, out, "toy", progress=False) == (1, 1)  # nothing read twice
    row = json.loads(out.read_text())
    prompt, _ = generator_inputs(answered, settings)
    assert row["id"] == answered.interaction_id and row["source"] == "toy" and row["label"] == 1
    assert [m.content for m in pair_messages(row)] == [m.content for m in prompt]


@pytest.mark.system
def test_score_reports_each_reader_and_both_on_the_same_questions(tmp_path):
    import subprocess
    import sys

    root = REPO
    rows = [{"id": "a", "question": "When did the Norman conquest of England begin?", "label": 1,
             "sources": "[1] Norman conquest: The Norman conquest of England began in 1066."},
            {"id": "b", "question": "When did the Norman conquest of England begin?", "label": 0,
             "sources": "[1] Normandy: Normandy is known for its cheese and cider."},
            {"id": "c", "question": "Who wrote Hamlet?", "label": 1, "sources": "[1] Hamlet: a play by Shakespeare."}]
    pairs = tmp_path / "pairs.jsonl"
    pairs.write_text("".join(json.dumps(r) + "\n" for r in rows))
    probe = tmp_path / "probe.json"
    probe.write_text(json.dumps({"a": 0.8, "b": 0.3}))  # c was refused before generation: left out of every reader
    out = tmp_path / "score.json"
    done = subprocess.run([sys.executable, "-m", "agentic_rag.cli", "train", "reader-score", "--pairs", str(pairs),
                           "--probe-scores", str(probe), "--out", str(out)], cwd=root, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    report = json.loads(out.read_text())
    assert report["n"] == 2 and set(report["readers"]) == {"cross-encoder", "probe", "both (mean logit)"}
    assert report["readers"]["probe"]["auc"] == 1.0 and report["cross_ms_per_question"] > 0
