"""Optional cross-encoders (reranker, NLI): the real loading code, on tiny models the test builds."""

import pytest
import torch
from transformers import BertConfig, BertForSequenceClassification, BertTokenizerFast

from agentic_rag.configuration import Settings, SettingsError
from agentic_rag.supervisor.confidence_gate import confidence_gate
from agentic_rag.supervisor.cross_encoder import entailment_probability, load_cross_encoder, rerank_scores

VOCAB = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "the", "cat", "sat", "on", "mat", "dog", "ran", "a", "is"]


def _tiny(folder, labels):
    (folder).mkdir(parents=True, exist_ok=True)
    (folder / "vocab.txt").write_text("\n".join(VOCAB) + "\n")
    tok = BertTokenizerFast(vocab_file=str(folder / "vocab.txt"))
    config = BertConfig(vocab_size=len(VOCAB), hidden_size=16, num_hidden_layers=1, num_attention_heads=2,
                        intermediate_size=32, max_position_embeddings=64, num_labels=len(labels),
                        id2label=dict(enumerate(labels)), label2id={label: i for i, label in enumerate(labels)})
    torch.manual_seed(0)
    model = BertForSequenceClassification(config)
    model.save_pretrained(folder)
    tok.save_pretrained(folder)
    return folder


@pytest.fixture(scope="module")
def nli_dir(tmp_path_factory):
    return _tiny(tmp_path_factory.mktemp("nli"), ["contradiction", "entailment", "neutral"])


@pytest.fixture(scope="module")
def reranker_dir(tmp_path_factory):
    return _tiny(tmp_path_factory.mktemp("rerank"), ["relevance"])


def test_nli_probability_reads_the_entailment_label(nli_dir):
    p = entailment_probability(str(nli_dir), "the cat sat on the mat", "a cat sat")
    assert 0.0 < p < 1.0
    model = load_cross_encoder(str(nli_dir))
    logits = model.predict([("the cat sat on the mat", "a cat sat")], apply_softmax=True)[0]
    assert p == pytest.approx(float(logits[1]), abs=1e-3)  # index 1 is 'entailment' in this model


def test_reranker_scores_on_the_0_3_scale_and_drive_tier_1(reranker_dir):
    scores = rerank_scores(str(reranker_dir), "the cat", ["the cat sat", "a dog ran", "the mat"])
    assert len(scores) == 3 and all(0.0 <= s <= 3.0 for s in scores)
    s = Settings.load(overrides={"USE_RERANKER": True, "RERANKER_MODEL": str(reranker_dir), "RELEVANCE_THRESHOLD": 3.0})
    result = confidence_gate([{"text": "x"}], s, rerank=scores)
    assert result.tier == "reranker" and not result.passed and result.reason == "scores_too_low"
    ok = confidence_gate([{"text": "x"}], s.replace(RELEVANCE_THRESHOLD=0.0), rerank=scores)
    assert ok.passed and ok.tier == "reranker"


def test_missing_model_folder_is_a_clear_error(tmp_path):
    with pytest.raises(FileNotFoundError, match="config.json"):
        load_cross_encoder(str(tmp_path))
    with pytest.raises(SettingsError, match="RERANKER_MODEL"):
        Settings.load(overrides={"USE_RERANKER": True})


def test_tier_2_scales_mean_the_same_for_each_source():
    s = Settings.load()
    passages = [{"fine_sim": 0.8, "bm25_score": 5.0, "fused_score": 1.0}, {"fine_sim": 0.2, "bm25_score": 0.5, "fused_score": 0.4}]
    for source, top in (("vector", 0.8), ("bm25", 0.5), ("fused", 1.0)):
        r = confidence_gate(passages, s.replace(GATE_SCORE_SOURCE=source, RETRIEVAL_MIN_SCORE=0.0))
        assert r.passed and r.scores[0] == pytest.approx(top)
    low = confidence_gate(passages, s.replace(RETRIEVAL_MIN_SCORE=0.9))
    assert not low.passed and low.reason == "scores_too_low"
    assert confidence_gate([], s).reason == "no_relevant_information"
    assert confidence_gate(passages, s.replace(GATE_ENABLED=False)).tier == "off"


def test_nli_layer_in_the_agent_graph(nli_dir, settings):
    from testkit.records import QUOTE_2004
    from testkit.scripted_runs import run

    s = settings.replace(TELEMETRY_PATH=str(settings.paths.ARTIFACTS_DIR / "t.jsonl"), NLI_MODEL=str(nli_dir))
    good = f'Finding Nemo won {{cite:76th academy}} "{QUOTE_2004}".'
    strict, _, _ = run(s, [good], NLI_MIN=0.99, REFLECT_ENABLED=False)
    assert 0.0 < strict.signals["nli_entailment"] < 0.99 and strict.status == "refuse"
    lenient, _, _ = run(s, [good], NLI_MIN=0.0)
    assert lenient.status == "ok" and "nli_entailment" in lenient.signals
