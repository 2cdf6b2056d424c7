"""One settings object for the whole system, in sections.

Every threshold, cap and budget is a named field with its unit, so a run's `config.json` says
everything that shaped it. The fields live in sections (``llm``, ``retrieval``, ``agent``, ``gate``,
``baug``, ``budget``, and apart from the graph's decisions ``eval``, ``crag``, ``scale`` and ``paths``); every
field name is unique across sections, so a name alone still says which setting is meant.

Values come, lowest priority first, from the field defaults, a JSON preset (``presets/NAME.json`` or
a path; ``AGENTIC_RAG_PRESET`` when the caller names none), environment variables, and explicit
overrides (CLI ``-o``, a LangGraph run's ``configurable``). Each of them may spell a setting flat (``RETRIEVAL_K``, ``AGENTIC_RAG_RETRIEVAL_K``)
or nested (``retrieval.RETRIEVAL_K``, ``{"retrieval": {"RETRIEVAL_K": 8}}``,
``AGENTIC_RAG_RETRIEVAL__RETRIEVAL_K``): the flat names are what existing presets, scripts and
exported variables use, the nested ones what LangGraph Studio shows. An unknown key or a bad value
is a one-line error that names the key. In code, ``settings.retrieval.RETRIEVAL_K`` is the form to
write; ``settings.RETRIEVAL_K`` still reads the same value, so older code and extensions keep working.
"""

from __future__ import annotations

import difflib
import json
import os
import re
from pathlib import Path
from typing import Annotated, Any, Iterable, Literal, Mapping, get_origin

from platformdirs import user_cache_dir
from pydantic import BaseModel, ConfigDict, Field, SecretStr, ValidationError, field_validator, model_validator
from pydantic.fields import FieldInfo
from pydantic_settings import (
    BaseSettings, EnvSettingsSource, NoDecode, PydanticBaseSettingsSource, SettingsConfigDict,
)
from pydantic_settings import SettingsError as EnvParseError

from agentic_rag.errors import UserError
from agentic_rag.redact import redact_text, redact_url

PRESETS_DIR = Path(__file__).parent / "presets"
ENV_PREFIX = "AGENTIC_RAG_"
PRESET_ENV = ENV_PREFIX + "PRESET"  # the preset used when a caller names none
NESTED_DELIMITER = "__"
# The OpenAI SDK's own variables, read when the prefixed ones are unset (anyone with an OpenAI-compatible
# server has them exported already); every other unprefixed name is ignored with a warning.
ENV_FALLBACKS = ("OPENAI_BASE_URL", "OPENAI_API_KEY")
USER_CACHE = Path(user_cache_dir("agentic-rag"))  # ~/.cache/agentic-rag on Linux; written `<user cache>` in docs


class SettingsError(UserError, ValueError):
    """A setting key, value or preset the user gave cannot be used."""

    label = "settings error"


def setting(default: Any, unit: str, text: str, **constraints: Any) -> Any:
    """A settings field whose description ends with its unit, kept apart too (the `settings` table's
    unit column, and LangGraph Studio's schema) so it never has to be read out of the prose."""
    return Field(default, description=f"{text} Unit: {unit}.", json_schema_extra={"unit": unit}, **constraints)


def unit_of(field: FieldInfo) -> str:
    extra = field.json_schema_extra
    return str(extra.get("unit", "")) if isinstance(extra, dict) else ""


def meaning_of(field: FieldInfo) -> str:
    """A field's description without the unit sentence ``setting`` appends."""
    text = field.description or ""
    unit = unit_of(field)
    return text.removesuffix(f" Unit: {unit}.") if unit else text


PATTERN_UNITS = ("regex", "regexes")  # a setting in these units is compiled when settings load


class _Section(BaseModel):
    # titled by their names, which are what presets, -o and the environment spell; no inf or nan, which
    # no setting means and JSON (config.json, telemetry) cannot hold
    model_config = ConfigDict(extra="forbid", validate_assignment=True, field_title_generator=lambda name, _: name,
                              allow_inf_nan=False)

    @model_validator(mode="after")
    def _patterns_compile(self) -> "_Section":
        """A pattern that does not compile is a settings error now, not a traceback inside a question."""
        for name, field in type(self).model_fields.items():
            if unit_of(field) in PATTERN_UNITS:
                value = getattr(self, name)
                for pattern in [value] if isinstance(value, str) else value or ():
                    try:
                        re.compile(pattern)
                    except re.error as exc:
                        raise ValueError(f"setting {name}: {pattern!r} is not a valid regular expression ({exc})") from None
        return self


