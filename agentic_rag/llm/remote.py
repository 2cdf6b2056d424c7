"""The openai backend's chat model: a failed call is retried within the question's time, and a model
that stays unavailable ends as ``LLMUnavailableError`` (a refusal upstream), never as a traceback.

The OpenAI client's own retries are off: its backoff knows nothing of the question's deadline, so a
question could outlive ``WALL_TIME_S`` by several timeouts. Here every attempt runs under one deadline,
the lesser of ``LLM_TIMEOUT_S`` and the time the question has left, that bounds the whole attempt, from
connecting to the reply's last byte (llm/transport.py cuts every socket operation to it), and a retry
that could not start before the question's deadline is not made. What the server sends is read within
the transport's bounds, and a completion is checked before langchain reads it (``checked_completion``).
Only faults of the server or the connection are retried or turned into
``LLMUnavailableError``; an error raised before any request was sent (a bug) still propagates. A
server that held a call through every attempt without a word is not asked again until its breaker's
cool-down has passed (llm/breaker.py).
"""

from __future__ import annotations

import time
from collections.abc import Iterator, Mapping
from typing import Any, Callable, TypeVar

import openai
from langchain_core.outputs import ChatResult
from langchain_openai import ChatOpenAI
from pydantic import PrivateAttr

from agentic_rag.llm.breaker import Call, guarded
from agentic_rag.llm.transport import BadReply
from agentic_rag.llm.usage import LLMUnavailableError, llm_deadline, seconds_left
from agentic_rag.redact import redact_text, redact_url, url_secrets

T = TypeVar("T")
OPENAI_DEFAULT_URL = "https://api.openai.com/v1"
RETRYABLE_4XX = frozenset({408, 409, 425, 429})  # timeout, conflict, too early, rate limit; every 5xx is retried too
ERROR_TEXT_CHARS = 200  # server error messages are quoted up to this length (characters)
USAGE_COUNTS = ("prompt_tokens", "completion_tokens", "total_tokens")


class MalformedReplyError(BadReply, ValueError):
    """The server answered, but not with a chat completion (no JSON, no choices, a usage that is not a
    count): asked again, it may answer with one."""

    def __init__(self, text: str) -> None:
        super().__init__(text, retryable=True)


class RemoteChat(ChatOpenAI):
    """``ChatOpenAI`` with deadline-bounded retries; see the module docstring.

    The retry policy lives in private attributes so it stays out of the replay cache's key: how often
    a call is retried does not change what a successful call returns."""

    _retries: int = PrivateAttr(default=0)
    _backoff_s: float = PrivateAttr(default=1.0)
    _cooldown_s: float = PrivateAttr(default=0.0)
    _max_reply_chars: int = PrivateAttr(default=0)

    def with_retry_policy(self, retries: int, backoff_s: float, cooldown_s: float = 0.0,
                          max_reply_chars: int = 0) -> "RemoteChat":
        self._retries, self._backoff_s, self._cooldown_s = int(retries), float(backoff_s), float(cooldown_s)
        self._max_reply_chars = int(max_reply_chars)
        return self

    @property
    def display_url(self) -> str:
        return redact_url(self.openai_api_base or OPENAI_DEFAULT_URL)

    def _generate(self, messages, stop=None, run_manager=None, **kwargs: Any) -> ChatResult:
        secret = self.openai_api_key.get_secret_value() if self.openai_api_key else ""
        return call_with_retries(
            lambda timeout: super(RemoteChat, self)._generate(messages, stop, run_manager, timeout=timeout, **kwargs),
            url=self.display_url, timeout_s=float(self.request_timeout or 600.0), retries=self._retries,
            backoff_s=self._backoff_s, cooldown_s=self._cooldown_s, secrets=(secret, *url_secrets(self.openai_api_base)),
        )

    def _create_chat_result(self, response: Any, generation_info: dict | None = None) -> ChatResult:
        reply = checked_completion(response, self._max_reply_chars)
        try:
            return super()._create_chat_result(reply, generation_info)
        except Exception as exc:  # whatever the parser tripped on, the server's reply was at fault
            raise MalformedReplyError(f"malformed reply: {exc}") from exc


def checked_completion(response: Any, max_chars: int = 0) -> dict[str, Any]:
    """The completion as langchain is to read it, once it is one: its first choice only (one was asked
    for; a server that sends 200,000 would have each made into a message), the text of a content sent
    as a list of parts, cut to ``max_chars`` (a server may ignore max_tokens: the cut comes before any
    text processing), and a usage whose counts are whole numbers of tokens, none negative. Anything else
    is a ``MalformedReplyError``."""
    if not isinstance(response, Mapping) and not hasattr(response, "model_dump"):  # the SDK read no JSON object
        raise MalformedReplyError(f"malformed reply: not a chat completion but {type(response).__name__}")
    reply = response if isinstance(response, Mapping) else response.model_dump(warnings=False)
    choices = reply.get("choices")
    if not choices:  # missing, null or empty: a completion with nothing to read
        raise MalformedReplyError("malformed reply: the completion has no choices")
    if not isinstance(choices, list) or not isinstance(choices[0], Mapping) \
            or not isinstance(choices[0].get("message"), Mapping):
        raise MalformedReplyError("malformed reply: its choices are not a list of messages")
    message = choices[0]["message"]
    return {**reply, "usage": _checked_usage(reply.get("usage")),
            "choices": [{**choices[0], "message": {**message, "content": _text_of(message.get("content"), max_chars)}}]}


