"""Reading settings: defaults < preset < environment < overrides, each in either spelling (flat
``RETRIEVAL_K`` or nested ``retrieval.RETRIEVAL_K``), with a one-line error naming a wrong key or
value, and a loud warning, not an error, for a setting this release removed."""

from __future__ import annotations

import difflib
import json
import os
import warnings
from pathlib import Path
from typing import Any, Iterable, Mapping, get_origin

from pydantic import BaseModel, ValidationError
from pydantic_settings import EnvSettingsSource, NoDecode
from pydantic_settings import SettingsError as EnvParseError

from agentic_rag.configuration.sections import (
    FIELD_SECTIONS,
    NESTED_DELIMITER,
    PER_REQUEST_SETTINGS,
    SECRET_SETTINGS,
    SECTIONS,
    SettingsError,
    flat_name,
    unit_of,
)
from agentic_rag.redact import redact_text
from agentic_rag.telemetry import parse_json

PRESETS_DIR = Path(__file__).resolve().parents[1] / "presets"
ENV_PREFIX = "AGENTIC_RAG_"
PRESET_ENV = ENV_PREFIX + "PRESET"  # the preset used when a caller names none
# The OpenAI SDK's own variables, read when the prefixed ones are unset (anyone with an OpenAI-compatible
# server has them exported already); every other unprefixed name is ignored with a warning.
ENV_FALLBACKS = ("OPENAI_BASE_URL", "OPENAI_API_KEY")

# Settings nobody had a reason to change, now constants beside their use: (the value every run had,
# where it lives now). A preset, variable or override that still names one is warned about and
# ignored for one release, then it is an unknown setting like any other.
REMOVED_SETTINGS: dict[str, tuple[Any, str]] = {
    "REPETITION_PENALTY": (1.1, "llm/factory.py REPETITION_PENALTY"),
    "INDEX_MEMORY_SIZE": (16, "ingest/ingest.py INDEXES_IN_MEMORY"),
    "HYBRID_VECTOR_WEIGHT": (1.0, "retrieval/hybrid.py: both rankings weigh the same in RRF"),
    "HYBRID_BM25_WEIGHT": (1.0, "retrieval/hybrid.py: both rankings weigh the same in RRF"),
    "WORKER_K": (4, "workers/worker.py WORKER_PASSAGES"),
    "WORKER_HOPS": (1, "workers/worker.py: a worker always follows sections and links once"),
    "ROUGH_MIN_OVERLAP": (0.2, "workers/worker.py ROUGH_MIN_OVERLAP"),
    "BM25_HALF_SCORE": (5.0, "supervisor/confidence_gate.py BM25_HALF_SCORE"),
    "MIN_CHUNKS_REQUIRED": (1, "supervisor/confidence_gate.py: tier 1 needs one passage at RELEVANCE_THRESHOLD"),
    "CRAG_BATCH_SIZE": (4, "crag_adapter.py KIT_BATCH_SIZE (UserModel(batch_size=...) still sets it)"),
    "CRAG_ANSWER_TOKENS": (75, "crag_adapter.py KIT_ANSWER_TOKENS, the kit's own cut"),
    "EVAL_LLM_JUDGE": (False, "EVAL_JUDGE=llm, or eval --judge llm, has an LLM judge grade every answer"),
}
RENAMED_SECTIONS = {"gate": "confidence_gate"}  # a section read under its old name is a one-line error naming the new


class RemovedSettingWarning(FutureWarning):
    """A removed setting or preset name was given: it is ignored (or read as its successor)."""


def _removed(name: str, source: str) -> bool:
    """True (after a warning) when ``name`` is a setting this release removed."""
    if name not in REMOVED_SETTINGS:
        return False
    value, where = REMOVED_SETTINGS[name]
    warnings.warn(f"setting {name} in {source} was removed and is ignored: it is fixed at {value!r} "
                  f"({where}); drop it from your presets, variables and overrides", RemovedSettingWarning, stacklevel=4)
    return True


