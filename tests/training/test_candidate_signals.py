"""Signals tried for the decision from what a run kept: the short answer in the cited chunks, stated with the
question's words, and agreement among drafts sampled again from the run's own answer prompts (issue 70)."""

from __future__ import annotations

import json

import pytest
from langchain_core.messages import HumanMessage, SystemMessage

from agentic_rag.training import candidate_signals as cs

CHUNK = ("The Normans were in contact with England from an early date. This produced ties of blood through the "
         "wish of Emma, sister of Duke Richard II of Normandy, to marry King Ethelred II of England. Ethelred fled "
         "to Normandy in 1013.")


def _row(short, query="Who did Emma marry?", chunks=None, draft="Emma married King Ethelred II."):
    return {"id": "squad2-x", "query": query, "short_answer": short, "draft": draft,
            "quoted_chunks": {"c:0": CHUNK} if chunks is None else chunks}


def test_the_answer_in_the_cited_chunks_and_stated_with_the_questions_words():
    assert cs.answer_in_sources(_row("King Ethelred II")) == 1.0
    assert cs.answer_in_sources(_row("Sweyn Forkbeard")) == 0.0
    assert cs.answer_in_sources(_row("yes", query="Did Emma marry?")) is None  # a yes/no answer is never written
    assert cs.answer_stated(_row("King Ethelred II")) == 1.0  # "Emma" and "marry" in its sentence
    # the answer is in the chunk, but the question's words are not near it: only a share
    far = {"c:0": "Emma was born in Normandy. Much later, in another land, people spoke of many things. "
                  "They traded wool and fish. The rivers froze. Ethelred ruled from Winchester."}
    assert cs.answer_stated(_row("Ethelred", chunks=far), window=0) == pytest.approx(0.0)
    assert cs.answer_stated(_row("Ethelred", chunks=far), window=4) == 0.5  # "Emma" within reach, "marry" never
    assert cs.answer_stated(_row("Sweyn Forkbeard")) == 0.0


def test_self_consistency_is_the_share_of_samples_whose_short_answer_agrees():
    row = _row("King Ethelred II")
    samples = ["Emma married King Ethelred II of England.", "Emma married Ethelred II.",
               "Emma married Duke Richard II.", "Emma married Sweyn Forkbeard."]
    assert cs.self_consistency(row, samples) == 0.5
    assert cs.self_consistency(row, None) is None
    readings = cs.candidate_readings([row], {"squad2-x": samples})
    assert readings["squad2-x"] == {"answer_in_sources": 1.0, "answer_stated": 1.0, "self_consistency": 0.5}
    assert "self_consistency" not in cs.candidate_readings([row])["squad2-x"]


def _cache_with(tmp_path, calls):
    """The project's own replay cache, written the way a run writes it: each call through a chat model bound as the
    answer node binds it (log-probabilities and the prompt's state) or as another node does."""
    from langchain_core.globals import set_llm_cache

    from agentic_rag.llm.factory import _replay_cache
    from testkit.fakes import ScriptedChat

    path = tmp_path / "llm_cache.sqlite"
    for messages, reply, answer_call in calls:
        model = ScriptedChat(replies=[reply]).model_copy(update={"cache": _replay_cache(str(path))})
        bound = model.bind(logprobs=True, prompt_state_layer=18, prompt_state_question="Q") if answer_call else model.bind(max_tokens=2)
        bound.invoke(messages)
    set_llm_cache(None)
    return path


def test_the_answer_prompt_that_gave_a_draft_is_read_back_from_the_runs_cache(tmp_path):
    first = [SystemMessage("Answer from the sources."), HumanMessage(f"Sources: {CHUNK}\nQuestion: Who did Emma marry?")]
    other = [HumanMessage("Sources: ...\nQuestion: When did Ethelred flee?")]
    verify = [HumanMessage("Does the quote state it? Emma married King Ethelred II.")]
    path = _cache_with(tmp_path, [(first, "Emma married King Ethelred II.", True), (other, "Emma married King Ethelred II.", True),
                                  (verify, "yes", False)])
    prompts = cs.cached_answer_prompts(path)
    assert set(prompts) == {"Emma married King Ethelred II."}  # the verifier's call is not an answer call
    found = cs.answer_prompt(_row("King Ethelred II"), prompts)
    assert [type(m) for m in found] == [SystemMessage, HumanMessage] and "Who did Emma marry?" in found[-1].content
    assert cs.answer_prompt(_row("x", draft="Another draft."), prompts) is None