def _text_of(content: Any, max_chars: int) -> str:
    """A message's text: a string as it is, a list of parts as their text parts joined (an image or
    audio part says nothing a citation could check); cut to ``max_chars`` when that is set."""
    if isinstance(content, list):
        content = "".join(part["text"] for part in content if isinstance(part, Mapping)
                          and part.get("type") == "text" and isinstance(part.get("text"), str))
    elif content is None:
        content = ""
    elif not isinstance(content, str):
        raise MalformedReplyError(f"malformed reply: its content is a {type(content).__name__}, not text")
    return content[:max_chars] if max_chars else content


def _checked_usage(usage: Any) -> Any:
    """The reply's usage, when its counts are whole numbers of tokens and none is negative (a missing
    usage books nothing, as before): every budget and total is summed from them."""
    if usage is None:
        return None
    if not isinstance(usage, Mapping):
        raise MalformedReplyError("malformed reply: its usage is not an object")
    for name in USAGE_COUNTS:
        count = usage.get(name)
        if count is not None and (type(count) is not int or count < 0):  # a bool is not a count
            raise MalformedReplyError(f"malformed reply: usage.{name} is {count!r:.40}, not a count of tokens")
    return usage


def call_with_retries(attempt: Callable[[float], T], *, url: str, timeout_s: float, retries: int, backoff_s: float,
                      cooldown_s: float = 0.0, secrets: tuple[str, ...] = ()) -> T:
    """``attempt(timeout)`` until it succeeds, a fault is not worth retrying, the retries are spent or
    the deadline (``llm_deadline``) leaves no time; then ``LLMUnavailableError`` with the last fault.
    A server that stopped answering is not asked at all while its breaker is open (llm/breaker.py)."""
    with guarded(url, cooldown_s) as call:
        return _attempts(attempt, call, url, timeout_s, retries, backoff_s, secrets)


def _attempts(attempt: Callable[[float], T], call: Call, url: str, timeout_s: float, retries: int, backoff_s: float,
              secrets: tuple[str, ...]) -> T:
    t0 = time.monotonic()
    faults: list[str] = []
    for n in range(retries + 1):
        left = seconds_left()
        if left is not None and left <= 0:
            break
        timeout = timeout_s if left is None else min(timeout_s, left)
        try:
            with llm_deadline(time.time() + timeout):  # the whole attempt, not each of its reads
                return attempt(timeout)
        except Exception as exc:  # noqa: BLE001 - classified below; anything else re-raised
            fault = describe_fault(exc, timeout)
            if fault is None:
                raise
            text, retryable, retry_after = fault
            faults.append(redact_text(text, secrets))
            if isinstance(exc, openai.APITimeoutError) and timeout >= timeout_s:  # the whole LLM_TIMEOUT_S, no word
                call.hung = faults[-1]
        if not retryable or n == retries:
            break
        wait = retry_after if retry_after is not None else backoff_s * 2 ** n
        left = seconds_left()
        if (left is not None and wait >= left) or (retry_after or 0) > timeout_s:  # a server's "come back in an hour"
            break
        time.sleep(wait)
    last = faults[-1] if faults else "the question's WALL_TIME_S ran out before the call could start"
    raise LLMUnavailableError(url, last, len(faults), time.monotonic() - t0)


def describe_fault(exc: BaseException, timeout: float) -> tuple[str, bool, float | None] | None:
    """(what went wrong, worth a retry, seconds the server asked to wait) for a fault of the server or
    the connection; None for anything else (a bug on this side must stay visible)."""
    if (bad := _in_chain(exc, BadReply)) is not None:  # raised by the transport or checked_completion
        return str(bad)[:ERROR_TEXT_CHARS], bad.retryable, None
    if isinstance(exc, openai.APITimeoutError):
        return f"no reply within {timeout:.1f} s", True, None
    if isinstance(exc, openai.APIConnectionError):
        return f"connection failed: {_root_cause(exc)}", True, None
    if isinstance(exc, openai.APIStatusError):
        status = exc.status_code
        phrase = getattr(exc.response, "reason_phrase", "") or ""
        body = exc.body.get("error", exc.body) if isinstance(exc.body, dict) else None
        detail = str(body.get("message", "") if isinstance(body, dict) else exc.message)[:ERROR_TEXT_CHARS]
        return f"HTTP {status} {phrase}: {detail}".strip(": "), status in RETRYABLE_4XX or status >= 500, _retry_after(exc)
    if isinstance(exc, openai.APIResponseValidationError):
        return str(exc)[:ERROR_TEXT_CHARS], True, None
    if _has_http_response(exc):  # raised while reading the server's reply (langchain attaches it)
        return f"malformed reply: {type(exc).__name__}: {str(exc)[:ERROR_TEXT_CHARS]}", True, None
    return None


def _has_http_response(exc: BaseException) -> bool:
    """Duck-typed: the openai SDK's HTTP library (httpx or its successor httpx2) varies by version."""
    response = getattr(exc, "response", None)
    return response is not None and hasattr(response, "status_code") and hasattr(response, "headers")


def _retry_after(exc: openai.APIStatusError) -> float | None:
    try:
        return max(0.0, float(exc.response.headers.get("retry-after", "")))
    except (TypeError, ValueError):
        return None


def _causes(exc: BaseException | None) -> Iterator[BaseException]:
    """``exc`` and what caused it, to the root (the SDK wraps the transport's errors in its own)."""
    seen: set[int] = set()
    while exc is not None and id(exc) not in seen:
        seen.add(id(exc))
        yield exc
        exc = exc.__cause__ or exc.__context__


def _in_chain(exc: BaseException, kind: type[BadReply]) -> BadReply | None:
    return next((e for e in _causes(exc) if isinstance(e, kind)), None)


def _root_cause(exc: BaseException) -> str:
    *_, root = _causes(exc)
    return str(root) or type(root).__name__
