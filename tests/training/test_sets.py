"""The answerability readers' training draws (training/sets.py): NQ near misses, answer-removed twins,
and the whole draw kept apart from every test split and dev pool."""

import numpy as np


def test_nq_training_records_negatives_hold_no_answer_and_answerables_hold_the_gold(shared_data, tmp_path):
    from agentic_rag.datasets.crag import IDK, iter_records
    from agentic_rag.training import sets as tp

    source = shared_data / "nq" / "nq_open_oracle.jsonl"
    records = tp.nq_records(source, 8, seed=3, tmp=tmp_path)
    originals = {r.interaction_id: r for r in iter_records(tmp_path / "nq_all.jsonl")}
    negatives = [r for r in records if r.answer == IDK]
    answerable = [r for r in records if r.answer != IDK]
    assert len(negatives) == len(answerable) == 4
    for r in negatives:
        original = originals[tp.group_of(r)]
        answers = [a.lower() for a in [original.answer, *original.alternative_answers]]
        assert r.interaction_id.endswith("-negative") and len(r.search_results) == 5 and not r.gold_page_urls
        assert not any(a in p.page_result.lower() for p in r.search_results for a in answers)
    for r in answerable:
        assert r.gold_page_urls and r.gold_page_urls[0] in {p.page_url for p in r.search_results}
        assert r.answer == originals[tp.group_of(r)].answer
    # a held-out split's questions are never drawn again, whichever variant they were
    held_out = frozenset(tp.base_id(r.interaction_id) for r in records)
    again = tp.nq_records(source, 8, seed=3, tmp=tmp_path, exclude=held_out)
    assert len(again) == 8 and not {tp.base_id(r.interaction_id) for r in again} & held_out


def test_answer_removed_twin_keeps_the_topic_and_loses_every_answer_sentence():
    from agentic_rag.datasets.crag import IDK, CragRecord, SearchResult
    from agentic_rag.training import sets as tp
    from agentic_rag.training.probe_report import auc_by_source, source_pairs
    gold = SearchResult(page_name="Normans (paragraph 1)", page_url="squad2://Normans/1", page_result=(
        "The Normans were the people who gave their name to Normandy. Rollo swore fealty to King Charles III. "
        "Their identity emerged in the first half of the 10th century. It continued to evolve."))
    other = SearchResult(page_name="Normans (paragraph 2)", page_url="squad2://Normans/2",
                         page_result="The Norman dynasty had a major political impact. In the 10th century they settled.")
    record = CragRecord(interaction_id="squad2-abc", query="In what century did the Normans emerge?",
                        answer="10th century", alternative_answers=["the first half of the 10th century"],
                        search_results=[gold, other], gold_page_urls=[gold.page_url])
    twin = tp.answer_removed(record)
    assert twin.interaction_id == "squad2-abc-removed" and twin.answer == IDK and not twin.gold_page_urls
    text = " ".join(p.page_result for p in twin.search_results)
    assert "10th century" not in text and "Rollo swore fealty" in text and "political impact" in text
    assert tp.group_of(twin) == tp.group_of(record) and tp.source_of(twin.interaction_id, tp.group_of(twin)) == "squad2_removed"
    # too little left of the gold passage to stay on topic, or nothing to remove from: no twin
    short = record.model_copy(update={"search_results": [gold.model_copy(update={"page_result": "It emerged in the 10th century."})]})
    assert tp.answer_removed(short) is None
    assert tp.answer_removed(record.model_copy(update={"answer": IDK, "alternative_answers": []})) is None
    # the twin is scored against the answerable rows of the source it came from
    y = np.array([1, 0, 0, 1, 0])
    sources = np.array(["squad2", "squad2", "squad2_removed", "nq", "nq"])
    pairs = source_pairs(y, sources)
    assert pairs["squad2_removed"].tolist() == [True, False, True, False, False]
    assert set(auc_by_source(np.array([0.9, 0.2, 0.1, 0.3, 0.8]), y, sources)) == {"squad2", "squad2_removed", "nq"}


def test_the_readers_training_draws_share_no_question_with_a_test_split_or_a_dev_pool(shared_data, tmp_path):
    """The training set of the answerability readers (training/sets.probe_training_records) at the
    sizes the shipped job draws: no question of squad200, hotpot_test (the test half of every shared
    HotpotQA file), rgb40 or the CRAG example, and none of the SQuAD and NQ dev pools that dev splits are
    drawn from; every HotpotQA dev question with a twin per supporting page removed, multi-hop first."""
    from collections import Counter

    from agentic_rag.datasets.crag import iter_records
    from agentic_rag.datasets.prepare.benchmarks import benchmark_dataset
    from agentic_rag.training.sets import base_id, held_out_ids, probe_training_records

    for folder in ("draws", "pools"):
        (tmp_path / folder).mkdir()
    draws = probe_training_records(shared_data, tmp_path / "draws", squad=3000, nq=2200, snippets=400, removed=500,
                                   hotpot=True, seed=21)

    def question(record) -> str:  # a question's id whichever variant, twin or view a record is
        if getattr(record, "source", None) == "hotpotqa":
            return f"hotpotqa:{record.source_id}"
        return base_id(record.interaction_id).removesuffix("-removed")

    trained = {question(r) for r in draws}
    assert len(draws) > 7000 and len({r.interaction_id for r in draws}) == len(draws)
    for split in ("squad200", "hotpot_test", "rgb40", "crag_example"):
        tested = {question(r) for r in iter_records(benchmark_dataset(split, tmp_path, shared_data))}
        assert tested and not tested & trained, split
    held = held_out_ids(shared_data, tmp_path / "pools")
    assert len(held["squad2"]) > 550 and len(held["nq"]) == 400 and not (held["squad2"] | held["nq"]) & trained
    hotpot = [r for r in draws if getattr(r, "source", None) == "hotpotqa"]
    assert draws[: len(hotpot)] == hotpot  # the multi-hop rows first
    per_question = Counter(r.source_id for r in hotpot)
    assert len(per_question) > 400 and set(per_question.values()) == {3}  # answerable, and each hop's page removed
    removed = {}
    for r in hotpot:
        if r.variant == "unanswerable":
            removed.setdefault(r.source_id, set()).add(r.removed_paragraph)
    assert all(len(pages) == 2 for pages in removed.values())
