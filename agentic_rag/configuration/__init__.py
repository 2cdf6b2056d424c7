"""One settings object for the whole system, in sections.

Every threshold, cap and budget is a named field with its unit, so a run's `config.json` says
everything that shaped it. The fields live in sections (``llm``, ``retrieval``, ``agent``, ``confidence_gate``,
``baug``, ``budget``, and apart from the graph's decisions ``eval``, ``crag``, ``scale`` and ``paths``); every
field name is unique across sections, so a name alone still says which setting is meant.

Values come, lowest priority first, from the field defaults, a JSON preset (``presets/NAME.json`` or
a path; ``AGENTIC_RAG_PRESET`` when the caller names none), environment variables, and explicit
overrides (CLI ``-o``, a LangGraph run's ``configurable``). Each of them may spell a setting flat
(``RETRIEVAL_K``, ``AGENTIC_RAG_RETRIEVAL_K``) or nested (``retrieval.RETRIEVAL_K``, ``{"retrieval": {"RETRIEVAL_K": 8}}``,
``AGENTIC_RAG_RETRIEVAL__RETRIEVAL_K``): the flat names are what existing presets, scripts and
exported variables use, the nested ones what LangGraph Studio shows. An unknown key or a bad value
is a one-line error that names the key. In code, ``settings.retrieval.RETRIEVAL_K`` is the form to
write; ``settings.RETRIEVAL_K`` still reads the same value for one more release, with a warning.

The declarations are sections.py, the reading of presets, variables and overrides loading.py, the
``Settings`` object settings.py; this module is what callers import.
"""

from agentic_rag.configuration.available import OTEL_PACKAGES, import_store_class, missing_otel_packages
from agentic_rag.configuration.checks import PATTERN_UNITS
from agentic_rag.configuration.loading import (
    ENV_FALLBACKS,
    ENV_PREFIX,
    PRESET_ENV,
    PRESETS_DIR,
    REMOVED_SETTINGS,
    RENAMED_SECTIONS,
    RemovedSettingWarning,
    env_warnings,
    ignored_env_names,
    parse_overrides,
    read_preset,
    setting_sources,
)
from agentic_rag.configuration.sections import (
    FIELD_SECTIONS,
    NESTED_DELIMITER,
    PER_REQUEST_SETTINGS,
    SECRET_SETTINGS,
    SECTIONS,
    USER_CACHE,
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
    SettingNames,
    SettingsError,
    flat_name,
    meaning_of,
    per_request,
    setting,
    unit_of,
)
from agentic_rag.configuration.settings import Settings

__all__ = [
    "ENV_FALLBACKS", "ENV_PREFIX", "FIELD_SECTIONS", "NESTED_DELIMITER", "PER_REQUEST_SETTINGS", "PRESET_ENV",
    "PRESETS_DIR", "REMOVED_SETTINGS", "RENAMED_SECTIONS", "SECRET_SETTINGS", "SECTIONS", "AgentSettings",
    "BAUGSettings", "BudgetSettings", "CragSettings", "EvalSettings", "ConfidenceGateSettings",
    "LLMSettings", "PathSettings", "RemovedSettingWarning", "RetrievalSettings", "ScaleSettings", "SettingNames",
    "Settings", "SettingsError", "env_warnings", "flat_name", "ignored_env_names", "import_store_class",
    "meaning_of", "parse_overrides", "read_preset", "setting", "per_request", "setting_sources", "unit_of",
    "OTEL_PACKAGES", "PATTERN_UNITS", "USER_CACHE", "missing_otel_packages",
]
