"""A chat model that records the prompts it is sent and answers with a fixed reply.

Why: collecting training data for the answerability probe needs the *exact* prompts the agent
would send to its generator (after anchors, workers, the Supervisor's packing and the confidence
gate), without paying for decoding. Injected as ``configurable.llm``, it lets the real graph run
while the hidden states are computed separately, once per prompt.
"""

from __future__ import annotations

from typing import Any

from langchain_core.language_models.chat_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from pydantic import Field


class RecordingChat(BaseChatModel):
    reply: str = "I don't know."
    prompts: list[list[BaseMessage]] = Field(default_factory=list)

    @property
    def _llm_type(self) -> str:
        return "recording"

    def _generate(self, messages: list[BaseMessage], stop=None, run_manager=None, **kwargs: Any) -> ChatResult:
        self.prompts.append(list(messages))
        usage = {"input_tokens": 0, "output_tokens": 0, "total_tokens": 0}
        return ChatResult(generations=[ChatGeneration(message=AIMessage(content=self.reply, usage_metadata=usage))])
