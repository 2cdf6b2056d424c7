"""The CRAG starter-kit adapter, driven the way the kit's ``local_evaluation.py`` drives a UserModel.

The kit itself is not fetched here; ``scripts/bench_crag_kit.py`` runs the adapter inside it. Tests
that read the kit's own tokenizer run when ``CRAG_KIT_DIR`` names the kit's folder.
"""

import logging
import os
import sys
import time
import types
from pathlib import Path

import pytest
from platformdirs import user_cache_dir

from agentic_rag.budget import DeadlineExceeded, check_deadline
from agentic_rag.crag_adapter import CRAG_IDK, AnswerTrimmer, UserModel
from agentic_rag.datasets.crag import CragRecord, iter_records
from agentic_rag.ingest.ingest import index_for_record, record_cache_key
from agentic_rag.llm.factory import get_tokenizer
from agentic_rag.llm.packaged import resolve_local_model
from testkit.fakes import ScriptedChat
from testkit.records import UNIVERSAL, kit_batches

KIT_DIR = Path(os.environ.get("CRAG_KIT_DIR", "/nonexistent-crag-kit"))
needs_kit = pytest.mark.skipif(
    not (KIT_DIR / "tokenizer" / "tokenizer.json").is_file(),
    reason="set CRAG_KIT_DIR to a checkout of the official CRAG starter kit (facebookresearch/CRAG)",
)


@pytest.fixture(scope="module")
def records():
    recs = list(iter_records("example"))
    return [recs[9], recs[6]]  # DreamWorks (answerable from its pages), highway (pages about dogs)


@pytest.fixture
def kit_settings(settings, tmp_path):
    """Generous time (these tests route, the deadline tests set their own) and a cache dir of their own."""
    return settings.replace(CRAG_ARTIFACTS_DIR=str(tmp_path / "cache"), CRAG_SECONDS_PER_QUERY=600.0)


@pytest.fixture
def kit_log(caplog):
    """Messages the adapter logged, through loguru when it is installed, else through logging."""
    messages: list[str] = []
    try:
        from loguru import logger
    except ImportError:
        caplog.set_level(logging.INFO, logger="agentic_rag.crag_adapter")
        yield lambda: [r.getMessage() for r in caplog.records]
        return
    sink = logger.add(lambda m: messages.append(str(m)), level="INFO")
    yield lambda: messages
    logger.remove(sink)


class FailingChat(ScriptedChat):
    """Raises on the calls it is told to, answers from its script otherwise."""

    fail_calls: list[int] = []

    def _generate(self, messages, stop=None, run_manager=None, **kwargs):
        if len(self.calls) in self.fail_calls:
            self.calls.append({"prompt": "", "reply": "<raised>", "max_tokens": None})
            raise RuntimeError("model server went away")
        return super()._generate(messages, stop, run_manager, **kwargs)


class SlowChat(ScriptedChat):
    """A backend that takes ``seconds`` per call and, like the local one, stops at the hard deadline."""

    seconds: float = 30.0

    def _generate(self, messages, stop=None, run_manager=None, **kwargs):
        end = time.monotonic() + self.seconds
        while time.monotonic() < end:
            check_deadline("slow model")
            time.sleep(0.02)
        return super()._generate(messages, stop, run_manager, **kwargs)


def test_batch_answers_are_routed_trimmed_and_leave_the_kit_folder_alone(records, kit_settings, tmp_path, monkeypatch):
    kit_cwd = tmp_path / "kit"
    kit_cwd.mkdir()
    monkeypatch.chdir(kit_cwd)
    # the reply fits the generation cap (160 words) but not the kit's 75 tokens
    long = UNIVERSAL + "It is a studio. " * 30
    model = UserModel(settings=kit_settings, batch_size=2, llm=ScriptedChat(replies=[long]))
    assert model.get_batch_size() == 2
    answers = [a for batch in kit_batches(records, model.get_batch_size()) for a in model.batch_generate_answer(batch)]
    assert answers[1] == CRAG_IDK  # no evidence: the kit's abstention string
    assert [r["status"] for r in model.last_batch] == ["answered", "refused"]
    assert answers[0].startswith("DreamWorks Animation is owned by Universal Pictures")
    assert model.trim.tokenizer is None  # not inside the kit: the byte cap applies
    # cut at the last whole word within 74 bytes
    assert answers[0] == "DreamWorks Animation is owned by Universal Pictures. It is a studio. It is"
    assert list(kit_cwd.iterdir()) == []  # indexes and telemetry went to the cache dir instead
    cache = Path(kit_settings.paths.CRAG_ARTIFACTS_DIR)
    assert (cache / "telemetry" / "crag_kit.jsonl").is_file() and (cache / "telemetry" / "agent.jsonl").is_file()