class LLMSettings(_Section):
    """The generator model: backend, decoding and remote calls."""

    LLM_BACKEND: Literal["local", "openai"] = setting(
        "local", "choice", "'local': transformers in-process; 'openai': any OpenAI-compatible server."
    )
    LLM_MODEL: str = setting(
        "packaged-1.5b", "model name or path",
        "local: 'packaged-1.5b' (the Qwen2.5-Coder-1.5B GGUF from PyPI), 'packaged' (the 0.5B, preset fast), "
        "an HF folder or a .gguf path; openai: the served model name.",
    )
    OPENAI_BASE_URL: str | None = setting(
        None, "URL", "Base URL of the OpenAI-compatible API (openai backend); falls back to $OPENAI_BASE_URL."
    )
    OPENAI_API_KEY: SecretStr | None = setting(
        None, "secret", "API key (openai backend); falls back to $OPENAI_API_KEY."
    )
    MAX_OUTPUT_TOKENS: int = setting(160, "tokens", "Cap on generated tokens per LLM call.", ge=1, le=4096)
    TEMPERATURE: float = setting(0.0, "unitless", "Sampling temperature; 0 = greedy (deterministic).", ge=0.0, le=2.0)
    REPETITION_PENALTY: float = setting(
        1.1, "factor", "Local backend: penalty on repeated tokens (1 = off); stops greedy loops of small models.",
        ge=1.0, le=2.0,
    )
    TORCH_THREADS: int = setting(0, "threads", "Torch intra-op threads; 0 = number of CPU cores.", ge=0)
    LLM_TIMEOUT_S: float = setting(
        300.0, "s", "Timeout of one remote LLM call attempt, cut to what is left of the question's WALL_TIME_S.", gt=0
    )
    LLM_RETRIES: int = setting(
        2, "retries",
        "Retries of a remote LLM call that failed (connection, timeout, HTTP 429/5xx, malformed reply) before the "
        "question ends as ABSTAIN_LLM_UNAVAILABLE.",
        ge=0,
    )
    LLM_BACKOFF_S: float = setting(
        1.0, "s",
        "Wait before the first retry, doubled before each next one (a server's Retry-After wins); a retry that "
        "cannot start within the question's WALL_TIME_S is not made.",
        ge=0.0,
    )


class RetrievalSettings(_Section):
    """Embedding, chunking and retrieving passages."""

    EMBEDDING_MODEL: str = setting(
        "packaged", "model name or path",
        "'packaged' (all-MiniLM-L6-v2 from PyPI) or a local sentence-transformers folder.",
    )
    EMBEDDING_BATCH_SIZE: int = setting(64, "chunks", "Chunks embedded per forward pass.", ge=1)
    EMBEDDING_MEMO_SIZE: int = setting(
        4096, "vectors", "Query and sentence vectors kept in memory for reuse within and across questions.", ge=1
    )
    EMBEDDING_CACHE: bool = setting(
        True, "on/off",
        "Keep chunk vectors on disk by embedding model and chunk text, so a page is embedded once across questions "
        "and runs.",
    )
    INDEX_MEMORY_SIZE: int = setting(
        16, "indexes", "Loaded per-question indexes kept in memory for the next question or system.", ge=1
    )
    VECTOR_STORE: str = setting(
        "faiss", "store name",
        "LangChain vector store of the dense retrieval: 'faiss' (exact inner product), 'inmemory' (langchain_core's "
        "InMemoryVectorStore) or a store class as module:Class (filled from the index's vectors).",
    )
    CHUNK_SIZE_CHARS: int = setting(800, "characters", "Target chunk length.", ge=100)
    CHUNK_OVERLAP_CHARS: int = setting(120, "characters", "Overlap between consecutive chunks.", ge=0)
    MIN_CHUNK_CHARS: int = setting(40, "characters", "Chunks shorter than this are dropped as noise.", ge=1)
    MAX_PAGE_CHARS: int = setting(
        200_000, "characters", "Extracted text kept per page; the rest is cut and counted.", ge=1000
    )
    MAX_PAGE_RAW_CHARS: int = setting(
        2_000_000, "characters",
        "Raw page (HTML or text) extracted per page, scripts and styles removed first when it is longer; the rest is "
        "cut and counted, so one huge page cannot stall ingestion or exhaust memory.",
        ge=10_000,
    )
    RETRIEVAL_POOL_K: int = setting(24, "passages", "Candidates taken from each retriever before fusion.", ge=1)
    RETRIEVAL_K: int = setting(8, "passages", "Passages returned after fusion and MMR.", ge=1)
    MMR_LAMBDA: float = setting(
        0.45, "unitless, 0-1", "MMR trade-off: 1 = pure relevance, 0 = pure diversity.", ge=0.0, le=1.0
    )
    RRF_K: int = setting(60, "ranks", "Reciprocal-rank-fusion constant k in 1/(k+rank).", ge=1)
    HYBRID_VECTOR_WEIGHT: float = setting(1.0, "unitless", "Weight of the vector ranking in RRF.", ge=0.0)
    HYBRID_BM25_WEIGHT: float = setting(1.0, "unitless", "Weight of the BM25 ranking in RRF.", ge=0.0)

    @field_validator("VECTOR_STORE")
    @classmethod
    def _vector_store_name(cls, value: str) -> str:
        if value in ("faiss", "inmemory"):
            return value
        module, _, name = value.replace(":", ".").rpartition(".")
        if not (module and name.isidentifier()):
            raise ValueError("must be 'faiss', 'inmemory' or a store class as module:Class")
        import_store_class(value)  # a class that cannot be imported is a settings error, not a failed question
        return value


