"""Agent nodes added by configuration: what an extension declares, and how it is found.

An extension is a small graph node shipped outside the graph's source. It declares its name, its
node function, the edge it is inserted on (``after`` and/or ``before`` an existing node), and the
state keys it reads and writes; graphs/extend.py inserts it and checks the result before the graph
compiles. It is named in the ``EXTENSIONS`` setting, either by a ``module:attribute`` path or by a
name registered under the ``agentic_rag.extensions`` entry-point group, so adding one never means
editing graphs/agent.py. What the entry names must be an ``Extension`` or a function marked with
``extension_factory``: nothing else is called. The guide is docs/extending.md; examples/freshness.py is a working one.

An extension influences BAUG through ``extension_flags``: a request to abstain or to retrieve more,
with a reason code and a message that the refusal shows (baug/policy.py, baug/refusal.py).
"""

from __future__ import annotations

import difflib
import importlib
import re
from dataclasses import dataclass
from importlib.metadata import entry_points
from typing import Any, Callable, Mapping

from pydantic import BaseModel, ConfigDict, ValidationError

from agentic_rag.baug.policy import ABSTAIN, RETRIEVE_MORE
from agentic_rag.configuration import Settings, SettingsError
from agentic_rag.state import RAGState

ENTRY_POINT_GROUP = "agentic_rag.extensions"
FLAGS_KEY = "extension_flags"
ERROR_KEY = "extension_error"  # state: the extension that failed and its error
ROUTE_KEY = "extension_route"  # state: the route the extension that just ran chose
EXTENSION_FAILED = "ABSTAIN_EXTENSION_FAILED"  # the reason code of a question an extension failed
_NAME = re.compile(r"^[a-z][a-z0-9_]*$")
_CODE = re.compile(r"^[A-Z][A-Z0-9_]*$")


class ExtensionError(SettingsError):
    """An extension that cannot be loaded, inserted or run as declared (one line, names the extension)."""

    label = "extension error"


class ExtensionSettings(BaseModel):
    """Base of an extension's own settings: unknown keys are errors, values are fixed for a run.
    Give every field a description with its unit, as for the core settings."""

    model_config = ConfigDict(extra="forbid", frozen=True, allow_inf_nan=False)


@dataclass(frozen=True)
class Extension:
    """One extension node and where it goes.

    ``node(state, config) -> update`` sees only the state keys in ``reads`` and may write only those
    in ``writes`` (both must be ``RAGState`` keys). It is inserted on the edge ``after -> before``;
    with only ``after``, on every edge leaving that node; with only ``before``, on every edge into it.
    By default it continues where the edge led. With ``router`` it chooses among ``routes`` instead
    (which must include where the edge led); a loop through it needs a budget check on the way: pass
    through ``decide``, or set ``bounded`` and the builder takes ``routes[0]`` once the question's
    caps are spent or the node has run ``MAX_ROUNDS`` times.
    """

    name: str
    node: Callable[..., dict[str, Any]]
    reads: tuple[str, ...]
    writes: tuple[str, ...]
    after: str | None = None
    before: str | None = None
    router: Callable[..., str] | None = None
    routes: tuple[str, ...] = ()
    bounded: bool = False
    settings: type[ExtensionSettings] | None = None
    description: str = ""

    def options(self, config: Settings | Mapping[str, Any] | None) -> ExtensionSettings | None:
        """This extension's settings for a run: ``EXTENSION_SETTINGS[name]`` checked against its model."""
        settings = config if isinstance(config, Settings) else Settings.from_runnable_config(config)
        values = settings.agent.EXTENSION_SETTINGS.get(self.name, {})
        if self.settings is None:
            if values:
                raise ExtensionError(f"EXTENSION_SETTINGS[{self.name!r}]: extension {self.name} takes no settings")
            return None
        try:
            return self.settings.model_validate(values)
        except ValidationError as exc:
            first = exc.errors()[0]
            where = ".".join(str(p) for p in first["loc"])
            raise ExtensionError(f"EXTENSION_SETTINGS[{self.name!r}].{where}: {first['msg']}") from None

    def report(self, request: dict[str, Any] | None) -> dict[str, Any]:
        """The update that files (or, with None, withdraws) this extension's request to BAUG."""
        return {FLAGS_KEY: {self.name: request}}


def request(action: str, code: str, message: str, missing: list[str] | tuple[str, ...] = (),
            terms: list[str] | tuple[str, ...] = ()) -> dict[str, Any]:
    """A request to BAUG. ``action`` ABSTAIN, or RETRIEVE_MORE (one extra round while one is left, else
    abstain); ``code`` an UPPER_SNAKE reason (the decision becomes ABSTAIN_<code> or RETRIEVE_<code>);
    ``message`` the sentence a refusal shows; ``missing`` what would be needed; ``terms`` words the
    extra round adds to its queries."""
    out = {"action": action, "code": code, "message": message, "missing": list(missing), "terms": list(terms)}
    check_request("request()", out)
    return out


def check_request(owner: str, value: Any) -> None:
    """Raise ExtensionError unless ``value`` is a well-formed request (see ``request``)."""
    if not isinstance(value, dict):
        raise ExtensionError(f"{owner}: a request must be a dict made by agentic_rag.extensions.request, not {value!r}")
    if value.get("action") not in (ABSTAIN, RETRIEVE_MORE):
        raise ExtensionError(f"{owner}: request action {value.get('action')!r} is not {ABSTAIN} or {RETRIEVE_MORE}")
    if not isinstance(value.get("code"), str) or not _CODE.match(value["code"]):
        raise ExtensionError(f"{owner}: request code {value.get('code')!r} must be UPPER_SNAKE_CASE")
    if not isinstance(value.get("message"), str) or not value["message"].strip():
        raise ExtensionError(f"{owner}: a request needs a message (the sentence a refusal shows)")
    for key in ("missing", "terms"):
        if not all(isinstance(v, str) for v in value.get(key, [])):
            raise ExtensionError(f"{owner}: request {key} must be a list of strings")


