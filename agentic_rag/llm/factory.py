"""One place that turns settings into a chat model and a token counter.

Graph nodes ask for a model on every call; the instances are cached on the settings that shape them,
so the same weights and HTTP client are reused. Context budgets are counted with an HF tokenizer
even for the OpenAI backend, because tiktoken downloads its BPE files on first use and we run offline;
the packaged Qwen tokenizer is a close, deterministic stand-in.
"""

from __future__ import annotations

import warnings
from functools import lru_cache
from pathlib import Path
from typing import Any

from langchain_core.language_models.chat_models import BaseChatModel

from agentic_rag.llm.dtype import local_dtype
from agentic_rag.llm.local import ChatLocalTransformers, load_tokenizer
from agentic_rag.llm.packaged import FAST_MODEL, ensure_converted, resolve_local_model

# The local backend's penalty on repeated tokens (a factor; 1 = off): it stops the greedy loops small
# models fall into ("the the the ..."); it never varied, so it is not a setting.
REPETITION_PENALTY = 1.1


def get_chat_model(settings, max_tokens: int | None = None) -> BaseChatModel:
    """The configured chat model, capped at ``max_tokens`` (default ``settings.MAX_OUTPUT_TOKENS``)."""
    cap = int(max_tokens or settings.llm.MAX_OUTPUT_TOKENS)
    if settings.llm.LLM_BACKEND == "local":
        path = resolve_local_model(settings)
        model = local_model(str(path), cap, settings.llm.TEMPERATURE, settings.llm.TORCH_THREADS, REPETITION_PENALTY,
                            local_dtype(settings).dtype, settings.llm.LLM_SPECULATION, draft_model_path(settings, path))
        return _with_cache(model, settings)
    if settings.llm.LLM_BACKEND == "openai":
        if problem := settings.backend_error():
            raise ValueError(problem)
        model = _openai_model(
            settings.llm.LLM_MODEL,
            settings.llm.OPENAI_BASE_URL,
            settings.openai_api_key or "not-needed",
            settings.llm.TEMPERATURE,
            cap,
            settings.llm.LLM_TIMEOUT_S,
            settings.llm.LLM_RETRIES,
            settings.llm.LLM_BACKOFF_S,
            settings.llm.LLM_BREAKER_COOLDOWN_S,
            settings.llm.MAX_REPLY_CHARS,
        )
        return _with_cache(model, settings)
    raise ValueError(f"unknown LLM_BACKEND {settings.llm.LLM_BACKEND!r}; expected 'local' or 'openai'")


def _with_cache(model: BaseChatModel, settings) -> BaseChatModel:
    """Replay identical calls from ``LLM_CACHE_PATH`` (greedy decoding only: then a replay is exact).

    Threshold sweeps and resumed runs re-ask the same prompts; the cache stores the whole message,
    usage included, so token accounting is the same whether a call was computed or replayed."""
    if settings.paths.LLM_CACHE_PATH is None or settings.llm.TEMPERATURE > 0:
        return model
    key = (id(model), str(settings.paths.LLM_CACHE_PATH))
    if key not in _CACHED:
        Path(key[1]).parent.mkdir(parents=True, exist_ok=True)
        _CACHED[key] = model.model_copy(update={"cache": _replay_cache(key[1])})
    return _CACHED[key]


_CACHED: dict[tuple[int, str], BaseChatModel] = {}
# `loads` is marked beta; its signature is stable across the langchain-core 1.x that pyproject requires
warnings.filterwarnings("ignore", message="The function `loads` is in beta")


def _replay_cache(path: str):
    """langchain's SQLite cache, reading back only the two classes it ever stores.

    Its own lookup deserialises with langchain's default set of allowed classes, a default that is
    announced to change; a stricter one would turn every replay into a silent miss (a fresh, paid
    call). Naming the classes keeps replays exact whatever the default becomes."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        from langchain_community.cache import SQLiteCache
    from langchain_core.load import loads
    from langchain_core.messages import AIMessage
    from langchain_core.outputs import ChatGeneration
    from sqlalchemy import select
    from sqlalchemy.orm import Session

    class ReplayCache(SQLiteCache):
        def lookup(self, prompt: str, llm_string: str):
            table = self.cache_schema
            stmt = select(table.response).where(table.prompt == prompt).where(table.llm == llm_string).order_by(table.idx)
            with Session(self.engine) as session:
                rows = session.execute(stmt).fetchall()
            return [loads(row[0], allowed_objects=[ChatGeneration, AIMessage]) for row in rows] or None

    return ReplayCache(database_path=path)


@lru_cache(maxsize=16)
def local_model(path: str, cap: int, temperature: float, threads: int, repetition_penalty: float = 1.0,
                dtype: str = "auto", speculation: str = "off", draft_path: str | None = None) -> ChatLocalTransformers:
    return ChatLocalTransformers(
        model_path=path, max_new_tokens=cap, temperature=temperature, threads=threads,
        repetition_penalty=repetition_penalty, dtype=dtype, speculation=speculation, draft_model_path=draft_path,
    )


def draft_model_path(settings, model_path) -> str | None:
    """The draft model of ``LLM_SPECULATION=assisted``: the packaged 0.5B, which shares the packaged models'
    tokenizer; None for the other modes. A model that is the 0.5B itself has nothing smaller to draft with,
    said here in the settings' words (the model's own guard would say it inside a validation error)."""
    if settings.llm.LLM_SPECULATION != "assisted":
        return None
    draft = ensure_converted(Path(settings.paths.MODEL_CACHE_DIR).expanduser(), FAST_MODEL)
    if Path(draft).resolve() == Path(model_path).resolve():
        raise ValueError(f"LLM_SPECULATION=assisted drafts with the packaged {FAST_MODEL.short_name}, which is the "
                         "generator itself here: use prompt_lookup or off")
    return str(draft)


@lru_cache(maxsize=16)
def _openai_model(
    model: str, base_url: str | None, api_key: str, temperature: float, cap: int, timeout: float,
    retries: int, backoff_s: float, cooldown_s: float, max_reply_chars: int = 0,
) -> BaseChatModel:
    from agentic_rag.llm.remote import RemoteChat
    from agentic_rag.llm.transport import model_server_client

    # the client's own retries are off: RemoteChat retries within the question's deadline; its HTTP client
    # reads every reply within the model server's bounds (llm/transport.py)
    return RemoteChat(
        model=model,
        base_url=base_url,
        api_key=api_key,
        temperature=temperature,
        max_tokens=cap,
        timeout=timeout,
        max_retries=0,
        http_client=model_server_client(base_url, timeout),
    ).with_retry_policy(retries, backoff_s, cooldown_s, max_reply_chars)


def get_tokenizer(settings) -> Any:
    """The HF tokenizer that context budgets are counted with (see module docstring)."""
    if settings.llm.LLM_BACKEND == "local":
        return load_tokenizer(resolve_local_model(settings))
    return load_tokenizer(ensure_converted(Path(settings.paths.MODEL_CACHE_DIR).expanduser(), FAST_MODEL))


def count_tokens(text: str, settings) -> int:
    return len(get_tokenizer(settings).encode(text, add_special_tokens=False))
