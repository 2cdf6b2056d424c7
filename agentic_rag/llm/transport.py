"""The HTTP boundary to a model server: what the openai backend's client accepts from it.

The user chooses the server, but what it sends back is untrusted (docs/threat-model.md): a proxy in
front of it, a misconfigured gateway or a hostile endpoint can trickle, inflate, redirect. The OpenAI
SDK's own client reads with a timeout per socket read (a byte every few seconds never trips it),
follows redirects (a 301 turns the call into a GET whose body is shown as the answer; a 307 re-sends
the pages and the question to another origin) and inflates a compressed body whole before anything
measures it. The client ``model_server_client`` builds, the only one ``RemoteChat`` sends with, has
none of that:

* one deadline per call: every connect, write and read on its sockets is given only what is left of the
  call's deadline (``llm_deadline``: the attempt's ``LLM_TIMEOUT_S``, never past the question's
  ``WALL_TIME_S``), so however a server paces its bytes the call ends by then;
* no redirect: a 3xx is refused, as a chat completion is never legitimately moved;
* one bounded reader for reply bodies: the decoded bytes are counted while they are inflated, and a
  reply that would pass ``MAX_REPLY_BYTES`` is refused with nothing more read or parsed; a completion
  reaches the SDK as JSON within Python's limits, with its first choice only (one is asked for; the SDK
  builds a model of each choice it is sent, 7 s of CPU for the 62,000 that fit in 4 MB).

The SDK sends with httpx or with its successor httpx2, depending on its version; both are driven
through the same names, and the library is the one the installed SDK's default client derives from.
"""

from __future__ import annotations

import importlib
import json
import urllib.request
import zlib
from types import ModuleType
from typing import Any, Iterable
from urllib.parse import urlsplit

from agentic_rag.llm.usage import seconds_left
from agentic_rag.redact import redact_url
from agentic_rag.telemetry import parse_json

# A reply body's decoded size bound (bytes). A completion capped at MAX_OUTPUT_TOKENS (4,096 at most),
# with its token log-probabilities, is well under 1 MB; parsing 4 MB of JSON costs tens of MB at worst.
MAX_REPLY_BYTES = 4_000_000
ACCEPTED_ENCODING = "gzip"  # what the server is told it may compress with: the one the bounded reader inflates
IDENTITY = ("", "identity")  # a body sent as it is
PASSED_ON = ("content-encoding", "content-length", "transfer-encoding")  # headers of the body as sent, not as read


class BadReply(Exception):
    """The server's reply broke a rule of the boundary (or was not a completion): the call fails with
    this text, and is tried again only when ``retryable`` (a broken body may come whole next time; a
    redirect or an oversize reply would come again)."""

    def __init__(self, text: str, retryable: bool = False) -> None:
        super().__init__(text)
        self.retryable = retryable


def sdk_http_library() -> ModuleType:
    """httpx or httpx2: the library the installed openai SDK's default client is a client of."""
    import openai

    for cls in type.mro(getattr(openai, "DefaultHttpxClient", object)):
        root = cls.__module__.partition(".")[0]
        if cls.__name__ == "Client" and root != "openai":
            return importlib.import_module(root)
    return importlib.import_module("httpx")


def model_server_client(base_url: str | None, timeout_s: float) -> Any:
    """An HTTP client for the OpenAI SDK (``http_client=``) that reads every reply within the bounds above."""
    http = sdk_http_library()
    return http.Client(transport=BoundedTransport(http, env_proxy(base_url)), follow_redirects=False,
                       timeout=timeout_s)


def env_proxy(url: str | None) -> str | None:
    """The proxy the environment names for ``url`` (``HTTPS_PROXY``, ``ALL_PROXY``, less ``NO_PROXY``), as
    the SDK's own client would have used: a client given its own transport reads no proxy variable."""
    parts = urlsplit(url or "https://api.openai.com")
    proxies = urllib.request.getproxies_environment()
    if urllib.request.proxy_bypass_environment(parts.hostname or "", proxies):
        return None
    return proxies.get(parts.scheme) or proxies.get("all")


class BoundedTransport:
    """The library's own HTTP transport, its sockets behind the call's deadline, its replies read by
    ``read_body``: what reaches the SDK is a whole, decoded body of at most ``MAX_REPLY_BYTES``."""

    def __init__(self, http: ModuleType, proxy: str | None = None, max_bytes: int = MAX_REPLY_BYTES) -> None:
        self._http, self._max_bytes = http, max_bytes
        self._inner = http.HTTPTransport(proxy=proxy)
        pool = self._inner._pool  # the connection pool: the one place its sockets are opened
        core = importlib.import_module(type(pool).__module__.partition(".")[0])  # httpcore, or httpcore2
        pool._network_backend = DeadlineBackend(pool._network_backend, core)

    def handle_request(self, request: Any) -> Any:
        request.headers["Accept-Encoding"] = ACCEPTED_ENCODING
        response = self._inner.handle_request(request)
        try:
            refuse_redirect(response.status_code, response.headers.get("location", ""))
            body = read_body(response.stream, response.headers.get("content-encoding", ""),
                             response.headers.get("content-length"), self._max_bytes)
        finally:
            response.close()
        if response.status_code < 300 and "json" in response.headers.get("content-type", ""):
            body = first_choice_only(body)
        headers = [(k, v) for k, v in response.headers.multi_items() if k.lower() not in PASSED_ON]
        return self._http.Response(response.status_code, headers=headers, content=body, extensions=response.extensions)

    def close(self) -> None:
        self._inner.close()

    def __enter__(self) -> "BoundedTransport":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()