class AgentSettings(_Section):
    """The anchor-centric agent: the question's domain, anchors, Retriever-Workers and pruning, the
    ambiguity policy, the extra retrieval round, and extension nodes."""

    OOD_ALLOW_PATTERNS: list[str] = setting(
        [], "regexes", "When any are set a question must match one (else it is out of domain)."
    )
    OOD_DENY_PATTERNS: list[str] = setting([], "regexes", "Patterns that put a question out of domain.")
    ANCHOR_TOP_M: int = setting(6, "anchors", "Anchors proposed per question.", ge=1)
    ANCHOR_MIN_SCORE: float = setting(0.5, "0-1", "Confidence an anchor needs to be selected.", ge=0.0, le=1.0)
    MAX_WORKERS: int = setting(4, "workers", "Retriever-Workers per round, one per selected anchor.", ge=1)
    WORKER_K: int = setting(4, "passages", "Passages a worker keeps after pruning.", ge=1)
    WORKER_HOPS: int = setting(1, "hops", "Hops beyond hop 0 (1 = follow sections/links once).", ge=0, le=1)
    ROUGH_MIN_OVERLAP: float = setting(
        0.2, "0-1", "Rough prune: share of the question's content words a passage must hold when it lacks the anchor.",
        ge=0.0, le=1.0,
    )
    FINE_MIN_SIM: float = setting(
        0.2, "cosine", "Fine prune: similarity of passage to question needed to keep it.", ge=-1.0, le=1.0
    )
    PATH_MIN_SCORE: float = setting(
        0.3, "0-1", "A path whose best passage scores below this ends as 'low_score'.", ge=0.0, le=1.0
    )
    PRUNE_FALLBACK_K: int = setting(
        2, "passages",
        "When pruning leaves every worker without a passage, the Supervisor packs this many of the best passages it "
        "turned down and lets the confidence gate and the answer layers decide (0 = refuse as no evidence).",
        ge=0,
    )
    NEW_HITS_EPS: float = setting(
        0.2, "fraction", "New-hits ratio below which a path ends as 'no_novelty'.", ge=0.0, le=1.0
    )
    ANCHOR_BONUS: float = setting(
        0.07, "0-1 score", "Added to the [0,1] fused score, scaled by the passage's anchor coverage.", ge=0.0, le=1.0
    )
    AMBIGUITY_ENABLED: bool = setting(
        False, "on/off",
        "Group evidence into topic clusters and return 'ambiguous' with options when none wins (off by default: it "
        "raised false refusal on the dev sweep, benchmarks/calibration/qwen-1.5b/13_AMBIGUITY_ENABLED).",
    )
    AMBIGUITY_MERGE_SIM: float = setting(
        0.5, "cosine", "Centroid similarity above which two source groups are one topic.", ge=-1.0, le=1.0
    )
    MIN_GROUP_GAP: float = setting(0.1, "0-1", "Score or similarity gap that lets the best cluster win.", ge=0.0)
    MAX_OPTIONS: int = setting(3, "options", "Options returned with an 'ambiguous' status.", ge=2)
    FACTOID_ONE_SHOT_RETRIEVAL: bool = setting(
        True, "on/off", "Before abstaining on missing anchors, retrieve once more with them appended to the query."
    )
    FACTOID_MIN_TOKENS_LEFT: int = setting(
        300, "tokens", "Token budget left that the one-shot anchor retrieval needs.", ge=0
    )
    USE_FACTOID_FINALIZER: bool = setting(True, "on/off", "Extract a short answer span for EM/F1 scoring.")
    EXTENSIONS: Annotated[list[str], NoDecode] = setting(
        [], "module paths or names",
        "Agent nodes added without editing the graph, in order: 'module:attribute' paths or names registered under "
        "the 'agentic_rag.extensions' entry-point group (a comma-separated string is accepted).",
    )
    EXTENSION_SETTINGS: dict[str, dict[str, Any]] = setting(
        {}, "per extension",
        "Each extension's own settings by extension name, e.g. {\"freshness\": {\"REAL_TIME_MAX_AGE_H\": 48}} (keys "
        "and units are the extension's; `agentic-rag settings` lists those of the configured extensions).",
    )

    @field_validator("EXTENSIONS", mode="before")
    @classmethod
    def _extension_list(cls, value: Any) -> Any:
        if isinstance(value, str):  # from the environment: a JSON list, or names separated by commas
            value = json.loads(value) if value.lstrip().startswith("[") else [v.strip() for v in value.split(",")]
        return [v for v in value if v] if isinstance(value, list) else value


