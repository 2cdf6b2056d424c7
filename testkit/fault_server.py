"""A real OpenAI-compatible chat server on 127.0.0.1 that injects faults, for reliability tests and
scripts/bench_reliability.py.

It speaks HTTP for real (stdlib ``ThreadingHTTPServer`` on a free port), so the openai backend is
exercised through its actual client, timeouts and error handling. Each request to
``/v1/chat/completions`` takes the next mode from ``plan`` (then ``default``):

* ``ok``: a chat completion whose text is ``reply`` rendered against the prompt's sources
  (``{cite:PHRASE}`` becomes ``[n]``, as in ``testkit.fakes.ScriptedChat``), with usage;
* ``empty``: a well-formed completion with empty text;
* ``500`` / ``429`` / ``401``: that HTTP status (the 500 body echoes the request's Authorization header, as a
  careless proxy would, so tests can check that no key leaks through error texts);
* ``hang``: no reply for ``hang_s`` seconds (released early by ``stop``);
* ``malformed``: HTTP 200 with a body that is not JSON;
* ``no_choices``: HTTP 200 JSON without ``choices``;
* ``drop``: the connection is closed without any reply;
* ``trickle``: the headers of a completion at once, then its body one byte every ``trickle_s`` seconds, for
  ``hang_s`` seconds at most (then the rest): a server that is never silent for a whole read timeout;
* ``gzip_bomb``: a completion of ``bomb_bytes`` spaces, gzip-encoded (a thousandth of that on the wire);
* ``many_choices``: a plain completion of ``n_choices`` choices (200,000 by default: about 30 MB);
* ``bad_usage`` / ``negative_usage``: a completion whose ``usage.total_tokens`` is ``"many"`` / counts are negative;
* ``content_parts``: a completion whose ``content`` is a list of parts (text and an image), as some servers send;
* ``301`` / ``302`` / ``307``: a redirect to ``redirect_to`` (a GET there is answered as a POST is);
* ``500_escaped``: HTTP 500 whose message echoes the Authorization header escaped as a careless proxy does
  (Python's repr, JSON with escaped slashes, URL-encoded).

With ``logprobs`` (a dict: ``token``, each reply token's log-probability; ``top``, the first token's
alternatives as {token: log-probability}) a request that asks for ``logprobs`` and names ``top_logprobs``
(0 will do) gets them back, as vLLM, llama.cpp's servers and OpenAI return them: llama-cpp-python's server
returns none without ``top_logprobs``, so the strictest rule is the one served here. Without ``logprobs``
given to the server they are ignored, as ``transformers serve`` does.

"Connection refused" needs no server: ``refused_url()`` names a port nothing listens on.
"""

from __future__ import annotations

import json
import socket
import threading
import time
import zlib
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Iterable
from urllib.parse import quote

from testkit.fakes import render_reply
from testkit.servers import free_port

MODES = ("ok", "empty", "500", "429", "401", "hang", "malformed", "no_choices", "drop", "trickle", "gzip_bomb",
         "many_choices", "bad_usage", "negative_usage", "content_parts", "301", "302", "307", "500_escaped")
REDIRECTS = {"301": "Moved Permanently", "302": "Found", "307": "Temporary Redirect"}


def refused_url() -> str:
    """An OpenAI base URL on a port that nothing listens on (bound and released just now)."""
    return f"http://127.0.0.1:{free_port()}/v1"


