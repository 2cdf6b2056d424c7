"""A scripted chat model for routing tests and benchmarks.

Each scripted reply may cite sources by content: ``{cite:PHRASE}`` becomes ``[n]`` for the numbered
source in the prompt whose text contains PHRASE, so a test does not depend on ranking order. Usage
is counted in words by default: routing does not depend on the exact count, and words are cheap. A
test of token accounting passes ``count_tokens=real_tokens(settings)``, so the model reports what the
packaged tokenizer counts, the same counter the budget checks use. Every call is recorded; the reply ``UNAVAILABLE``
fails the call as an unreachable model does (``LLMUnavailableError``).
"""

from __future__ import annotations

import re
from typing import Any, Callable

from langchain_core.language_models.chat_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from pydantic import Field

UNAVAILABLE = "<model unavailable>"  # a scripted reply that fails as a model outage would
NO_TIME = "<no time left>"  # ... as a call the question's wall time left no room to start

_SOURCE = re.compile(r"^\[(\d+)\] [^\n]*\n(.*?)(?=^\[\d+\] |\Z)", re.MULTILINE | re.DOTALL)


def words(text: str) -> int:
    return len(text.split())


def real_tokens(settings) -> Callable[[str], int]:
    from agentic_rag.llm.factory import count_tokens

    return lambda text: count_tokens(text, settings)


def sources_in(prompt: str) -> dict[int, str]:
    return {int(n): text for n, text in _SOURCE.findall(prompt)}


def render_reply(template: str, prompt: str) -> str:
    """``template`` with each ``{cite:PHRASE}`` replaced by the number of the prompt's source holding PHRASE."""
    sources = sources_in(prompt)

    def cite(m: re.Match) -> str:
        phrase = m.group(1).lower()
        for n, text in sources.items():
            if phrase in text.lower():
                return f"[{n}]"
        return "[99]"  # cites a source that was never given

    return re.sub(r"\{cite:([^}]+)\}", cite, template)


class ScriptedChat(BaseChatModel):
    replies: list[str] = Field(default_factory=list)
    repeat_last: bool = True
    calls: list[dict[str, Any]] = Field(default_factory=list)
    count_tokens: Callable[[str], int] = words

    @property
    def _llm_type(self) -> str:
        return "scripted-fake"

    def _generate(self, messages: list[BaseMessage], stop=None, run_manager=None, **kwargs) -> ChatResult:
        prompt = "\n".join(str(m.content) for m in messages)
        index = len(self.calls)
        if index < len(self.replies):
            template = self.replies[index]
        elif self.repeat_last and self.replies:
            template = self.replies[-1]
        else:
            raise AssertionError(f"unscripted call #{index + 1}")
        if template in (UNAVAILABLE, NO_TIME):
            from agentic_rag.llm.usage import LLMUnavailableError

            self.calls.append({"prompt": prompt, "reply": None, "max_tokens": kwargs.get("max_tokens")})
            raise LLMUnavailableError("scripted://model", "scripted outage", 3 if template == UNAVAILABLE else 0, 0.0)
        text = render_reply(template, prompt)
        cap = kwargs.get("max_tokens")
        counter = self.count_tokens
        out_tokens = counter(text)
        if cap is not None and out_tokens > cap:
            raise AssertionError(f"scripted reply of {out_tokens} tokens exceeds the cap {cap}")
        in_tokens = counter(prompt) + 20
        self.calls.append({"prompt": prompt, "reply": text, "max_tokens": cap})
        message = AIMessage(
            content=text,
            usage_metadata={"input_tokens": in_tokens, "output_tokens": out_tokens, "total_tokens": in_tokens + out_tokens},
        )
        return ChatResult(generations=[ChatGeneration(message=message)])


class HoldingChat(ScriptedChat):
    """A scripted model whose first call anywhere (any process sharing ``hold_dir``) writes its process id
    to ``hold_dir/held`` and then waits ``hold_s``: a test then knows which worker process is in the middle
    of a question, and can kill it there."""

    hold_dir: str
    hold_s: float = 60.0

    def _generate(self, messages: list[BaseMessage], stop=None, run_manager=None, **kwargs) -> ChatResult:
        import os
        import time

        try:  # the claim stays: only the first call ever holds
            os.close(os.open(os.path.join(self.hold_dir, "claimed"), os.O_CREAT | os.O_EXCL | os.O_WRONLY))
        except FileExistsError:
            return super()._generate(messages, stop, run_manager, **kwargs)
        with open(os.path.join(self.hold_dir, "held.tmp"), "w") as fh:
            fh.write(str(os.getpid()))
        os.rename(os.path.join(self.hold_dir, "held.tmp"), os.path.join(self.hold_dir, "held"))
        time.sleep(self.hold_s)
        return super()._generate(messages, stop, run_manager, **kwargs)