class GateSettings(_Section):
    """Layer 1, the confidence gate before the LLM: tier 1 grades the packed passages, tier 2 reads
    the retrieval scores."""

    GATE_ENABLED: bool = setting(True, "on/off", "Refuse before generation when retrieval confidence is low.")
    GATE_SCORE_SOURCE: Literal["vector", "bm25", "fused"] = setting(
        "vector", "choice", "Tier-2 score the gate reads, normalised to [0,1] (see gate/confidence.py)."
    )
    BM25_HALF_SCORE: float = setting(5.0, "BM25 score", "Raw BM25 score that normalises to 0.5.", gt=0)
    RETRIEVAL_MIN_SCORE: float = setting(
        0.15, "0-1", "Tier 2: normalised score the top passage needs; calibrated on a SQuAD dev split.", ge=0.0, le=1.0
    )
    RETRIEVAL_MIN_RATIO: float = setting(
        1.0, "ratio", "Tier 2: top-1 / top-2 score ratio needed (1 = rule off).", ge=1.0
    )
    USE_RERANKER: bool = setting(
        False, "on/off", "Tier 1: grade the packed passages 0-3 with the grader RERANKER_KIND names."
    )
    RERANKER_KIND: Literal["cross_encoder", "llm"] = setting(
        "cross_encoder", "choice",
        "Tier 1's grader: the cross-encoder at RERANKER_MODEL, or the generator asked for a 0-3 digit per passage "
        "(one call each, stage 'grade'; see gate/grader.py).",
    )
    RERANKER_MODEL: str | None = setting(
        None, "path", "Local folder of a relevance cross-encoder (e.g. a saved ms-marco-MiniLM-L-6-v2)."
    )
    GRADE_MAX_PASSAGES: int = setting(
        4, "passages", "RERANKER_KIND=llm: passages graded, in rank order; each is one LLM call.", ge=1
    )
    RELEVANCE_THRESHOLD: float = setting(2.0, "grade, 0-3", "Tier 1: relevance the top passage needs.", ge=0.0, le=3.0)
    MIN_CHUNKS_REQUIRED: int = setting(
        1, "passages", "Tier 1: passages needed at or above RELEVANCE_THRESHOLD.", ge=1
    )

    @model_validator(mode="after")
    def _reranker_needs_a_model(self) -> "GateSettings":
        if self.USE_RERANKER and self.RERANKER_KIND == "cross_encoder" and not self.RERANKER_MODEL:
            raise ValueError("USE_RERANKER=True needs RERANKER_MODEL (a local cross-encoder folder) "
                             "or RERANKER_KIND=llm (the generator grades the passages)")
        return self