class _Sampler:
    """The one method ``sample_drafts`` calls on the in-process model (its real decoding: test_sampled_replies.py)."""

    def __init__(self):
        self.seeds = []

    def sample_replies(self, messages, n, temperature, max_new_tokens, seed=0):
        self.seeds.append(seed)
        return [f"reply {seed % 7} {i}" for i in range(n)], {"input_tokens": 100, "output_tokens": 8 * n, "total_tokens": 100 + 8 * n}


def test_sampling_is_appended_as_it_goes_and_resumes_with_the_same_seeds(tmp_path):
    prompt = [HumanMessage("Question: Who did Emma marry?")]
    rows = [_row("King Ethelred II"), {**_row("x", draft="No prompt for this one."), "id": "squad2-y"},
            {**_row("x", draft=""), "id": "squad2-z"}]  # no draft: nothing to sample
    prompts = {"Emma married King Ethelred II.": [prompt]}
    out = tmp_path / "samples.jsonl"
    sampler = _Sampler()
    assert cs.sample_drafts(rows, prompts, sampler, out, n=3, progress=None) == {"sampled": 1, "no_prompt": 1, "already": 0}
    written = cs.read_samples(out)
    assert written["squad2-x"]["samples"] == [f"reply {sampler.seeds[0] % 7} {i}" for i in range(3)]
    assert written["squad2-y"]["samples"] is None and "squad2-z" not in written
    assert written["squad2-x"]["tokens"]["output_tokens"] == 24
    out.write_text(out.read_text().splitlines()[1] + "\n")  # only the row without a prompt survives
    again = _Sampler()
    assert cs.sample_drafts(rows, prompts, again, out, n=3, progress=None) == {"sampled": 1, "no_prompt": 0, "already": 1}
    assert again.seeds == sampler.seeds and len(out.read_text().splitlines()) == 2
    assert json.loads(out.read_text().splitlines()[1])["id"] == "squad2-x"


class _Reader:
    """The one method ``collect_prompt_states`` calls (the real one, ChatLocalTransformers.prompt_state, is the packaged reader's)."""

    def __init__(self, model_path: str = ""):
        self.model_path = model_path  # a folder of no packaged model: it is read with the default probe

    def prompt_state(self, messages, layer, question=""):
        seed = float(len(question))
        return {"last": [seed, layer], "question": [seed, -1.0]}, 10  # by view, as the real one keys them


def test_prompt_states_are_kept_per_draft_and_a_rerun_reads_only_what_is_missing(tmp_path):
    import numpy as np

    prompt = [HumanMessage("Question: Who did Emma marry?")]
    rows = [_row("King Ethelred II"), {**_row("x", draft="No prompt for this one."), "id": "squad2-y"}]
    prompts = {"Emma married King Ethelred II.": [prompt]}
    out = tmp_path / "states.npz"
    assert cs.collect_prompt_states(rows, prompts, _Reader(), out, layer=18, progress=None) == \
        {"read": 1, "no_prompt": 1, "already": 0}
    saved = np.load(out)
    assert list(saved["ids"]) == ["squad2-x"] and saved["state"].tolist() == [[19.0, 18.0]]
    assert saved["question_state"].tolist() == [[19.0, -1.0]]
    more = [*rows, {**_row("King Ethelred II", query="Who did Emma marry, and when?"), "id": "squad2-w"}]
    prompts["Emma married King Ethelred II."].append([HumanMessage("Question: Who did Emma marry, and when?")])
    assert cs.collect_prompt_states(more, prompts, _Reader(str(tmp_path)), out, progress=None)["read"] == 1
    assert list(np.load(out)["ids"]) == ["squad2-x", "squad2-w"]
    from agentic_rag.reader.probe import PACKAGED_PROBE, load_probe

    # without a layer, the one the model's shipped probe reads (not a number restated here)
    assert np.load(out)["state"][1][1] == load_probe(PACKAGED_PROBE).layer
