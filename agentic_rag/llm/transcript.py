"""What a run keeps of each LLM call for its trace: the prompt as sent and the raw completion.

``invoke_llm`` is the one place every call passes, so it books one record per call (or per failed
call, with its error) into the running node's clock; the node's trace event then carries them as
``llm_transcript`` and a run's ``results.jsonl`` holds them with the rest of the question's events.
Texts are kept whole: the trace page cuts them for display and expands them on request.
"""

from __future__ import annotations

from typing import Any, Sequence

from langchain_core.messages import AIMessage, BaseMessage

from agentic_rag.timing import book_llm_call


def _message(m: BaseMessage) -> dict[str, str]:
    return {"role": m.type, "content": m.content if isinstance(m.content, str) else str(m.content)}


def record_call(stage: str, messages: Sequence[BaseMessage], ms: float, reply: AIMessage | None = None,
                usage: dict[str, int] | None = None, error: BaseException | None = None) -> None:
    """Book one call (its stage, prompt, completion or error, tokens and wall time) to the running node."""
    entry: dict[str, Any] = {"stage": stage, "ms": round(ms, 3), "prompt": [_message(m) for m in messages]}
    if reply is not None:
        entry["completion"] = reply.content if isinstance(reply.content, str) else str(reply.content)
        model = (getattr(reply, "response_metadata", None) or {}).get("model_name")
        if model:
            entry["model"] = str(model)
    if usage:
        entry["tokens"] = usage
    if error is not None:
        entry["error"] = f"{type(error).__name__}: {error}"
    book_llm_call(entry)