class BAUGSettings(_Section):
    """BAUG, answer layers 2 and 3 and the policy: how a draft is checked against its evidence, and
    when the agent stops, revises or abstains."""

    GROUNDING_ENABLED: bool = setting(
        True, "on/off", "Layer 2: an answer must be supported by its sources (overlap, faith, NLI) to STOP."
    )
    OVERLAP_TAU: float = setting(
        0.3, "cosine",
        "Similarity from which an answer sentence counts as supported by its source sentence; calibrated on a SQuAD "
        "dev split (benchmarks/calibration/OVERLAP_TAU).",
        ge=0.0, le=1.0,
    )
    ATTRIBUTION_MIN_CLAIMS: float = setting(
        0.5, "fraction", "Share of a sentence's new names/numbers its supporting source sentence must hold.",
        ge=0.0, le=1.0,
    )
    OVERLAP_MIN: float = setting(0.5, "fraction of sentences", "Support overlap needed to STOP.", ge=0.0, le=1.0)
    FAITH_MIN: float = setting(0.6, "fraction of claims", "Faithfulness needed to STOP.", ge=0.0, le=1.0)
    ANSWER_RELEVANCE_MIN: float = setting(
        0.3, "cosine", "Similarity of answer to question needed to STOP.", ge=-1.0, le=1.0
    )
    ANSWER_NEW_WORDS_MIN: float = setting(
        0.1, "fraction of words",
        "Share of the answer's content words the question does not already hold, needed to STOP: an answer that "
        "only restates the question adds nothing a source could back (questions that offer options are not read).",
        ge=0.0, le=1.0,
    )
    COVERAGE_MIN: float = setting(
        0.0, "fraction", "Share of selected anchors the cited text must hold to STOP.", ge=0.0, le=1.0
    )
    NLI_MODEL: str | None = setting(None, "path", "Local folder of an NLI cross-encoder for layer 2 (optional).")
    NLI_MIN: float = setting(0.5, "0-1", "P(entailment) an answer needs when NLI_MODEL is set.", ge=0.0, le=1.0)
    PROBE_ENABLED: bool = setting(
        True, "on/off",
        "Layer 2: the answerability probe reads the generator's last-prompt-token hidden state (local backend only; "
        "skipped and recorded for other backends).",
    )
    PROBE_PATH: Path | None = setting(None, "path", "Probe file; None = the packaged probe for the packaged model.")
    ANSWERABILITY_MIN: float = setting(
        0.3, "0-1",
        "P(the context answers the question) from the probe below which the answer is refused (the sweep: "
        "benchmarks/calibration/ANSWERABILITY_MIN).",
        ge=0.0, le=1.0,
    )
    VERIFIER_ENABLED: bool = setting(
        True, "on/off",
        "Layer 2: before an answer is shown, the generator is asked whether the sentences it quotes state that answer "
        "(one prefill-only call on the local backend, booked as stage 'verify').",
    )
    VERIFIER_MIN: float = setting(
        0.425, "0-1", "P(yes) from the support verifier below which the answer is refused.", ge=0.0, le=1.0
    )
    VERIFIER_COMBINE: Literal["alone", "mean_with_probe", "mean_with_probes", "probes"] = setting(
        "mean_with_probes", "choice",
        "What VERIFIER_MIN cuts: the verifier's P(yes) alone ('alone'); its mean with the probe's answerability "
        "('mean_with_probe'); its mean with that and the quote probe's ('mean_with_probes'); or the mean of the two "
        "probe readings without the verifier call ('probes'). The quote probe is the same probe read on an answer "
        "prompt whose only source is the sentences the draft quotes (one prefill, stage 'verify').",
    )
    HEDGING_ENABLED: bool = setting(True, "on/off", "Layer 3: hedging or filler in the answer becomes an abstention.")
    PERIOD_SCOPE: Literal["window", "content", "sentence"] = setting(
        "window", "choice",
        "Where a year, quarter or date the question names must be stated for the answer to stand: 'window' = the "
        "supporting sentence or a neighbour of it; 'content' = the same, but a neighbour that is only a date (a "
        "snippet's page date) does not count; 'sentence' = the supporting sentence itself.",
    )
    REFLECT_ENABLED: bool = setting(True, "on/off", "Allow the one Self-RAG-style critique-and-revise per question.")
    REFLECT_MIN_OVERLAP: float = setting(
        0.25, "fraction", "Below this overlap a draft is not worth revising: abstain instead.", ge=0.0, le=1.0
    )
    JUDGE_POLICY: Literal["off", "gray_zone"] = setting(
        "off", "choice", "LLM grounding judge: off, or only for gray-zone signals (counted as stage 'judge')."
    )
    JUDGE_MAX_CALLS_PER_Q: int = setting(1, "calls", "LLM judge calls per question at most.", ge=0)


class BudgetSettings(_Section):
    """Caps per question, read by both graphs: evidence, tokens, calls, rounds, time, question length."""

    MAX_CONTEXT_TOKENS: int = setting(1000, "tokens", "Evidence packed into a prompt, strictly below.", ge=50)
    TOKEN_BUDGET: int = setting(
        3000, "tokens", "Hard cap on LLM tokens (prompt + completion) per question, all calls.", ge=200
    )
    MAX_LLM_CALLS: int = setting(3, "calls", "Hard cap on LLM calls per question.", ge=1)
    MAX_ROUNDS: int = setting(2, "rounds", "Retrieval rounds per question, the first included.", ge=1, le=5)
    WALL_TIME_S: float = setting(
        600.0, "s", "Per-question wall time after which no new LLM call or retrieval round starts.", gt=0
    )
    MAX_QUESTION_CHARS: int = setting(
        1000, "characters",
        "Longer questions are refused (ABSTAIN_QUESTION_TOO_LONG) before any anchor, retrieval or LLM work.",
        ge=10,
    )