class _EnvSource(EnvSettingsSource):
    """pydantic-settings' reading of the environment (prefix, ``__`` for nesting), plus the flat names
    (``AGENTIC_RAG_RETRIEVAL_K``) and the OpenAI SDK's variables; values are parsed as ``-o`` parses them,
    so a variable means the same in either spelling. The nested spelling wins over the flat one."""

    def __call__(self) -> dict[str, Any]:
        return self.read()[0]

    def read(self) -> tuple[dict[str, dict[str, Any]], dict[str, str]]:
        """Nested values, and for each flat name the variable it came from."""
        try:
            raw = super().__call__()
        except EnvParseError:  # a list or object setting whose value is not JSON
            raise SettingsError(_bad_json_variable()) from None
        values: dict[str, dict[str, Any]] = {}
        origins: dict[str, str] = {}
        for section, given in raw.items():
            if not isinstance(given, Mapping):
                var = f"{ENV_PREFIX}{section.upper()}"
                raise SettingsError(f"environment variable {var} must be a JSON object of {section} settings")
            for key, value in given.items():
                var = f"{ENV_PREFIX}{section.upper()}{NESTED_DELIMITER}{key.upper()}"
                name = _check_key(section, key.upper(), f"environment variable {var}")
                if name is None:
                    continue
                values.setdefault(section, {})[name] = _parse_value(name, value) if isinstance(value, str) else value
                origins[name] = var
        for name in REMOVED_SETTINGS:
            if ENV_PREFIX + name in os.environ:
                _removed(name, f"environment variable {ENV_PREFIX + name}")
        for name, section in FIELD_SECTIONS.items():
            if name in origins:
                continue
            var = ENV_PREFIX + name
            value = os.environ.get(var)
            if value is None and name in ENV_FALLBACKS:
                var, value = name, os.environ.get(name) or None
            if value is not None:
                values.setdefault(section, {})[name] = _parse_value(name, value)
                origins[name] = var
        return values, origins


def _bad_json_variable() -> str:
    """The variable pydantic-settings could not decode (its error names only the section)."""
    for var, value in sorted(os.environ.items()):
        if not var.upper().startswith(ENV_PREFIX):
            continue
        section, _, name = var.upper()[len(ENV_PREFIX):].partition(NESTED_DELIMITER)
        model = SECTIONS.get(section.lower())
        field = model.model_fields.get(name) if model is not None else None
        if model is None or name and (field is None or get_origin(field.annotation) not in (list, dict)
                                      or NoDecode in field.metadata):
            continue  # not a variable pydantic-settings decodes as JSON
        try:
            parse_json(value)
        except json.JSONDecodeError as exc:
            return f"environment variable {var} is not valid JSON ({exc})"
    return "an environment variable of a list or object setting is not valid JSON"


def read_preset(preset: str | Path) -> dict[str, Any]:
    # A shipped name wins over a path test: a name may carry a dot.
    named = PRESETS_DIR / f"{preset}.json"
    path = named if named.is_file() else Path(preset)
    if not path.is_file():
        names = sorted(p.stem for p in PRESETS_DIR.glob("*.json"))
        raise SettingsError(f"unknown preset {str(preset)!r}: not a file, and not one of {names}")
    try:
        data = parse_json(path.read_text())
    except json.JSONDecodeError as exc:
        raise SettingsError(f"preset {path} is not valid JSON: {exc}") from None
    if not isinstance(data, dict):
        raise SettingsError(f"preset {path} must hold a JSON object of settings")
    return data


def _parse_value(key: str, raw: str) -> Any:
    raw = raw.strip()
    if key in SECRET_SETTINGS:  # a key is text even when it reads as a number
        return raw
    if raw in {"True", "False"}:
        return raw == "True"
    try:
        return parse_json(raw)
    except json.JSONDecodeError:
        return raw


def parse_overrides(items: Iterable[str]) -> dict[str, Any]:
    """Parse ``KEY=VALUE`` strings (``KEY`` flat or ``section.KEY``); values that read as JSON
    (numbers, booleans, lists) are decoded."""
    out: dict[str, Any] = {}
    for item in items:
        if "=" not in item:
            raise SettingsError(f"override {item!r} is not of the form KEY=VALUE")
        key, raw = item.split("=", 1)
        out[key.strip()] = _parse_value(key.strip(), raw)
    return out


def _suggest(name: str, choices: Iterable[str]) -> str:
    close = difflib.get_close_matches(name, list(choices), n=3)
    return f"; did you mean {', '.join(close)}?" if close else ""