class FaultServer:
    def __init__(self, reply: str = "ok", plan: Iterable[str] = (), default: str = "ok", hang_s: float = 30.0,
                 logprobs: dict[str, Any] | None = None, trickle_s: float = 0.25, bomb_bytes: int = 64_000_000,
                 n_choices: int = 200_000, redirect_to: str = "") -> None:
        self.reply, self.hang_s, self.logprobs = reply, hang_s, logprobs
        self.trickle_s, self.bomb_bytes, self.n_choices, self.redirect_to = trickle_s, bomb_bytes, n_choices, redirect_to
        self.unsent: list[int] = []  # per trickled reply: the bytes the client never waited for
        self._bomb_data: bytes | None = None
        self.requests: list[dict[str, Any]] = []
        self._lock = threading.Lock()
        self._released = threading.Event()
        self.set_plan(plan, default)
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: Any) -> None:  # quiet
                pass

            def do_POST(self) -> None:  # noqa: N802
                body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))) or b"{}")
                mode = server._next(self.path, body, self.headers.get("Authorization", ""), self.command)
                server._answer(self, mode, body)

            do_GET = do_POST  # a client that follows a redirect to a GET is answered too (and recorded)

        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._httpd.daemon_threads = True
        self.port = self._httpd.server_address[1]
        self.url = f"http://127.0.0.1:{self.port}/v1"
        self._thread = threading.Thread(target=self._httpd.serve_forever, daemon=True)

    # -- control ----------------------------------------------------------------------------------
    def set_plan(self, plan: Iterable[str] = (), default: str = "ok") -> None:
        plan = list(plan)
        for mode in [*plan, default]:
            if mode not in MODES:
                raise ValueError(f"unknown fault mode {mode!r}; expected one of {MODES}")
        with self._lock:
            self.plan, self.default = plan, default

    def modes_served(self) -> list[str]:
        with self._lock:
            return [r["mode"] for r in self.requests]

    def __enter__(self) -> "FaultServer":
        self._thread.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self.stop()

    def start(self) -> "FaultServer":
        return self.__enter__()

    def stop(self) -> None:
        self._released.set()
        self._httpd.shutdown()
        self._httpd.server_close()

    # -- serving ----------------------------------------------------------------------------------
    def _next(self, path: str, body: dict[str, Any], auth: str, method: str = "POST") -> str:
        with self._lock:
            mode = self.plan.pop(0) if self.plan else self.default
            self.requests.append({"path": path, "method": method, "mode": mode, "authorization": auth,
                                  "logprobs": body.get("logprobs"), "top_logprobs": body.get("top_logprobs"),
                                  "prompt": "\n".join(str(m.get("content", "")) for m in body.get("messages", []))})
            return mode

    def _answer(self, h: BaseHTTPRequestHandler, mode: str, body: dict[str, Any]) -> None:
        if mode == "drop":
            h.close_connection = True
            h.connection.shutdown(socket.SHUT_RDWR)
            return
        if mode == "hang":
            self._released.wait(self.hang_s)
            mode = "ok"
        if mode == "500":
            echoed = h.headers.get("Authorization", "")
            return _send(h, 500, {"error": {"message": f"upstream failed for request with Authorization: {echoed}",
                                            "type": "server_error"}})
        if mode == "500_escaped":
            echoed = h.headers.get("Authorization", "")
            message = f"upstream failed: headers={{'Authorization': {echoed!r}}} retry=/v1?auth={quote(echoed, safe='')}"
            escaped = json.dumps({"error": {"message": message, "type": "server_error"}}).replace("/", "\\/")
            return _send_raw(h, 500, escaped.encode(), "application/json")
        if mode == "429":
            return _send(h, 429, {"error": {"message": "rate limited", "type": "rate_limit"}}, {"Retry-After": "0"})
        if mode == "401":
            return _send(h, 401, {"error": {"message": "invalid api key", "type": "invalid_request_error"}})
        if mode in REDIRECTS:
            return _send(h, int(mode), {"error": {"message": REDIRECTS[mode]}}, {"Location": self.redirect_to})
        if mode == "malformed":
            return _send_raw(h, 200, b'{"id": "x", "choices": [{"message": ', "application/json")
        if mode == "no_choices":
            return _send(h, 200, {"id": "chatcmpl-x", "object": "chat.completion", "created": 0, "model": "m"})
        if mode == "gzip_bomb":
            return _send_raw(h, 200, self._bomb(), "application/json", {"Content-Encoding": "gzip"})
        prompt = "\n".join(str(m.get("content", "")) for m in body.get("messages", []))
        text = "" if mode == "empty" else render_reply(self.reply, prompt)
        reply = self._completion(body, prompt, text)
        if mode == "many_choices":  # joined as text: 30 MB serialised whole would keep the client waiting for headers
            choice = json.dumps(reply.pop("choices")[0]).encode()
            return _send_raw(h, 200, json.dumps(reply).encode()[:-1] + b', "choices": [' + b", ".join([choice] * self.n_choices)
                             + b"]}", "application/json")
        if mode == "bad_usage":
            reply["usage"]["total_tokens"] = "many"
        elif mode == "negative_usage":
            reply["usage"] = {k: -v for k, v in reply["usage"].items()}
        elif mode == "content_parts":
            half = len(text) // 2
            reply["choices"][0]["message"]["content"] = [
                {"type": "text", "text": text[:half]}, {"type": "image_url", "image_url": {"url": "data:,"}},
                {"type": "text", "text": text[half:]}]
        if mode == "trickle":
            return self._trickle(h, json.dumps(reply).encode())
        _send(h, 200, reply)

    def _completion(self, body: dict[str, Any], prompt: str, text: str) -> dict[str, Any]:
        n_in, n_out = len(prompt.split()) + 20, len(text.split())
        choice: dict[str, Any] = {"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": text}}
        if self.logprobs and body.get("logprobs") and body.get("top_logprobs") is not None:
            tokens = [{"token": w, "logprob": self.logprobs["token"], "top_logprobs": []} for w in text.split()]
            if tokens and body.get("top_logprobs"):
                tokens[0]["top_logprobs"] = [{"token": t, "logprob": v} for t, v in self.logprobs.get("top", {}).items()]
            choice["logprobs"] = {"content": tokens}
        return {
            "id": "chatcmpl-fault", "object": "chat.completion", "created": 0, "model": body.get("model", "m"),
            "choices": [choice],
            "usage": {"prompt_tokens": n_in, "completion_tokens": n_out, "total_tokens": n_in + n_out},
        }

    def _trickle(self, h: BaseHTTPRequestHandler, data: bytes) -> None:
        """The headers now, then a byte every ``trickle_s`` until ``hang_s`` has passed (or ``stop``)."""
        until, sent = time.monotonic() + self.hang_s, 0
        try:
            h.send_response(200)
            h.send_header("Content-Type", "application/json")
            h.send_header("Content-Length", str(len(data)))
            h.end_headers()
            h.wfile.flush()
            while sent < len(data) - 1 and time.monotonic() < until and not self._released.is_set():
                h.wfile.write(data[sent:sent + 1])
                h.wfile.flush()
                sent += 1
                time.sleep(self.trickle_s)
            h.wfile.write(data[sent:])
            sent = len(data)
        except (BrokenPipeError, ConnectionResetError):  # the client gave up
            pass
        with self._lock:
            self.unsent.append(len(data) - sent)

    def _bomb(self) -> bytes:
        """A completion of ``bomb_bytes`` spaces, gzip-compressed (built once, in a fraction of a second)."""
        if self._bomb_data is None:
            head, tail = b'{"id": "x", "object": "chat.completion", "created": 0, "model": "m", "choices": [{"index": 0, ' \
                         b'"finish_reason": "stop", "message": {"role": "assistant", "content": "', b'"}}]}'
            packer = zlib.compressobj(9, zlib.DEFLATED, 16 + zlib.MAX_WBITS)  # the gzip format
            block = b" " * 1_000_000
            parts = [packer.compress(head)] + [packer.compress(block) for _ in range(self.bomb_bytes // len(block))]
            self._bomb_data = b"".join([*parts, packer.compress(tail), packer.flush()])
        return self._bomb_data


def _send(h: BaseHTTPRequestHandler, status: int, payload: dict[str, Any], headers: dict[str, str] | None = None) -> None:
    _send_raw(h, status, json.dumps(payload).encode(), "application/json", headers)


def _send_raw(h: BaseHTTPRequestHandler, status: int, data: bytes, ctype: str, headers: dict[str, str] | None = None) -> None:
    try:
        h.send_response(status)
        h.send_header("Content-Type", ctype)
        h.send_header("Content-Length", str(len(data)))
        for k, v in (headers or {}).items():
            h.send_header(k, v)
        h.end_headers()
        h.wfile.write(data)
    except (BrokenPipeError, ConnectionResetError):  # the client gave up (a timeout): nothing to answer
        pass