class EvalSettings(_Section):
    """Evaluation and records: the evaluation judge, malformed input records, the trace's texts.
    None of them changes what a graph decides."""

    EVAL_LLM_JUDGE: bool = setting(
        False, "on/off", "Send answers the rule judge cannot decide to an LLM judge (openai backend only)."
    )
    EVAL_JUDGE_MODEL: str = setting("gpt-4o-mini", "model name", "Model name of the evaluation judge.")
    EVAL_JUDGE_BASE_URL: str | None = setting(None, "URL", "OpenAI-compatible endpoint of the evaluation judge.")
    EVAL_JUDGE_API_KEY: SecretStr | None = setting(None, "secret", "API key of the evaluation judge endpoint.")
    BAD_RECORDS: Literal["skip", "fail"] = setting(
        "skip", "choice", "On a malformed input record: report it and skip, or stop with an error."
    )
    BAD_RECORDS_SHOWN: int = setting(
        20, "records", "Skipped bad records printed on stderr one by one; the rest are counted.", ge=0
    )
    TRACE_TEXT_CHARS: int = setting(
        240, "characters",
        "Passage and draft texts kept per node in a result's trace events; the chunks a quote comes from are kept "
        "whole.",
        ge=20,
    )


class CragSettings(_Section):
    """The CRAG starter-kit adapter (agentic_rag/crag_adapter.py)."""

    CRAG_SECONDS_PER_QUERY: float = setting(
        30.0, "s",
        "Time each question of a kit batch may take; a batch of n has n times this. The official kit "
        "(facebookresearch/CRAG, models/dummy_model.py) asks a model to respond to each query within 30 seconds.",
        gt=0,
    )
    CRAG_MARGIN_S: float = setting(
        3.0, "s",
        "Kept free before a question's limit: its hard deadline falls this much earlier, to cover the last step that "
        "cannot be cut (one transformer block, or the output layer) and returning.",
        ge=0,
    )
    CRAG_MIN_START_S: float = setting(
        2.0, "s", "A question with less time than this before its deadline is not started: 'i don't know'.", ge=0
    )
    CRAG_BATCH_SIZE: int = setting(
        4, "questions", "Questions per batch the adapter asks the kit for (the kit allows 1-16).", ge=1, le=16
    )
    CRAG_ANSWER_TOKENS: int = setting(
        75, "tokens",
        "Answers are cut to this many tokens of the kit's own tokenizer, at a word boundary (the kit trims "
        "predictions to 75).",
        ge=2,
    )
    CRAG_TOKENIZER_PATH: Path | None = setting(
        None, "path",
        "Folder of the kit's trimming tokenizer (its tokenizer/); None = the kit's models.utils tokenizer when "
        "importable, else at most CRAG_ANSWER_TOKENS - 1 UTF-8 bytes (no Llama token is shorter than a byte).",
    )


# The optional extra that sends spans (agentic_rag/trace/otel.py): module -> distribution.
OTEL_PACKAGES = {"opentelemetry.sdk": "opentelemetry-sdk",
                 "opentelemetry.exporter.otlp.proto.http": "opentelemetry-exporter-otlp-proto-http",
                 "openinference.semconv": "openinference-semantic-conventions"}


def missing_otel_packages() -> str | None:
    """Why spans cannot be sent from this environment, in one line naming the install, or None."""
    import importlib.util

    def found(module: str) -> bool:
        try:
            return importlib.util.find_spec(module) is not None
        except ModuleNotFoundError:
            return False

    absent = [dist for module, dist in OTEL_PACKAGES.items() if not found(module)]
    return f"OTLP export needs {', '.join(absent)}: pip install 'agentic-rag[otel]'" if absent else None


class PathSettings(_Section):
    """Where files go: caches, artifacts, telemetry and checkpoints. None changes an answer."""

    ARTIFACTS_DIR: Path = setting(Path("artifacts"), "path", "Indexes, caches, runs and telemetry.")
    INDEX_CACHE_DIR: Path | None = setting(
        None, "path",
        "Folder of the per-question index cache (an index per question's pages, reused by every run that sees the "
        "same pages); None = ARTIFACTS_DIR/cache.",
    )
    EMBEDDING_CACHE_DIR: Path | None = setting(
        None, "path",
        "Folder of the chunk-vector cache (embeddings.sqlite); None = the index cache (INDEX_CACHE_DIR), beside the "
        "per-question indexes built from the same vectors, so one folder holds (and clearing it drops) both.",
    )
    MODEL_CACHE_DIR: Path = setting(
        USER_CACHE / "models", "path", "Where the packaged GGUF is converted once to a bf16 safetensors folder."
    )
    LLM_CACHE_PATH: Path | None = setting(
        None, "path", "SQLite file replaying identical LLM calls (used only at TEMPERATURE 0); None = off."
    )
    TELEMETRY_PATH: Path | None = setting(
        None, "path", "JSONL file of per-round telemetry; default ARTIFACTS_DIR/telemetry/<system>.jsonl."
    )
    CHECKPOINT_PATH: Path | None = setting(
        None, "path",
        "SQLite file checkpointing every graph step (thread id = question id) for `trace --steps` and replay; None = "
        "off (`eval --checkpoints` puts one in the run folder).",
    )
    OTLP_ENDPOINT: str | None = setting(
        None, "URL",
        "OTLP/HTTP collector (Phoenix, Langfuse) each answered question's spans are sent to (docs/tracing.md); "
        "None = off. Needs the `otel` extra.",
    )
    CRAG_ARTIFACTS_DIR: Path = setting(
        USER_CACHE / "crag-kit", "path",
        "ARTIFACTS_DIR of runs inside the CRAG kit (per-question indexes, telemetry), kept out of the kit's working "
        "directory.",
    )

    @field_validator("OTLP_ENDPOINT")
    @classmethod
    def _otlp_packages(cls, value: str | None) -> str | None:
        why = missing_otel_packages() if value else None
        if why:
            raise ValueError(why)
        return value or None