def test_question_indexes_are_cached_in_the_kit_cache_dir_by_default(own_index_cache, tmp_path, monkeypatch):
    kit_cwd = tmp_path / "kit"
    kit_cwd.mkdir()
    monkeypatch.chdir(kit_cwd)
    settings = own_index_cache.replace(CRAG_ARTIFACTS_DIR=str(tmp_path / "cache"))  # INDEX_CACHE_DIR unset
    toy = CragRecord(interaction_id="toy-kit", query="is dreamworks animation owned by time warner or universal pictures?",
                     search_results=[{"page_name": "DreamWorks", "page_url": "toy://dreamworks",
                                      "page_result": "DreamWorks Animation is owned by Universal Pictures since 2016."}])
    model = UserModel(settings=settings, llm=ScriptedChat(replies=[UNIVERSAL]))
    model.batch_generate_answer(next(kit_batches([toy], 1)))
    assert list(kit_cwd.iterdir()) == []
    cached = tmp_path / "cache" / "cache" / "questions"
    assert [p.name for p in cached.iterdir()] == [record_cache_key(toy, model.settings)]


def test_default_cache_dir_is_the_user_cache_not_the_working_directory(settings):
    default = type(settings)().paths.CRAG_ARTIFACTS_DIR
    assert default.is_absolute() and default == Path(user_cache_dir("agentic-rag")) / "crag-kit"


def test_a_failing_question_answers_idk_is_logged_and_the_batch_goes_on(records, kit_settings, kit_log):
    dreamworks = records[0]
    batch = next(kit_batches([dreamworks, dreamworks], 2))
    batch["interaction_id"] = ["bad-input", "model-fails", "answers"]
    batch["query"] = ["", dreamworks.query, dreamworks.query]  # an empty query is not a question
    for key in ("search_results", "query_time"):
        batch[key] = [batch[key][0]] * 3
    model = UserModel(settings=kit_settings, llm=FailingChat(replies=[UNIVERSAL], fail_calls=[0]))
    answers = model.batch_generate_answer(batch)
    assert answers[:2] == [CRAG_IDK, CRAG_IDK]
    assert answers[2].startswith("DreamWorks Animation is owned by Universal Pictures")
    assert [r["status"] for r in model.last_batch] == ["failed", "failed", "answered"]
    assert "RuntimeError: model server went away" in model.last_batch[1]["error"]
    logged = "\n".join(kit_log())
    assert "bad-input: failed" in logged and "model-fails: failed (RuntimeError" in logged
    # bad data is a one-line warning that names the field, as a bad record in a file is; no traceback
    bad = [m for m in kit_log() if "bad-input: failed" in m]
    assert len(bad) == 1 and "bad record: query:" in bad[0] and "Traceback" not in bad[0]
    assert model.last_batch[0]["error"].startswith("bad record: query:")


def test_deadline_ends_questions_as_refusals_within_the_batch_limit(records, kit_settings):
    per_query, margin = 3.0, 1.0
    settings = kit_settings.replace(CRAG_SECONDS_PER_QUERY=per_query, CRAG_MARGIN_S=margin, CRAG_MIN_START_S=0.5)
    dreamworks = records[0]
    index_for_record(dreamworks, settings.replace(ARTIFACTS_DIR=str(settings.paths.CRAG_ARTIFACTS_DIR)))  # built untimed
    model = UserModel(settings=settings, llm=SlowChat(replies=[UNIVERSAL], seconds=30.0))
    batch = next(kit_batches([dreamworks, dreamworks], 2))
    t0 = time.monotonic()
    answers = model.batch_generate_answer(batch)
    wall = time.monotonic() - t0
    assert answers == [CRAG_IDK, CRAG_IDK]  # never the answer the model would have given late
    assert [r["status"] for r in model.last_batch] == ["deadline", "deadline"]
    for row in model.last_batch:  # each question stopped at its own deadline, give or take a sleep step
        assert row["seconds"] <= per_query - margin + 0.5
    assert wall <= 2 * per_query