def refuse_redirect(status: int, location: str) -> None:
    """A 3xx is not followed: a GET to its target would answer with another document, a 307 would send
    the pages and the question to another origin."""
    if 300 <= status < 400:  # what matters first: the rest may be cut where the error is quoted
        raise BadReply(f"HTTP {status}: a redirect, not followed (a chat completion is never redirected)"
                       + (f"; to {redact_url(location)}" if location else ""))


def read_body(chunks: Iterable[bytes], encoding: str, length: str | None, max_bytes: int) -> bytes:
    """The body, decoded, refused once it passes ``max_bytes``: inflated at most one byte past what is
    left of the bound at a time, so a reply compressed a thousandfold costs ``max_bytes`` of memory, not
    a thousand times its size on the wire."""
    if length is not None and length.isdigit() and int(length) > max_bytes and encoding.strip().lower() in IDENTITY:
        raise _too_large(max_bytes)  # said by the server itself: nothing is read
    inflate = _inflater(encoding)
    body = bytearray()
    try:
        for chunk in chunks:
            body += inflate(chunk, max_bytes - len(body) + 1)
            if len(body) > max_bytes:
                raise _too_large(max_bytes)
    except zlib.error as exc:
        raise BadReply(f"malformed reply: its {encoding} encoding is broken ({exc})", retryable=True) from None
    return bytes(body)


def first_choice_only(body: bytes) -> bytes:
    """A completion's body with its first choice only, so what the SDK parses is bounded by what one
    choice may hold; a body that is not JSON within Python's limits (nesting, digits) is malformed here,
    before the SDK's parser could fail in a way no caller expects."""
    try:
        reply = parse_json(body)
    except json.JSONDecodeError as exc:
        raise BadReply(f"malformed reply: its body is not JSON ({exc})", retryable=True) from None
    choices = reply.get("choices") if isinstance(reply, dict) else None
    if not isinstance(choices, list) or len(choices) <= 1:
        return body
    return json.dumps({**reply, "choices": choices[:1]}).encode()


def _too_large(max_bytes: int) -> BadReply:
    return BadReply(f"the reply is larger than {max_bytes:,} bytes (decoded; MAX_REPLY_BYTES in "
                    "agentic_rag/llm/transport.py): it was not read further")


def _inflater(encoding: str):
    """``(chunk, at_most) -> bytes`` for the body's content encoding: identity or gzip, the one asked for."""
    coding = encoding.strip().lower()
    if coding in IDENTITY:
        return lambda chunk, at_most: chunk[:at_most]
    if coding in ("gzip", "x-gzip"):
        inflater = zlib.decompressobj(16 + zlib.MAX_WBITS)
        return lambda chunk, at_most: inflater.decompress(chunk, at_most)
    raise BadReply(f"the reply is encoded {coding[:40]!r}, which the client did not ask for "
                   f"(Accept-Encoding: {ACCEPTED_ENCODING})")


class DeadlineBackend:
    """A network backend whose every socket operation gets at most what is left of the call's deadline,
    and none once it has passed: the library's timeouts bound each read, this bounds the call."""

    def __init__(self, inner: Any, core: ModuleType) -> None:
        self._inner, self._core = inner, core

    def connect_tcp(self, host: str, port: int, timeout: float | None = None, local_address: str | None = None,
                    socket_options: Any = None) -> "DeadlineStream":
        timeout = within_deadline(timeout, self._core.ConnectTimeout)
        return DeadlineStream(self._inner.connect_tcp(host, port, timeout=timeout, local_address=local_address,
                                                      socket_options=socket_options), self._core)

    def connect_unix_socket(self, path: str, timeout: float | None = None, socket_options: Any = None) -> "DeadlineStream":
        timeout = within_deadline(timeout, self._core.ConnectTimeout)
        return DeadlineStream(self._inner.connect_unix_socket(path, timeout=timeout, socket_options=socket_options),
                              self._core)

    def sleep(self, seconds: float) -> None:
        self._inner.sleep(seconds)


class DeadlineStream:
    """One connection's socket, each read and write cut to the deadline of the call using it now (a
    kept-alive connection serves several calls, each with its own)."""

    def __init__(self, inner: Any, core: ModuleType) -> None:
        self._inner, self._core = inner, core

    def read(self, max_bytes: int, timeout: float | None = None) -> bytes:
        return self._inner.read(max_bytes, within_deadline(timeout, self._core.ReadTimeout))

    def write(self, buffer: bytes, timeout: float | None = None) -> None:
        self._inner.write(buffer, within_deadline(timeout, self._core.WriteTimeout))

    def start_tls(self, ssl_context: Any, server_hostname: str | None = None, timeout: float | None = None) -> "DeadlineStream":
        timeout = within_deadline(timeout, self._core.ConnectTimeout)
        return DeadlineStream(self._inner.start_tls(ssl_context, server_hostname, timeout), self._core)

    def close(self) -> None:
        self._inner.close()

    def get_extra_info(self, info: str) -> Any:
        return self._inner.get_extra_info(info)


def within_deadline(timeout: float | None, expired: type[Exception]) -> float | None:
    """``timeout`` cut to the seconds left before the call's deadline; ``expired`` raised once none are."""
    left = seconds_left()
    if left is None:
        return timeout
    if left <= 0:
        raise expired("the call's deadline passed before the whole reply arrived")
    return left if timeout is None else min(timeout, left)