def _check_key(section: str, name: str, source: str) -> str | None:
    """``name`` as a field of ``section``; None for a removed setting (warned about); else a SettingsError
    saying where it belongs or what was meant."""
    if name in SECTIONS[section].model_fields:
        return name
    if _removed(name, source):
        return None
    if name in FIELD_SECTIONS:
        raise SettingsError(f"setting {name} in {source} belongs to section {FIELD_SECTIONS[name]}, not {section} "
                            f"({FIELD_SECTIONS[name]}.{name})")
    raise SettingsError(f"unknown setting {section}.{name} in {source}{_suggest(name, SECTIONS[section].model_fields)}")


def _renamed_section(key: str, source: str) -> None:
    if (new := RENAMED_SECTIONS.get(key.lower())) is not None:
        raise SettingsError(f"settings section {key!r} in {source} is now called {new!r}: write {new}.NAME, or the flat name")


def _section_name(key: str, source: str) -> str:
    section = key.lower()
    _renamed_section(key, source)
    if section not in SECTIONS:
        raise SettingsError(f"unknown settings section {key!r} in {source}{_suggest(section, SECTIONS)}")
    return section


def _is_setting_key(key: str, value: Any) -> bool:
    """A ``configurable`` key that names a setting or a section (the rest is LangGraph's or a caller's);
    a removed setting counts, so that it is warned about rather than silently dropped."""
    if key.lower() in SECTIONS:
        return isinstance(value, Mapping)
    return flat_name(key) in FIELD_SECTIONS or flat_name(key) in REMOVED_SETTINGS


def _canonical(values: Mapping[str, Any], source: str) -> dict[str, dict[str, Any]]:
    """Settings given in any spelling -> {section: {FLAT_NAME: value}}; an unknown key is a SettingsError."""
    out: dict[str, dict[str, Any]] = {}
    for key, value in values.items():
        dotted = str(key).replace(NESTED_DELIMITER, ".")
        if "." in dotted:  # section.NAME
            section_key, _, name = dotted.partition(".")
            section = _section_name(section_key, source)
            checked = _check_key(section, name.upper(), source)
            if checked is not None:
                out.setdefault(section, {})[checked] = value
        elif _removed(dotted.upper(), source):
            continue
        elif dotted.upper() in FIELD_SECTIONS:
            name = dotted.upper()
            out.setdefault(FIELD_SECTIONS[name], {})[name] = value
        elif dotted.lower() in SECTIONS:
            section = dotted.lower()
            if isinstance(value, BaseModel):
                value = value.model_dump()
            if not isinstance(value, Mapping):
                raise SettingsError(f"settings section {section} in {source} must be an object of settings, "
                                    f"not {type(value).__name__}")
            fields = out.setdefault(section, {})
            for name, inner in value.items():
                checked = _check_key(section, str(name).upper(), source)
                if checked is not None:
                    fields[checked] = inner
        else:
            _renamed_section(dotted, source)
            raise SettingsError(f"unknown setting {key!r} in {source}{_suggest(dotted.upper(), FIELD_SECTIONS)}")
    return out


# What a setting that is not per request would let a request do, by the setting's unit
_SERVER_ONLY = {
    "URL": "an endpoint (the server would send its requests, and its key, there)",
    "secret": "a credential",
    "model name": "a model", "model name or path": "a model",
    "path": "a path on the server (it would read or write there)",
    "store name": "code the server imports", "module paths or names": "code the server imports",
    "per extension": "code the server imports",
}


def request_settings(configurable: Mapping[str, Any]) -> dict[str, dict[str, Any]]:
    """The settings a run's ``configurable`` (a served graph's request: ``config.configurable`` or ``context``)
    names, nested; a SettingsError naming the first that only the server may set (``PER_REQUEST_SETTINGS``
    holds what a request may), so a client cannot send the server's key elsewhere or choose its files."""
    if "preset" in configurable:
        raise SettingsError("preset cannot be chosen by a request: a preset sets models and paths; the server's "
                            f"is {PRESET_ENV} where it starts")
    given = configurable.get("settings")
    known = {k: v for k, v in configurable.items() if _is_setting_key(k, v)}
    values = _canonical({**given, **known} if isinstance(given, Mapping) else known, source="override")
    for section, fields in values.items():
        for name in fields:
            if name not in PER_REQUEST_SETTINGS:
                why = _SERVER_ONLY.get(unit_of(SECTIONS[section].model_fields[name]), "how the server process runs")
                raise SettingsError(
                    f"setting {section}.{name} cannot be set by a request: it is {why}. A request may set only the "
                    "settings docs/configuration.md marks per request (budgets, thresholds, policy); this one is "
                    f"set where the server starts ({ENV_PREFIX}{name})")
    return values