def state_keys() -> list[str]:
    return list(RAGState.__annotations__)


def check_declaration(ext: Any, source: str) -> Extension:
    """The checks that need no graph: the object, its name, its callables and its state keys."""
    if not isinstance(ext, Extension):
        hint = (" (a function that builds one must be marked @agentic_rag.extensions.extension_factory)"
                if callable(ext) else "")
        raise ExtensionError(f"extension {source!r} is a {type(ext).__name__}, not an "
                             f"agentic_rag.extensions.Extension{hint}")
    if not isinstance(ext.name, str) or not _NAME.match(ext.name):
        raise ExtensionError(f"extension {source!r}: name {ext.name!r} must be lower_snake_case")
    if not callable(ext.node):
        raise ExtensionError(f"extension {ext.name}: node must be a function (state, config) -> update")
    if ext.after is None and ext.before is None:
        raise ExtensionError(f"extension {ext.name}: say where it goes with after=NODE and/or before=NODE")
    if (ext.router is None) != (not ext.routes):
        raise ExtensionError(f"extension {ext.name}: router and routes go together")
    if ext.bounded and ext.router is None:
        raise ExtensionError(f"extension {ext.name}: bounded applies to a router; this extension has none")
    known = state_keys()
    for kind, keys in (("reads", ext.reads), ("writes", ext.writes)):
        if isinstance(keys, str):
            raise ExtensionError(f"extension {ext.name}: {kind} must be a tuple of state keys, not the string {keys!r}")
        for key in keys:
            if key not in known:
                close = difflib.get_close_matches(str(key), known, n=1)
                hint = f" (did you mean {close[0]}?)" if close else ""
                raise ExtensionError(f"extension {ext.name} {kind} {key!r}, which is not a RAGState key{hint}")
    return ext


FACTORY_MARK = "__agentic_rag_extension_factory__"


def extension_factory(fn: Callable[[], Extension]) -> Callable[[], Extension]:
    """Mark a function of no arguments that builds an ``Extension`` (its node or settings made at load
    time), so that ``EXTENSIONS`` may name it. Nothing unmarked is ever called: a setting naming
    ``os:system`` or ``sys:exit`` is refused, not run."""
    setattr(fn, FACTORY_MARK, True)
    return fn


def _import_failed(spec: str, module_name: str, exc: BaseException) -> ExtensionError:
    text = str(exc).strip().splitlines()
    return ExtensionError(f"extension {spec!r}: importing module {module_name} failed: {type(exc).__name__}"
                          + (f": {text[0]}" if text else ""))


def _from_path(spec: str) -> Any:
    module_name, _, attribute = spec.partition(":")
    if not module_name or not attribute:
        raise ExtensionError(f"extension {spec!r}: expected 'module:attribute' or a registered name")
    try:
        module = importlib.import_module(module_name)
    except ModuleNotFoundError as exc:
        if exc.name and (module_name == exc.name or module_name.startswith(exc.name + ".")):
            raise ExtensionError(f"extension {spec!r}: no module named {exc.name!r}") from None
        raise _import_failed(spec, module_name, exc) from None
    except (Exception, SystemExit) as exc:  # noqa: BLE001 - a module that raises or does not parse: one line
        raise _import_failed(spec, module_name, exc) from None
    try:
        return getattr(module, attribute)
    except AttributeError:
        raise ExtensionError(f"extension {spec!r}: module {module_name} has no attribute {attribute!r}") from None


def _from_entry_point(name: str) -> Any:
    found = {ep.name: ep for ep in entry_points(group=ENTRY_POINT_GROUP)}
    if name not in found:
        registered = ", ".join(sorted(found)) or "none"
        raise ExtensionError(f"extension {name!r}: not a 'module:attribute' path, and no entry point of that name in "
                             f"group {ENTRY_POINT_GROUP} (registered: {registered})")
    try:
        return found[name].load()
    except (Exception, SystemExit) as exc:  # noqa: BLE001 - as for a path: one line naming the module
        raise _import_failed(name, found[name].module, exc) from None


def load_extension(spec: str) -> Extension:
    """The extension a ``EXTENSIONS`` entry names: an ``Extension``, or a function marked with
    ``extension_factory`` that returns one (called here, once)."""
    obj = _from_path(spec) if ":" in spec else _from_entry_point(spec)
    if not isinstance(obj, Extension) and getattr(obj, FACTORY_MARK, False) is True and callable(obj):
        try:
            obj = obj()
        except (Exception, SystemExit) as exc:  # noqa: BLE001 - the factory's own error, in one line
            text = str(exc).strip().splitlines()
            raise ExtensionError(f"extension {spec!r}: its factory raised {type(exc).__name__}"
                                 + (f": {text[0]}" if text else "")) from None
    return check_declaration(obj, spec)


def load_extensions(settings: Settings) -> list[Extension]:
    """Every extension the settings name, in order, with their settings checked."""
    extensions = [load_extension(spec) for spec in settings.agent.EXTENSIONS]
    names = [e.name for e in extensions]
    for name in dict.fromkeys(n for n in names if names.count(n) > 1):
        raise ExtensionError(f"extension {name} is named twice in EXTENSIONS")
    for name in settings.agent.EXTENSION_SETTINGS:
        if name not in names:
            raise ExtensionError(f"EXTENSION_SETTINGS names {name!r}, which is not among the extensions "
                                 f"({', '.join(names) or 'EXTENSIONS is empty'})")
    for ext in extensions:
        ext.options(settings)
    return extensions
