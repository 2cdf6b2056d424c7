"""HTTP additions for the LangGraph server (`langgraph dev`, langgraph.json's ``http.app``).

langgraph-api publishes each graph's input schema but does not check a run's input against it: an
input without ``question`` used to start the run and come back as ``{"__error__": KeyError}``.
This middleware checks the input of every run-creating request against the graph's input JSON
schema (``GraphInput`` in agentic_rag/state.py), and its settings, and an assistant's, against ``Settings``
(the graphs' context schema; a request sets only the per-request ones) before a run exists, and answers 422
naming the field or setting. A body of any request that holds more values than MAX_REQUEST_ELEMENTS, or
nests deeper than MAX_REQUEST_DEPTH, is 422 too, found on its bytes before any parser builds a value; the
reading, parsing and checking run in a worker thread, so one large body holds no other client up.
"""

from __future__ import annotations

import functools
import json
import re
from typing import Any, Callable

import anyio.to_thread
from starlette.applications import Starlette
from starlette.middleware import Middleware

from agentic_rag.telemetry import parse_json

# POST /runs, /runs/wait, /runs/stream, /runs/batch, /runs/crons and the same under /threads/{id}
_RUN_ROUTE = re.compile(r"^(?P<thread>/threads/[^/]+)?/runs(?:/(?P<kind>wait|stream|batch|crons))?/?$")
# POST /assistants and PATCH /assistants/{id}: an assistant's config and context join every run it starts
_ASSISTANT_ROUTE = re.compile(r"^/assistants(?P<id>/[^/]+)?/?$")


@functools.lru_cache(maxsize=None)
def _validator(assistant: str):
    """The input schema's validator of the graph an assistant id names (an assistant created under
    another id gets the agent's; both graphs share ``GraphInput``)."""
    import jsonschema_rs  # langgraph-api's own validator, present wherever this server runs

    from graphs import SYSTEMS, get_graph

    return jsonschema_rs.validator_for(get_graph(assistant if assistant in SYSTEMS else SYSTEMS[0]).get_input_jsonschema())


def input_problem(payload: Any, on_thread: bool) -> str | None:
    """Why a run request's input cannot start a graph, or None when it can."""
    if not isinstance(payload, dict) or payload.get("command"):
        return None  # not ours to judge: the server rejects malformed bodies, a command resumes a run
    given = payload.get("input")
    if given is None and on_thread:
        return None  # continues the thread's stored state
    if not isinstance(given, dict):
        return 'input must be an object with a "question" string, e.g. {"input": {"question": "..."}}'
    for error in _validator(str(payload.get("assistant_id", ""))).iter_errors(given):
        where = ".".join(["input", *map(str, error.instance_path)])
        return f"{where}: {error.message}"
    if not given["question"].strip():
        return "input.question: must not be empty"
    pages = (given.get("record") or {}).get("search_results") if isinstance(given.get("record"), dict) else None
    if isinstance(pages, list) and len(pages) > (cap := _server_settings().eval.MAX_RECORD_PAGES):
        return f"input.record.search_results: {len(pages)} pages, more than the {cap} a record may hold (MAX_RECORD_PAGES)"
    return settings_problem(payload)


@functools.lru_cache(maxsize=1)
def _server_settings():
    """The server's own settings (its environment): the bounds a request cannot change."""
    from agentic_rag.configuration import Settings

    return Settings.load()


def settings_problem(payload: dict[str, Any]) -> str | None:
    """Why a run request's settings (``context``, by section as LangGraph Studio sends them, or
    ``config.configurable``, flat or nested) cannot be used, or None: the one-line settings error before a
    run exists, not a validation traceback in the run's output. A request may set only the per-request
    settings (``Settings.from_runnable_config`` refuses the rest, here and in the run)."""
    from agentic_rag.baug.fitted import decision_in_force
    from agentic_rag.configuration import FIELD_SECTIONS, SECTIONS, Settings, SettingsError, flat_name

    context, config = payload.get("context") or {}, payload.get("config") or {}
    for name, value in (("context", context), ("config", config)):
        if not isinstance(value, dict):
            return f"{name} must be an object, not {type(value).__name__}"
    configurable = config.get("configurable") or {}
    if not isinstance(configurable, dict):
        return f"config.configurable must be an object, not {type(configurable).__name__}"
    for key in (str(k) for k in context if str(k).lower() not in SECTIONS):  # LangGraph drops them from the run
        name = flat_name(key)
        if name in FIELD_SECTIONS:
            return f'context.{key}: context takes settings by section: {{"{FIELD_SECTIONS[name]}": {{"{name}": ...}}}}'
        return f"context.{key}: not a settings section (context takes {', '.join(SECTIONS)})"
    where = "context" if context else "config.configurable"
    try:
        settings = Settings.from_runnable_config({"configurable": {**configurable, **context}})
    except SettingsError as exc:
        return f"{where}: {exc}"
    try:  # a policy asked for whose decision this server cannot read (GATE_POLICY=fitted, no decision for its model)
        decision_in_force(settings)
    except (ValueError, FileNotFoundError) as exc:
        return f"{where}: {exc}"
    return None


MAX_REQUEST_DEPTH = 64  # levels of nesting a request body may have: far past any real input, config or metadata
# strings, containers and separators a request body may hold: a record of MAX_RECORD_PAGES pages holds a few
# hundred, and a parser turns each into an object (60 MB of `{}` were 20 million dicts, 9 GB of the server)
MAX_REQUEST_ELEMENTS = 100_000
_STRING_REST = re.compile(rb'[^"\\]*+(?:\\.[^"\\]*+)*+"', re.DOTALL)  # after a string's opening quote: to its end
_NOT_BRACKETS = bytes(b for b in range(256) if b not in b"{}[]")
_OPENERS = frozenset(b"{[")
_TOO_MANY = f"the request holds more than {MAX_REQUEST_ELEMENTS:,} values, keys and separators (MAX_REQUEST_ELEMENTS)"
_TOO_DEEP = f"the request is nested more than {MAX_REQUEST_DEPTH} levels deep"