class ScaleSettings(_Section):
    """Where the questions of `eval` (and the pages of `ingest`) run with `--executor ray`
    (agentic_rag/eval/executors.py). None changes an answer."""

    RAY_CPUS_PER_WORKER: float = setting(
        1.0, "CPUs",
        "CPUs each Ray worker reserves, and its torch threads when TORCH_THREADS is 0; a local instance is started "
        "with workers times this.",
        gt=0,
    )
    RAY_ITEM_ATTEMPTS: int = setting(
        3, "attempts",
        "Workers a question (or an ingest batch) may be sent to before the run stops, when each one dies under it.",
        ge=1,
    )
    RAY_WORKER_REPLACEMENTS: int = setting(8, "workers", "Workers started in place of lost ones during one run.", ge=0)
    RAY_WORKER_START_TIMEOUT_S: float = setting(
        900.0, "s", "Time the first Ray worker may take to be placed and load its models before the run stops.", gt=0
    )
    RAY_CONNECT_TIMEOUT_S: float = setting(5.0, "s", "Time allowed to reach the cluster address given with --address.", gt=0)
    RAY_INGEST_BATCH: int = setting(
        64, "items", "Pages extracted, or chunks embedded, per Ray task of `ingest --executor ray`.", ge=1
    )


# section name -> its model, in the order the `settings` table and Studio show them
SECTIONS: dict[str, type[_Section]] = {
    "llm": LLMSettings,
    "retrieval": RetrievalSettings,
    "agent": AgentSettings,
    "gate": GateSettings,
    "baug": BAUGSettings,
    "budget": BudgetSettings,
    "eval": EvalSettings,
    "crag": CragSettings,
    "scale": ScaleSettings,
    "paths": PathSettings,
}
# every setting's flat name -> its section (names are unique across sections; checked below)
FIELD_SECTIONS: dict[str, str] = {name: section for section, model in SECTIONS.items() for name in model.model_fields}
if len(FIELD_SECTIONS) != sum(len(m.model_fields) for m in SECTIONS.values()):  # pragma: no cover
    raise RuntimeError("a setting name is used in two sections")


def flat_name(key: str) -> str:
    """The flat name a key spells: ``retrieval.RETRIEVAL_K``, ``RETRIEVAL__RETRIEVAL_K`` and ``retrieval_k``
    all spell ``RETRIEVAL_K``."""
    return key.replace(NESTED_DELIMITER, ".").rpartition(".")[2].upper()


class SettingNames(frozenset):
    """A set of flat setting names whose ``in`` also accepts the nested spellings of those names."""

    def __contains__(self, key: object) -> bool:
        return isinstance(key, str) and frozenset.__contains__(self, flat_name(key))


SECRET_SETTINGS = SettingNames({"OPENAI_API_KEY", "EVAL_JUDGE_API_KEY"})


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
                values.setdefault(section, {})[name] = _parse_value(name, value) if isinstance(value, str) else value
                origins[name] = var
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
            json.loads(value)
        except json.JSONDecodeError as exc:
            return f"environment variable {var} is not valid JSON ({exc})"
    return "an environment variable of a list or object setting is not valid JSON"