def test_a_question_without_time_to_start_is_not_started(records, kit_settings):
    settings = kit_settings.replace(CRAG_SECONDS_PER_QUERY=1.0, CRAG_MARGIN_S=0.5, CRAG_MIN_START_S=1.0)
    chat = ScriptedChat(replies=["never"])
    model = UserModel(settings=settings, llm=chat)
    assert model.batch_generate_answer(next(kit_batches(records, 2))) == [CRAG_IDK, CRAG_IDK]
    assert [r["status"] for r in model.last_batch] == ["not_started", "not_started"] and chat.calls == []


def test_init_loads_the_models_a_question_needs(kit_settings):
    from agentic_rag.anchors.ner import get_nlp
    from agentic_rag.retrieval import embeddings

    get_nlp.cache_clear()
    embeddings._embedder.cache_clear()
    UserModel(settings=kit_settings, llm=ScriptedChat(replies=["unused"]))
    assert get_nlp.cache_info().currsize == 1 and embeddings._embedder.cache_info().currsize == 1


def test_trimming_counts_in_the_kit_tokenizer_units(settings, monkeypatch):
    other = get_tokenizer(settings)  # any tokenizer with other units than bytes stands in for the kit's
    monkeypatch.setitem(sys.modules, "models", types.ModuleType("models"))
    monkeypatch.setitem(sys.modules, "models.utils", types.SimpleNamespace(tokenizer=other))
    trim = AnswerTrimmer(settings)
    assert trim.tokenizer is other
    text = "The studio was bought for 3.8 billion dollars in 2016 by NBCUniversal. " * 12
    cut = trim(text)
    n = len(other.encode(cut, add_special_tokens=False))
    assert 65 <= n <= 75 and text.startswith(cut) and text[len(cut)] == " "  # ends at a word boundary
    assert trim("short answer") == "short answer"
    by_path = AnswerTrimmer(settings.replace(CRAG_TOKENIZER_PATH=str(resolve_local_model(settings))))
    assert by_path(text) == cut


def test_without_the_kit_tokenizer_the_cap_is_in_bytes(settings):
    trim = AnswerTrimmer(settings)
    assert trim.tokenizer is None
    cut = trim("Zürich 2024 " * 40)
    assert len(cut.encode()) <= 74 and cut == " ".join(("Zürich 2024 " * 6).split()[:11])
    assert len(trim("x" * 500).encode()) == 74  # one word longer than the cap is cut inside


@needs_kit
def test_the_kit_trim_leaves_trimmed_answers_whole(settings, monkeypatch):
    monkeypatch.syspath_prepend(str(KIT_DIR))
    for name in ("models", "models.utils"):
        monkeypatch.delitem(sys.modules, name, raising=False)
    kit = AnswerTrimmer(settings)  # found through the kit's own models/utils.py
    assert kit.tokenizer is not None and kit.unit == "kit tokens"
    from models.utils import trim_predictions_to_max_token_length

    fallback = AnswerTrimmer(settings.replace(CRAG_TOKENIZER_PATH=str(KIT_DIR / "tokenizer")))
    monkeypatch.setattr(fallback, "tokenizer", None)
    for text in ("Universal Pictures bought DreamWorks Animation for $3.8 billion in 2016. " * 6,
                 "1234567890 " * 40, "Zürich, 東京 and São Paulo — 2019/2020 " * 10):
        for trim in (kit, fallback):
            cut = trim(text)
            assert len(kit.tokenizer.encode(cut, add_special_tokens=False)) <= 75
            assert trim_predictions_to_max_token_length(cut).strip() == cut


@pytest.mark.model
def test_local_decoding_stops_at_the_deadline(settings):
    from langchain_core.messages import HumanMessage

    from agentic_rag.llm.factory import get_chat_model

    model = get_chat_model(settings, max_tokens=400)
    count = [HumanMessage(content="Write the numbers from 1 to 300, separated by commas.")]
    t0 = time.monotonic()
    with pytest.raises(DeadlineExceeded):
        model.invoke(count, deadline=t0 + 1.0)
    assert time.monotonic() - t0 < 2.0
    # with time to spare the deadline changes nothing: greedy decoding gives the same text
    free = model.invoke(count, max_tokens=4).content
    assert model.invoke(count, max_tokens=4, deadline=time.monotonic() + 600).content == free


@pytest.mark.model
def test_batch_with_the_real_model(records, kit_settings):
    model = UserModel(settings=kit_settings, batch_size=2)  # time to spare: the deadline tests are above
    answers = model.batch_generate_answer(next(kit_batches(records, 2)))
    assert len(answers) == 2 and answers[1] == CRAG_IDK and answers[0]
    assert model.last_batch[0]["status"] in {"answered", "refused"} and model.last_batch[1]["status"] == "refused"