def shape_problem(body: bytes) -> str | None:
    """Why a request body is too large a value to parse (more than MAX_REQUEST_ELEMENTS strings, containers
    and separators, or nesting past MAX_REQUEST_DEPTH), or None, read from its bytes before any parser
    runs: a parser builds the whole value before anything could count it, and that value (millions of
    ``{}`` within MAX_RECORD_BYTES) fills gigabytes and holds the server for minutes. One pass, linear in
    the body's length; a string's text counts once, whatever it holds, so pages of HTML cost nothing.
    A malformed body is None: the parser refuses it, at or before the point where this count stopped."""
    elements, depth, pos = 0, 0, 0
    while pos < len(body):
        quote = body.find(b'"', pos)
        end = len(body) if quote < 0 else quote
        elements += sum(body.count(mark, pos, end) for mark in (b"{", b"[", b",")) + (quote >= 0)
        if elements > MAX_REQUEST_ELEMENTS:  # before the brackets are walked: the walk is bounded by the count
            return _TOO_MANY
        depth = _deepened(depth, body[pos:end].translate(None, _NOT_BRACKETS))
        if depth is None or depth > MAX_REQUEST_DEPTH:
            return None if depth is None else _TOO_DEEP
        if quote < 0:
            return None
        string = _STRING_REST.match(body, quote + 1)
        if string is None:  # a string never closed: malformed
            return None
        pos = string.end()
    return None


def _deepened(depth: int, brackets: bytes) -> int | None:
    """The nesting after ``brackets`` from ``depth``: past MAX_REQUEST_DEPTH as soon as it gets there, None
    when a bracket closes what was never opened (malformed: the parser says so)."""
    for bracket in brackets:
        depth += 1 if bracket in _OPENERS else -1
        if depth < 0 or depth > MAX_REQUEST_DEPTH:
            return None if depth < 0 else depth
    return depth


def body_problem(body: bytes, check: Callable[[Any], str | None] | None) -> str | None:
    """Why a request body is refused, or None; the work of a worker thread (parsing a large body takes
    seconds): its shape on the bytes first, then the route's check of the parsed value."""
    if problem := shape_problem(body):
        return problem
    return check(_payload(body)) if check else None


def _payload(body: bytes) -> Any:
    """The body's value, or None for one that is not UTF-8 JSON (the server's own parser, UTF-8 only, refuses
    it). ``json.loads`` alone would read UTF-16 too, whose bytes ``shape_problem`` does not read as text."""
    if json.detect_encoding(body) not in ("utf-8", "utf-8-sig"):
        return None
    try:
        return parse_json(body or b"null")
    except ValueError:
        return None


def _check_of(path: str, method: str):
    """What checks a request's body before the server sees it: a run's input and settings, an assistant's
    settings; None for every other request."""
    run = _RUN_ROUTE.match(path)
    if run and method == "POST":
        def check_runs(payload: Any) -> str | None:
            payloads = payload if run.group("kind") == "batch" and isinstance(payload, list) else [payload]
            return next((p for p in (input_problem(x, bool(run.group("thread"))) for x in payloads) if p), None)
        return check_runs
    assistant = _ASSISTANT_ROUTE.match(path)
    if assistant and method == ("PATCH" if assistant.group("id") else "POST"):
        return lambda payload: settings_problem(payload) if isinstance(payload, dict) else None
    return None


class RequireGraphInput:
    """Pure ASGI middleware: reads a request's body (bounded in bytes), checks its shape and a run's input in
    a worker thread, and replays it to the server."""

    def __init__(self, app) -> None:
        self.app = app

    async def __call__(self, scope, receive, send) -> None:
        http = scope["type"] == "http"
        check = _check_of(scope.get("path", ""), scope.get("method", "")) if http else None
        if check is None and not (http and scope.get("method") in ("POST", "PUT", "PATCH")):
            await self.app(scope, receive, send)
            return
        cap = _server_settings().eval.MAX_RECORD_BYTES
        body, size = await _read_capped(receive, cap)
        if size > cap:
            await _refuse(send, f"the request holds {size:,} bytes, more than {cap:,} (MAX_RECORD_BYTES)")
            return
        if problem := await anyio.to_thread.run_sync(body_problem, body, check):
            await _refuse(send, problem)
            return
        await self.app(scope, _replay(body, receive), send)


async def _read_capped(receive, cap: int) -> tuple[bytes, int]:
    """The body and its size; past ``cap`` the rest is read and dropped: memory holds at most the cap."""
    chunks, more, size = [], True, 0
    while more:
        message = await receive()
        size += len(message.get("body", b""))
        if size <= cap:
            chunks.append(message.get("body", b""))
        more = message.get("more_body", False)
    return b"".join(chunks), size


def _replay(body: bytes, receive):
    """A ``receive`` that gives the server the body already read, then what the client sends next (a disconnect)."""
    sent = False

    async def replay():
        nonlocal sent
        if sent:
            return await receive()
        sent = True
        return {"type": "http.request", "body": body, "more_body": False}

    return replay


async def _refuse(send, problem: str) -> None:
    data = json.dumps({"detail": problem}).encode()
    await send({"type": "http.response.start", "status": 422,
                "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(data)).encode())]})
    await send({"type": "http.response.body", "body": data})


app = Starlette(middleware=[Middleware(RequireGraphInput)])