def _merge(into: dict[str, dict[str, Any]], layer: Mapping[str, Mapping[str, Any]]) -> dict[str, dict[str, Any]]:
    """Setting by setting: a later layer replaces a setting's value, never a whole section."""
    for section, fields in layer.items():
        into.setdefault(section, {}).update(fields)
    return into


def _layers(preset: str | Path | None, overrides: Mapping[str, Any] | Iterable[str] | None):
    """(source label, nested values, flat name -> where it came from) for each source that gave
    settings, lowest priority first: preset, environment, overrides. Without a preset argument,
    ``AGENTIC_RAG_PRESET`` names one, so entry points that take no options (the CRAG kit's adapter, a
    served graph) can run the fast preset too."""
    from_env = not preset and bool(os.environ.get(PRESET_ENV))
    if from_env:
        preset = os.environ[PRESET_ENV]
    if preset:
        label = f"preset {preset}" + (f" ({PRESET_ENV})" if from_env else "")
        try:
            data = read_preset(preset)
        except SettingsError as exc:
            if not from_env:
                raise
            raise SettingsError(f"{exc} (set by {PRESET_ENV})") from None
        layer = _canonical(data, source=label)
        yield label, layer, {name: label for fields in layer.values() for name in fields}
    from agentic_rag.configuration.settings import Settings

    env, origins = _EnvSource(Settings).read()
    yield "environment", env, {name: f"env {var}" for name, var in origins.items()}
    if overrides:
        if not isinstance(overrides, Mapping):
            overrides = parse_overrides(overrides)
        layer = _canonical(overrides, source="override")
        yield "override", layer, {name: "override" for fields in layer.values() for name in fields}


def setting_sources(preset: str | Path | None = None,
                    overrides: Mapping[str, Any] | Iterable[str] | None = None) -> dict[str, str]:
    """Where each setting's value comes from for ``Settings.load(preset, overrides)``: 'default',
    'preset NAME', 'env VARIABLE' or 'override'."""
    sources = dict.fromkeys(FIELD_SECTIONS, "default")
    for _, _, origins in _layers(preset, overrides):
        sources.update(origins)
    return sources


def ignored_env_names() -> list[str]:
    """Environment variables named exactly like a setting but without the prefix: the README's setting
    names invite ``export LLM_BACKEND=openai``, which would otherwise be silently ignored."""
    from agentic_rag.configuration.settings import Settings

    nested = {name for name, var in _EnvSource(Settings).read()[1].items() if NESTED_DELIMITER in var}
    return [name for name in FIELD_SECTIONS if name in os.environ and name not in ENV_FALLBACKS
            and ENV_PREFIX + name not in os.environ and name not in nested]


def env_warnings(settings) -> list[str]:
    """One line per ignored environment variable, with the name that would be read and the value in force."""
    out = []
    for name in ignored_env_names():
        value = "hidden" if name in SECRET_SETTINGS else repr(settings.public_dump()[name])
        out.append(f"environment variable {name} is ignored: settings are read from {ENV_PREFIX}{name} "
                   f"({name} stays {value}); export {ENV_PREFIX}{name} or pass -o {name}=...")
    return out


def _explain(exc: ValidationError) -> str:
    lines = []
    for err in exc.errors():
        loc = [str(p) for p in err["loc"]]
        if loc and not (len(loc) == 1 and loc[0] in SECTIONS and err["type"] == "value_error"):
            shown = "a hidden value" if loc[-1] in SECRET_SETTINGS else redact_text(repr(err.get("input")))
            hint = "; for no practical limit give a large number" if err["type"] == "finite_number" else ""
            lines.append(f"setting {'.'.join(loc)}: {err['msg']} (got {shown}){hint}")
        else:  # a rule across fields of a section, or a key the model does not know
            lines.append(str(err["msg"]).removeprefix("Value error, "))
    return "; ".join(lines)
