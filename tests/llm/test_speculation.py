"""Lossless speculative decoding of the in-process model: prompt lookup and a draft model propose tokens,
one pass of the generator verifies them, and the greedy answer is the plain decode's."""

from __future__ import annotations

from pathlib import Path

import pytest
from langchain_core.messages import HumanMessage


@pytest.mark.model
def test_prompt_lookup_decodes_the_same_answer_in_fewer_passes_over_the_weights(settings):
    """Speculation that changes nothing: with the answer's words in the prompt, prompt lookup proposes them and
    one pass verifies several; the greedy text, its token log-probabilities and the prefill's hidden state
    (what the answerability reader reads) are the plain decode's."""
    import math

    from agentic_rag.llm.factory import get_chat_model

    sentence = "The Kodak Theatre in Hollywood hosted the 76th Academy Awards ceremony on February 29, 2004."
    messages = [HumanMessage(f"Source: {sentence}\n\nCopy the source sentence exactly, word for word.")]
    replies = {}
    for mode in ("off", "prompt_lookup"):
        model = get_chat_model(settings.replace(LLM_SPECULATION=mode, LLM_CACHE_PATH=None), max_tokens=40)
        replies[mode] = model.bind(max_tokens=40, logprobs=True, prompt_state_layer=12).invoke(messages)
    plain, fast = (replies[m] for m in ("off", "prompt_lookup"))
    assert fast.content == plain.content and "Kodak Theatre" in str(plain.content)
    assert fast.response_metadata["token_logprobs"] == pytest.approx(plain.response_metadata["token_logprobs"], abs=0.05)
    a, b = (r.response_metadata["prompt_state"]["state"] for r in (plain, fast))
    cosine = sum(x * y for x, y in zip(a, b)) / math.sqrt(sum(x * x for x in a) * sum(y * y for y in b))
    assert cosine > 0.999
    tokens = plain.usage_metadata["output_tokens"]
    assert plain.response_metadata["forward_passes"] >= tokens - 1
    assert fast.response_metadata["forward_passes"] < 0.6 * plain.response_metadata["forward_passes"]
    # what telemetry and the trace show of it: tokens per pass, booked from the reply by the ledger
    from agentic_rag.budget import tokens_per_pass
    from agentic_rag.llm.usage import UsageLedger

    per_pass = {}
    for mode, reply in replies.items():
        ledger = UsageLedger()
        ledger.record("generation", reply)
        per_pass[mode] = tokens_per_pass(ledger.by_stage)["generation"]
    assert per_pass["off"] <= 1.05 and per_pass["prompt_lookup"] > 1.5


@pytest.mark.model
def test_assisted_decoding_verifies_a_draft_models_proposals_without_changing_the_answer(settings, tmp_path):
    """A draft model with the generator's tokenizer proposes, the generator verifies a batch per pass: here
    the draft is a second copy of the packaged 0.5B (its files linked from another folder, so it loads as
    another model), so every proposal is accepted and the passes fall the most, with the plain decode's text."""
    from agentic_rag.llm.factory import get_chat_model
    from agentic_rag.llm.local import ChatLocalTransformers

    plain_model = get_chat_model(settings.replace(LLM_CACHE_PATH=None), max_tokens=40)
    draft = tmp_path / "draft"
    draft.mkdir()
    for f in Path(plain_model.model_path).iterdir():
        (draft / f.name).symlink_to(f)
    messages = [HumanMessage("Name the capital of France, then of Italy, then of Spain, in one sentence.")]
    assisted = ChatLocalTransformers(model_path=plain_model.model_path, dtype=plain_model.dtype, max_new_tokens=40,
                                     repetition_penalty=plain_model.repetition_penalty, speculation="assisted",
                                     draft_model_path=str(draft))
    plain, fast = (m.bind(max_tokens=40, logprobs=True).invoke(messages) for m in (plain_model, assisted))
    assert fast.content == plain.content and "Paris" in str(plain.content)
    assert fast.response_metadata["token_logprobs"] == pytest.approx(plain.response_metadata["token_logprobs"], abs=0.05)
    assert fast.response_metadata["forward_passes"] < 0.5 * plain.response_metadata["forward_passes"]


def test_assisted_decoding_needs_a_smaller_packaged_draft_than_the_generator(settings):
    from agentic_rag.llm.factory import get_chat_model
    from agentic_rag.llm.local import ChatLocalTransformers

    with pytest.raises(ValueError, match="is the generator itself here"):  # the suite's generator is the 0.5B
        get_chat_model(settings.replace(LLM_SPECULATION="assisted", LLM_CACHE_PATH=None))
    generator = get_chat_model(settings).model_path
    with pytest.raises(ValueError, match="needs draft_model_path"):
        ChatLocalTransformers(model_path=generator, speculation="assisted")
    with pytest.raises(ValueError, match="a draft model other than the generator"):  # one lock: it would wait on itself
        ChatLocalTransformers(model_path=generator, speculation="assisted", draft_model_path=generator)
