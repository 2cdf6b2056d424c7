"""The one settings object: the sections, and how a caller builds, copies and dumps it."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Iterable, Mapping

from pydantic import Field, ValidationError, model_validator
from pydantic.fields import FieldInfo
from pydantic_settings import BaseSettings, PydanticBaseSettingsSource, SettingsConfigDict

from agentic_rag.configuration.checks import secret_problem
from agentic_rag.configuration.loading import (
    ENV_PREFIX,
    _canonical,
    _EnvSource,
    _explain,
    _layers,
    _merge,
    request_settings,
)
from agentic_rag.configuration.sections import (
    FIELD_SECTIONS,
    NESTED_DELIMITER,
    SECRET_SETTINGS,
    SECTIONS,
    AgentSettings,
    BAUGSettings,
    BudgetSettings,
    ConfidenceGateSettings,
    CragSettings,
    EvalSettings,
    LLMSettings,
    PathSettings,
    RetrievalSettings,
    ScaleSettings,
    SettingsError,
    flat_name,
    unit_of,
)
from agentic_rag.redact import redact_url


class Settings(BaseSettings):
    model_config = SettingsConfigDict(
        env_prefix=ENV_PREFIX, env_nested_delimiter=NESTED_DELIMITER, extra="forbid", case_sensitive=False,
        validate_assignment=True,
    )

    llm: LLMSettings = Field(default_factory=LLMSettings, description=LLMSettings.__doc__)
    retrieval: RetrievalSettings = Field(default_factory=RetrievalSettings, description=RetrievalSettings.__doc__)
    agent: AgentSettings = Field(default_factory=AgentSettings, description=AgentSettings.__doc__)
    confidence_gate: ConfidenceGateSettings = Field(default_factory=ConfidenceGateSettings,
                                                    description=ConfidenceGateSettings.__doc__)
    baug: BAUGSettings = Field(default_factory=BAUGSettings, description=BAUGSettings.__doc__)
    budget: BudgetSettings = Field(default_factory=BudgetSettings, description=BudgetSettings.__doc__)
    eval: EvalSettings = Field(default_factory=EvalSettings, description=EvalSettings.__doc__)
    crag: CragSettings = Field(default_factory=CragSettings, description=CragSettings.__doc__)
    scale: ScaleSettings = Field(default_factory=ScaleSettings, description=ScaleSettings.__doc__)
    paths: PathSettings = Field(default_factory=PathSettings, description=PathSettings.__doc__)

    @classmethod
    def settings_customise_sources(cls, settings_cls, init_settings, env_settings, dotenv_settings,
                                   file_secret_settings) -> tuple[PydanticBaseSettingsSource, ...]:
        # Settings(...) (how LangGraph builds a run's context) reads the environment as load() does
        return init_settings, _EnvSource(settings_cls)

    @model_validator(mode="before")
    @classmethod
    def _nest_flat_keys(cls, data: Any) -> Any:
        return _canonical(data, source="settings") if isinstance(data, Mapping) else data

    # -- a setting is read in its section; a flat read says where -------------------------------------
    def __getattr__(self, name: str) -> Any:
        section = FIELD_SECTIONS.get(name)
        if section is not None:
            raise AttributeError(f"settings.{name}: read settings.{section}.{name} (or settings.value({name!r}) for a "
                                 "name held in a variable)")
        return super().__getattr__(name)

    def value(self, name: str) -> Any:
        """A setting's value by name in either spelling (``RETRIEVAL_K``, ``retrieval.RETRIEVAL_K``), for code
        that holds the name in a variable (a calibration sweep, a report's columns)."""
        flat = flat_name(name)
        if flat not in FIELD_SECTIONS:
            raise SettingsError(f"unknown setting {name!r}")
        return getattr(getattr(self, FIELD_SECTIONS[flat]), flat)

    def __setattr__(self, name: str, value: Any) -> None:
        if name in FIELD_SECTIONS:
            raise AttributeError(f"settings.{name}: set settings.{FIELD_SECTIONS[name]}.{name}, "
                                 f"or make a copy with settings.replace({name}=...)")
        super().__setattr__(name, value)

    def model_copy(self, *, update: Mapping[str, Any] | None = None, deep: bool = False) -> "Settings":
        """pydantic's copy (unvalidated), with flat names in ``update`` set in their sections."""
        update = dict(update or {})
        changes: dict[str, dict[str, Any]] = {}
        for key in [k for k in update if k in FIELD_SECTIONS]:
            changes.setdefault(FIELD_SECTIONS[key], {})[key] = update.pop(key)
        for section, values in changes.items():
            update[section] = getattr(self, section).model_copy(update=values, deep=deep)
        return super().model_copy(update=update, deep=deep)

    # -----------------------------------------------------------------------------------------
    @classmethod
    def keys(cls) -> list[str]:
        """Every setting's flat name, section by section."""
        return list(FIELD_SECTIONS)

    @classmethod
    def flat_fields(cls) -> dict[str, FieldInfo]:
        """Every setting's field by flat name (what ``model_fields`` was before the sections)."""
        return {name: SECTIONS[section].model_fields[name] for name, section in FIELD_SECTIONS.items()}

    @classmethod
    def section_of(cls, name: str) -> str:
        return FIELD_SECTIONS[flat_name(name)]

    @classmethod
    def load(
        cls,
        preset: str | Path | None = None,
        overrides: Mapping[str, Any] | Iterable[str] | None = None,
    ) -> "Settings":
        """Build settings from defaults < preset < environment < overrides."""
        values: dict[str, dict[str, Any]] = {}
        for _, layer, _ in _layers(preset, overrides):
            _merge(values, layer)
        try:
            return cls.model_validate(values)
        except ValidationError as exc:
            raise SettingsError(_explain(exc)) from None

    def replace(self, **changes: Any) -> "Settings":
        """A copy with some fields changed (validated); keys flat or nested."""
        data = self.model_dump()
        _merge(data, _canonical(changes, source="override"))
        try:
            return type(self).model_validate(data)
        except ValidationError as exc:
            raise SettingsError(_explain(exc)) from None

    @classmethod
    def from_runnable_config(cls, config: Mapping[str, Any] | None) -> "Settings":
        """Settings for a graph run: a ``Settings`` object (how this process's own callers pass them), or keys
        under ``configurable``, flat (``RETRIEVAL_K``) or nested (``retrieval: {...}``, as LangGraph Studio
        sends its context), which may come from a served graph's client: only the per-request settings."""
        configurable = dict((config or {}).get("configurable") or {})
        given = configurable.get("settings")
        if isinstance(given, Settings):
            return given
        return cls.load(overrides=request_settings(configurable))

    def public_dump(self) -> dict[str, Any]:
        """Every setting by flat name, as JSON-ready values, secrets masked (run configs, telemetry, the
        trace). Flat on purpose: each name is unique, and run folders written before the sections hold
        the same keys, so a resume check, a sweep record or a trace compares them as they are."""
        data: dict[str, Any] = {}
        for section in SECTIONS:
            data.update(getattr(self, section).model_dump(mode="json"))
        for secret in SECRET_SETTINGS:
            if data.get(secret):
                data[secret] = "***"
        for name, field in self.flat_fields().items():  # a key inside a URL (user:key@host, ?api-key=) is masked too
            if unit_of(field) == "URL" and data.get(name):
                data[name] = redact_url(data[name])
        return data

    def backend_error(self) -> str | None:
        """Why the configured LLM backend cannot be reached at all, or None (checked before a run starts)."""
        llm = self.llm
        if llm.LLM_BACKEND == "openai" and not llm.OPENAI_BASE_URL and not self.openai_api_key:
            return ("LLM_BACKEND='openai' needs OPENAI_BASE_URL (a local server) or an OpenAI API key "
                    f"(set {ENV_PREFIX}OPENAI_BASE_URL, $OPENAI_BASE_URL or -o OPENAI_BASE_URL=...)")
        return None

    @property
    def cache_dir(self) -> Path:
        """Where per-question indexes (and, by default, the chunk vectors they are built from) live."""
        return Path(self.paths.INDEX_CACHE_DIR or Path(self.paths.ARTIFACTS_DIR) / "cache")

    @property
    def openai_api_key(self) -> str | None:
        if self.llm.OPENAI_API_KEY is not None:
            return self.llm.OPENAI_API_KEY.get_secret_value()
        key = os.environ.get("OPENAI_API_KEY")  # exported after these settings were read
        if key and (problem := secret_problem("OPENAI_API_KEY", key)):
            raise SettingsError(problem)
        return key
