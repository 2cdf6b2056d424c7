"""The scripted chat models live in agentic_rag.testing.fakes (benchmarks use them too)."""

from agentic_rag.testing.fakes import (  # noqa: F401
    NO_TIME,
    UNAVAILABLE,
    HoldingChat,
    ScriptedChat,
    real_tokens,
    render_reply,
    sources_in,
    words,
)