class Settings(BaseSettings):
    model_config = SettingsConfigDict(
        env_prefix=ENV_PREFIX, env_nested_delimiter=NESTED_DELIMITER, extra="forbid", case_sensitive=False,
        validate_assignment=True,
    )

    llm: LLMSettings = Field(default_factory=LLMSettings, description=LLMSettings.__doc__)
    retrieval: RetrievalSettings = Field(default_factory=RetrievalSettings, description=RetrievalSettings.__doc__)
    agent: AgentSettings = Field(default_factory=AgentSettings, description=AgentSettings.__doc__)
    gate: GateSettings = Field(default_factory=GateSettings, description=GateSettings.__doc__)
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

    # -- flat names: read-only aliases of the sections' fields ------------------------------------
    def __getattr__(self, name: str) -> Any:
        section = FIELD_SECTIONS.get(name)
        if section is not None:
            return getattr(getattr(self, section), name)
        return super().__getattr__(name)

    def __setattr__(self, name: str, value: Any) -> None:
        if name in FIELD_SECTIONS:
            raise AttributeError(f"settings.{name} is a read-only alias: set settings.{FIELD_SECTIONS[name]}.{name}, "
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
        """Settings for a graph run: a ``Settings`` object, or keys under ``configurable``, flat
        (``RETRIEVAL_K``) or nested (``retrieval: {...}``, as LangGraph Studio sends its context)."""
        configurable = dict((config or {}).get("configurable") or {})
        given = configurable.get("settings")
        if isinstance(given, Settings):
            return given
        known = {k: v for k, v in configurable.items() if _is_setting_key(k, v)}
        preset = configurable.get("preset")
        if isinstance(given, Mapping):
            known = {**given, **known}
        return cls.load(preset=preset, overrides=known)

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
        return os.environ.get("OPENAI_API_KEY")


def import_store_class(name: str) -> type:
    """The LangChain ``VectorStore`` class a ``VECTOR_STORE`` of the form ``module:Class`` names
    (retrieval/vectorstore.py fills it; ValueError when it cannot be imported or is no store)."""
    from importlib import import_module

    from langchain_core.vectorstores import VectorStore

    module, _, attr = name.partition(":") if ":" in name else name.rpartition(".")
    try:
        cls = getattr(import_module(module), attr)
    except (ImportError, AttributeError) as exc:
        raise ValueError(f"VECTOR_STORE {name!r} cannot be imported: {exc}") from None
    if not (isinstance(cls, type) and issubclass(cls, VectorStore)):
        raise ValueError(f"VECTOR_STORE {name!r} is not a LangChain VectorStore class")
    return cls


def read_preset(preset: str | Path) -> dict[str, Any]:
    # A shipped name wins over a path test: names such as "qwen-1.5b" carry a dot.
    named = PRESETS_DIR / f"{preset}.json"
    path = named if named.is_file() else Path(preset)
    if not path.is_file():
        names = sorted(p.stem for p in PRESETS_DIR.glob("*.json"))
        raise SettingsError(f"unknown preset {str(preset)!r}: not a file, and not one of {names}")
    try:
        data = json.loads(path.read_text())
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
        return json.loads(raw)
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


def _check_key(section: str, name: str, source: str) -> str:
    """``name`` as a field of ``section``, or a SettingsError saying where it belongs or what was meant."""
    if name in SECTIONS[section].model_fields:
        return name
    if name in FIELD_SECTIONS:
        raise SettingsError(f"setting {name} in {source} belongs to section {FIELD_SECTIONS[name]}, not {section} "
                            f"({FIELD_SECTIONS[name]}.{name})")
    raise SettingsError(f"unknown setting {section}.{name} in {source}{_suggest(name, SECTIONS[section].model_fields)}")


def _section_name(key: str, source: str) -> str:
    section = key.lower()
    if section not in SECTIONS:
        raise SettingsError(f"unknown settings section {key!r} in {source}{_suggest(section, SECTIONS)}")
    return section


def _is_setting_key(key: str, value: Any) -> bool:
    """A ``configurable`` key that names a setting or a section (the rest is LangGraph's or a caller's)."""
    if key.lower() in SECTIONS:
        return isinstance(value, Mapping)
    return flat_name(key) in FIELD_SECTIONS


def _canonical(values: Mapping[str, Any], source: str) -> dict[str, dict[str, Any]]:
    """Settings given in any spelling -> {section: {FLAT_NAME: value}}; an unknown key is a SettingsError."""
    out: dict[str, dict[str, Any]] = {}
    for key, value in values.items():
        dotted = str(key).replace(NESTED_DELIMITER, ".")
        if "." in dotted:  # section.NAME
            section_key, _, name = dotted.partition(".")
            section = _section_name(section_key, source)
            out.setdefault(section, {})[_check_key(section, name.upper(), source)] = value
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
                fields[_check_key(section, str(name).upper(), source)] = inner
        else:
            raise SettingsError(f"unknown setting {key!r} in {source}{_suggest(dotted.upper(), FIELD_SECTIONS)}")
    return out


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
    nested = {name for name, var in _EnvSource(Settings).read()[1].items() if NESTED_DELIMITER in var}
    return [name for name in FIELD_SECTIONS if name in os.environ and name not in ENV_FALLBACKS
            and ENV_PREFIX + name not in os.environ and name not in nested]


def env_warnings(settings: Settings) -> list[str]:
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
