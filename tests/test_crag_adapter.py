"""The CRAG starter-kit adapter, driven the way ``local_evaluation.py`` drives a UserModel."""

import pytest

from agentic_rag.crag_adapter import CRAG_IDK, MAX_ANSWER_TOKENS, UserModel
from agentic_rag.datasets.crag import iter_records
from agentic_rag.llm.factory import get_tokenizer
from tests.fakes import ScriptedChat


def kit_batches(records, batch_size):
    """As the kit does: chunk the stream, and turn each chunk into a dict of lists."""
    for i in range(0, len(records), batch_size):
        chunk = records[i : i + batch_size]
        yield {
            "interaction_id": [r.interaction_id for r in chunk],
            "query": [r.query for r in chunk],
            "search_results": [[s.model_dump() for s in r.search_results] for r in chunk],
            "query_time": [r.query_time for r in chunk],
        }


@pytest.fixture(scope="module")
def records():
    recs = list(iter_records("example"))
    return [recs[9], recs[6]]  # DreamWorks (answerable from its pages), highway (pages about dogs)


def test_batch_interface_with_a_scripted_model(records, settings, monkeypatch):
    import agentic_rag.crag_adapter as adapter

    # a cold start (model, embedder and spaCy loads) can use up the kit's 10 s per question, which the
    # next test covers; here the answer must reach the trim. The reply fits the generation cap
    # (160 words) but not the kit's 75 tokens.
    monkeypatch.setattr(adapter, "SECONDS_PER_QUESTION", 300.0)
    long = "DreamWorks Animation is owned by Universal Pictures {cite:universal}. " + "It is a studio. " * 30
    model = UserModel(settings=settings, batch_size=2, llm=ScriptedChat(replies=[long]))
    assert model.get_batch_size() == 2
    answers = [a for batch in kit_batches(records, model.get_batch_size()) for a in model.batch_generate_answer(batch)]
    assert len(answers) == 2 and all(isinstance(a, str) for a in answers)
    assert answers[1] == CRAG_IDK  # no evidence: the kit's abstention string
    assert answers[0].startswith("DreamWorks Animation is owned by Universal Pictures")
    assert len(get_tokenizer(settings).encode(answers[0], add_special_tokens=False)) == MAX_ANSWER_TOKENS


def test_time_limit_answers_idk_instead_of_overrunning(records, settings, monkeypatch):
    import agentic_rag.crag_adapter as adapter

    monkeypatch.setattr(adapter, "SECONDS_PER_QUESTION", 0.0)
    model = UserModel(settings=settings, llm=ScriptedChat(replies=["never"]))
    batch = next(kit_batches(records, 2))
    assert model.batch_generate_answer(batch) == [CRAG_IDK, CRAG_IDK]


@pytest.mark.model
def test_batch_with_the_real_model(records, settings):
    model = UserModel(settings=settings, batch_size=2)
    answers = model.batch_generate_answer(next(kit_batches(records, 2)))
    assert len(answers) == 2 and answers[1] == CRAG_IDK and answers[0]


def test_answers_are_trimmed_to_75_tokens(settings):
    model = UserModel(settings=settings)
    tok = get_tokenizer(settings)
    long = "word " * 300
    assert len(tok.encode(model._trim(long), add_special_tokens=False)) <= MAX_ANSWER_TOKENS
    assert model._trim("short answer") == "short answer"
