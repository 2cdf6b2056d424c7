"""Sampled replies that share one prefill (self-consistency's drafts): the shared cache must decode as the
prompt would on its own, so a near-zero temperature gives the greedy reply, and a seed repeats a study."""

from __future__ import annotations

import pytest
from langchain_core.messages import HumanMessage

MESSAGES = [HumanMessage("Source: The Eiffel Tower was completed in 1889 for the World's Fair in Paris.\n\n"
                         "Question: When was the Eiffel Tower completed? Answer in one short sentence.")]


@pytest.mark.model
def test_samples_from_the_shared_prefill_decode_as_the_prompt_would_alone(settings):
    from agentic_rag.llm.factory import get_chat_model

    model = get_chat_model(settings.replace(LLM_CACHE_PATH=None), max_tokens=24)
    greedy = str(model.bind(max_tokens=24).invoke(MESSAGES).content).strip()
    cold, usage = model.sample_replies(MESSAGES, 3, temperature=1e-4, max_new_tokens=24)
    assert cold == [greedy] * 3 and "1889" in greedy
    # the prompt is paid once, every row's reply tokens each
    assert usage["input_tokens"] == model.get_num_tokens_from_messages(MESSAGES)
    assert usage["output_tokens"] >= 3 * len(model.tokenizer.encode(greedy, add_special_tokens=False))
    warm = model.sample_replies(MESSAGES, 4, temperature=1.5, max_new_tokens=24, seed=7)[0]
    assert warm == model.sample_replies(MESSAGES, 4, temperature=1.5, max_new_tokens=24, seed=7)[0]
    assert len(warm) == 4 and all(warm)


def test_sampling_needs_a_temperature_and_at_least_one_row(settings):
    from agentic_rag.llm.factory import get_chat_model

    model = get_chat_model(settings.replace(LLM_CACHE_PATH=None))
    for n, temperature in ((0, 0.7), (2, 0.0)):
        with pytest.raises(ValueError, match="n >= 1 and a temperature above 0"):
            model.sample_replies(MESSAGES, n, temperature=temperature, max_new_tokens=8)
