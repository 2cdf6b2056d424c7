"""One settings object for the whole system.

Every threshold, cap and budget is a named field with its unit in the description, so a run's
`config.json` says everything that shaped it. Values come, lowest priority first, from the field
defaults, a named JSON preset (``agentic_rag/presets/NAME.json`` or a path), environment variables
(``AGENTIC_RAG_<NAME>``), and explicit ``KEY=VALUE`` overrides (CLI ``--override`` or a LangGraph
run's ``configurable``). An unknown key or a bad value is an error that names the key.
"""

from __future__ import annotations

import difflib
import json
import os
from pathlib import Path
from typing import Annotated, Any, Iterable, Literal, Mapping

from platformdirs import user_cache_dir
from pydantic import Field, SecretStr, ValidationError, field_validator, model_validator
from pydantic_settings import BaseSettings, NoDecode, SettingsConfigDict

PRESETS_DIR = Path(__file__).parent / "presets"
ENV_PREFIX = "AGENTIC_RAG_"
SECRET_SETTINGS = ("OPENAI_API_KEY", "EVAL_JUDGE_API_KEY")
# The OpenAI SDK's own variables, read when the prefixed ones are unset (anyone with an OpenAI-compatible
# server has them exported already); every other unprefixed name is ignored with a warning.
ENV_FALLBACKS = ("OPENAI_BASE_URL", "OPENAI_API_KEY")


class SettingsError(ValueError):
    """A setting key, value or preset the user gave cannot be used."""


class Settings(BaseSettings):
    model_config = SettingsConfigDict(
        env_prefix=ENV_PREFIX, extra="forbid", case_sensitive=False, validate_assignment=True
    )

    # --- LLM ---------------------------------------------------------------------------------
    LLM_BACKEND: Literal["local", "openai"] = Field(
        "local", description="'local': transformers in-process; 'openai': any OpenAI-compatible server."
    )
    LLM_MODEL: str = Field(
        "packaged",
        description="local: 'packaged' (the Qwen2.5-Coder-0.5B GGUF from PyPI), 'packaged-1.5b' (the 1.5B, "
        "extra model-1-5b), an HF folder or a .gguf path; openai: the served model name.",
    )
    OPENAI_BASE_URL: str | None = Field(
        None, description="Base URL of the OpenAI-compatible API (openai backend); falls back to $OPENAI_BASE_URL."
    )
    OPENAI_API_KEY: SecretStr | None = Field(None, description="API key (openai backend); falls back to $OPENAI_API_KEY.")
    MODEL_CACHE_DIR: Path = Field(
        Path(user_cache_dir("agentic-rag")) / "models",
        description="Where the packaged GGUF is converted once to a bf16 safetensors folder.",
    )
    MAX_OUTPUT_TOKENS: int = Field(160, ge=1, le=4096, description="Cap on generated tokens per LLM call (tokens).")
    TEMPERATURE: float = Field(0.0, ge=0.0, le=2.0, description="Sampling temperature; 0 = greedy (deterministic).")
    REPETITION_PENALTY: float = Field(
        1.1, ge=1.0, le=2.0,
        description="Local backend: penalty on repeated tokens (1 = off); stops greedy loops of small models.",
    )
    TORCH_THREADS: int = Field(0, ge=0, description="Torch intra-op threads; 0 = number of CPU cores.")
    LLM_CACHE_PATH: Path | None = Field(
        None, description="SQLite file replaying identical LLM calls (used only at TEMPERATURE 0); None = off."
    )
    LLM_TIMEOUT_S: float = Field(
        300.0, gt=0,
        description="Timeout of one remote LLM call attempt, cut to what is left of the question's WALL_TIME_S (seconds).",
    )
    LLM_RETRIES: int = Field(
        2, ge=0,
        description="Retries of a remote LLM call that failed (connection, timeout, HTTP 429/5xx, malformed reply) "
        "before the question ends as ABSTAIN_LLM_UNAVAILABLE (retries).",
    )
    LLM_BACKOFF_S: float = Field(
        1.0, ge=0.0,
        description="Wait before the first retry, doubled before each next one (a server's Retry-After wins); "
        "a retry that cannot start within the question's WALL_TIME_S is not made (seconds).",
    )

    # --- Embeddings and ingestion ------------------------------------------------------------
    EMBEDDING_MODEL: str = Field(
        "packaged", description="'packaged' (all-MiniLM-L6-v2 from PyPI) or a local sentence-transformers folder."
    )
    EMBEDDING_BATCH_SIZE: int = Field(64, ge=1, description="Chunks embedded per forward pass (chunks).")
    EMBEDDING_MEMO_SIZE: int = Field(
        4096, ge=1, description="Query and sentence vectors kept in memory for reuse within and across questions (vectors)."
    )
    EMBEDDING_CACHE: bool = Field(
        True, description="Keep chunk vectors on disk by embedding model and chunk text, so a page is embedded once "
        "across questions and runs."
    )
    EMBEDDING_CACHE_DIR: Path | None = Field(
        None,
        description="Folder of the chunk-vector cache (embeddings.sqlite); None = the index cache (INDEX_CACHE_DIR), beside the "
        "per-question indexes built from the same vectors, so one folder holds (and clearing it drops) both.",
    )
    INDEX_MEMORY_SIZE: int = Field(
        16, ge=1, description="Loaded per-question indexes kept in memory for the next question or system (indexes)."
    )
    VECTOR_STORE: str = Field(
        "faiss",
        description="LangChain vector store of the dense retrieval: 'faiss' (exact inner product), 'inmemory' "
        "(langchain_core's InMemoryVectorStore) or a store class as module:Class (filled from the index's vectors).",
    )
    CHUNK_SIZE_CHARS: int = Field(800, ge=100, description="Target chunk length (characters).")
    CHUNK_OVERLAP_CHARS: int = Field(120, ge=0, description="Overlap between consecutive chunks (characters).")
    MIN_CHUNK_CHARS: int = Field(40, ge=1, description="Chunks shorter than this are dropped as noise (characters).")
    MAX_PAGE_CHARS: int = Field(
        200_000, ge=1000, description="Extracted text kept per page; the rest is cut and counted (characters)."
    )
    MAX_PAGE_RAW_CHARS: int = Field(
        2_000_000, ge=10_000,
        description="Raw page (HTML or text) extracted per page, scripts and styles removed first when it is longer; "
        "the rest is cut and counted, so one huge page cannot stall ingestion or exhaust memory (characters).",
    )

    # --- Retrieval ---------------------------------------------------------------------------
    RETRIEVAL_POOL_K: int = Field(24, ge=1, description="Candidates taken from each retriever before fusion (passages).")
    RETRIEVAL_K: int = Field(8, ge=1, description="Passages returned after fusion and MMR (passages).")
    MMR_LAMBDA: float = Field(
        0.45, ge=0.0, le=1.0, description="MMR trade-off: 1 = pure relevance, 0 = pure diversity (unitless)."
    )
    RRF_K: int = Field(60, ge=1, description="Reciprocal-rank-fusion constant k in 1/(k+rank) (ranks).")
    HYBRID_VECTOR_WEIGHT: float = Field(1.0, ge=0.0, description="Weight of the vector ranking in RRF (unitless).")
    HYBRID_BM25_WEIGHT: float = Field(1.0, ge=0.0, description="Weight of the BM25 ranking in RRF (unitless).")

    USE_RERANKER: bool = Field(
        False, description="Gate tier 1: grade the packed passages 0-3 with the grader RERANKER_KIND names."
    )
    RERANKER_KIND: Literal["cross_encoder", "llm"] = Field(
        "cross_encoder",
        description="Tier 1's grader: the cross-encoder at RERANKER_MODEL, or the generator asked for a 0-3 "
        "digit per passage (one call each, stage 'grade'; see gate/grader.py).",
    )
    RERANKER_MODEL: str | None = Field(
        None, description="Local folder of a relevance cross-encoder (e.g. a saved ms-marco-MiniLM-L-6-v2)."
    )
    GRADE_MAX_PASSAGES: int = Field(
        4, ge=1, description="RERANKER_KIND=llm: passages graded, in rank order; each is one LLM call (passages)."
    )
    USE_HYDE: Literal[False] = Field(
        False, description="HyDE query expansion is not implemented; accepted (False only) for runbook compatibility."
    )

    # --- Context and budget ------------------------------------------------------------------
    MAX_CONTEXT_TOKENS: int = Field(1000, ge=50, description="Evidence packed into a prompt, strictly below (tokens).")
    TOKEN_BUDGET: int = Field(
        3000, ge=200, description="Hard cap on LLM tokens (prompt + completion) per question, all calls (tokens)."
    )
    MAX_LLM_CALLS: int = Field(3, ge=1, description="Hard cap on LLM calls per question (calls).")
    WALL_TIME_S: float = Field(
        600.0, gt=0, description="Per-question wall time after which no new LLM call or retrieval round starts (s)."
    )

    # --- Abstention: confidence gate (before the LLM) and answer layers ----------------------
    GATE_ENABLED: bool = Field(True, description="Layer 1: refuse before generation when retrieval confidence is low.")
    GATE_SCORE_SOURCE: Literal["vector", "bm25", "fused"] = Field(
        "vector", description="Tier-2 score the gate reads, normalised to [0,1] (see gate/confidence.py)."
    )
    BM25_HALF_SCORE: float = Field(5.0, gt=0, description="Raw BM25 score that normalises to 0.5 (BM25 units).")
    RETRIEVAL_MIN_SCORE: float = Field(
        0.15, ge=0.0, le=1.0,
        description="Tier 2: normalised score the top passage needs (0-1); calibrated on a SQuAD dev split.",
    )
    RETRIEVAL_MIN_RATIO: float = Field(
        1.0, ge=1.0, description="Tier 2: top-1 / top-2 score ratio needed (1 = rule off) (ratio)."
    )
    RELEVANCE_THRESHOLD: float = Field(2.0, ge=0.0, le=3.0, description="Tier 1: relevance the top passage needs (0-3).")
    MIN_CHUNKS_REQUIRED: int = Field(1, ge=1, description="Tier 1: passages at or above RELEVANCE_THRESHOLD (passages).")
    GROUNDING_ENABLED: bool = Field(
        True, description="Layer 2: an answer must be supported by its sources (overlap, faith, NLI) to STOP."
    )
    NLI_MODEL: str | None = Field(None, description="Local folder of an NLI cross-encoder for layer 2 (optional).")
    NLI_MIN: float = Field(0.5, ge=0.0, le=1.0, description="P(entailment) an answer needs when NLI_MODEL is set (0-1).")
    PROBE_ENABLED: bool = Field(
        True,
        description="Layer 2: the answerability probe reads the generator's last-prompt-token hidden state "
        "(local backend only; skipped and recorded for other backends).",
    )
    PROBE_PATH: Path | None = Field(None, description="Probe file; None = the packaged probe for the packaged model.")
    ANSWERABILITY_MIN: float = Field(
        0.3, ge=0.0, le=1.0, description="P(the context answers the question) from the probe below which the answer is refused (0-1); from the dev-split sweep in benchmarks/calibration/ANSWERABILITY_MIN."
    )
    VERIFIER_ENABLED: bool = Field(
        False,
        description="Layer 2: before an answer is shown, the generator is asked whether the sentences it quotes "
        "state that answer (one prefill-only call on the local backend, booked as stage 'verify').",
    )
    VERIFIER_MIN: float = Field(
        0.5, ge=0.0, le=1.0, description="P(yes) from the support verifier below which the answer is refused (0-1)."
    )
    VERIFIER_COMBINE: Literal["alone", "mean_with_probe", "mean_with_probes", "probes"] = Field(
        "alone",
        description="What VERIFIER_MIN cuts: the verifier's P(yes) alone ('alone'); its mean with the probe's "
        "answerability ('mean_with_probe'); its mean with that and the quote probe's ('mean_with_probes'); or the "
        "mean of the two probe readings without the verifier call ('probes'). The quote probe is the same probe "
        "read on an answer prompt whose only source is the sentences the draft quotes (one prefill, stage 'verify').",
    )
    HEDGING_ENABLED: bool = Field(True, description="Layer 3: hedging or filler in the answer becomes an abstention.")
    PERIOD_SCOPE: Literal["window", "content", "sentence"] = Field(
        "window",
        description="Where a year, quarter or date the question names must be stated for the answer to stand: "
        "'window' = the supporting sentence or a neighbour of it; 'content' = the same, but a neighbour that is "
        "only a date (a snippet's page date) does not count; 'sentence' = the supporting sentence itself.",
    )

    # --- Ambiguity policy ---------------------------------------------------------------------
    OOD_ALLOW_PATTERNS: list[str] = Field(
        default_factory=list, description="Regexes; when any are set a question must match one (else out of domain)."
    )
    OOD_DENY_PATTERNS: list[str] = Field(default_factory=list, description="Regexes that put a question out of domain.")
    AMBIGUITY_ENABLED: bool = Field(
        False,
        description="Group evidence into topic clusters and return 'ambiguous' with options when none wins "
        "(off by default: on the dev sweep it flagged 47 of 350 unlabelled questions and raised false refusal).",
    )
    AMBIGUITY_MERGE_SIM: float = Field(
        0.5, ge=-1.0, le=1.0, description="Centroid cosine above which two source groups are one topic (cosine)."
    )
    MIN_GROUP_GAP: float = Field(0.1, ge=0.0, description="Score or similarity gap that lets the best cluster win (0-1).")
    MAX_OPTIONS: int = Field(3, ge=2, description="Options returned with an 'ambiguous' status (options).")

    # --- Agent: anchors and retriever workers -------------------------------------------------
    ANCHOR_TOP_M: int = Field(6, ge=1, description="Anchors proposed per question (anchors).")
    ANCHOR_MIN_SCORE: float = Field(0.5, ge=0.0, le=1.0, description="Confidence an anchor needs to be selected (0-1).")
    MAX_WORKERS: int = Field(4, ge=1, description="Retriever-Workers per round, one per selected anchor (workers).")
    WORKER_K: int = Field(4, ge=1, description="Passages a worker keeps after pruning (passages).")
    WORKER_HOPS: int = Field(1, ge=0, le=1, description="Hops beyond hop 0 (1 = follow sections/links once) (hops).")
    ROUGH_MIN_OVERLAP: float = Field(
        0.2, ge=0.0, le=1.0,
        description="Rough prune: share of the question's content words a passage must hold when it lacks the anchor (0-1).",
    )
    FINE_MIN_SIM: float = Field(
        0.2, ge=-1.0, le=1.0, description="Fine prune: cosine similarity of passage to question to keep it (cosine)."
    )
    PATH_MIN_SCORE: float = Field(
        0.3, ge=0.0, le=1.0, description="A path whose best passage scores below this ends as 'low_score' (0-1)."
    )
    PRUNE_FALLBACK_K: int = Field(
        0, ge=0,
        description="When pruning leaves every worker without a passage, the Supervisor packs this many of the best "
        "passages it turned down and lets the confidence gate and the answer layers decide (passages; 0 = refuse as no evidence).",
    )
    NEW_HITS_EPS: float = Field(
        0.2, ge=0.0, le=1.0, description="New-hits ratio below which a path ends as 'no_novelty' (fraction)."
    )
    ANCHOR_BONUS: float = Field(
        0.07, ge=0.0, le=1.0, description="Added to the [0,1] fused score, scaled by the passage's anchor coverage."
    )

    # --- BAUG: signals and policy ------------------------------------------------------------
    OVERLAP_TAU: float = Field(
        0.3, ge=0.0, le=1.0,
        description="Cosine from which an answer sentence counts as supported by its source sentence (cosine); "
        "calibrated on a SQuAD dev split (the design's 0.42 refused more answerable questions).",
    )
    ATTRIBUTION_MIN_CLAIMS: float = Field(
        0.75, ge=0.0, le=1.0,
        description="Share of a sentence's new names/numbers its supporting source sentence must hold (fraction).",
    )
    OVERLAP_MIN: float = Field(0.5, ge=0.0, le=1.0, description="Support overlap needed to STOP (fraction of sentences).")
    FAITH_MIN: float = Field(0.6, ge=0.0, le=1.0, description="Faithfulness needed to STOP (fraction of claims).")
    ANSWER_RELEVANCE_MIN: float = Field(
        0.45, ge=-1.0, le=1.0, description="Cosine of answer to question needed to STOP (cosine)."
    )
    COVERAGE_MIN: float = Field(
        0.5, ge=0.0, le=1.0, description="Share of selected anchors the cited text must hold to STOP (fraction)."
    )
    REFLECT_MIN_OVERLAP: float = Field(
        0.25, ge=0.0, le=1.0, description="Below this overlap a draft is not worth revising: abstain instead (fraction)."
    )
    MAX_ROUNDS: int = Field(2, ge=1, le=5, description="Retrieval rounds per question, the first included (rounds).")
    FACTOID_ONE_SHOT_RETRIEVAL: bool = Field(
        True, description="Before abstaining on missing anchors, retrieve once more with them appended to the query."
    )
    FACTOID_MIN_TOKENS_LEFT: int = Field(
        300, ge=0, description="Token budget left that the one-shot anchor retrieval needs (tokens)."
    )
    REFLECT_ENABLED: bool = Field(True, description="Allow the one Self-RAG-style critique-and-revise per question.")
    USE_FACTOID_FINALIZER: bool = Field(True, description="Extract a short answer span for EM/F1 scoring.")
    JUDGE_POLICY: Literal["off", "gray_zone"] = Field(
        "off", description="LLM grounding judge: off, or only for gray-zone signals (counted as stage 'judge')."
    )
    JUDGE_MAX_CALLS_PER_Q: int = Field(1, ge=0, description="LLM judge calls per question at most (calls).")
    EVAL_LLM_JUDGE: bool = Field(
        False, description="Send answers the rule judge cannot decide to an LLM judge (openai backend only)."
    )
    EVAL_JUDGE_MODEL: str = Field("gpt-4o-mini", description="Model name of the evaluation judge.")
    EVAL_JUDGE_BASE_URL: str | None = Field(None, description="OpenAI-compatible endpoint of the evaluation judge.")
    EVAL_JUDGE_API_KEY: SecretStr | None = Field(None, description="API key of the evaluation judge endpoint.")
    TELEMETRY_PATH: Path | None = Field(
        None, description="JSONL file of per-round telemetry; default ARTIFACTS_DIR/telemetry/<system>.jsonl."
    )
    TRACE_TEXT_CHARS: int = Field(
        240, ge=20, description="Passage and draft texts kept per node in a result's trace events (characters); "
        "the chunks a quote comes from are kept whole."
    )
    CHECKPOINT_PATH: Path | None = Field(
        None, description="SQLite file checkpointing every graph step (thread id = question id) for "
        "`trace --steps` and replay; None = off (`eval --checkpoints` puts one in the run folder)."
    )

    # --- CRAG starter kit (agentic_rag/crag_adapter.py) --------------------------------------
    CRAG_SECONDS_PER_QUERY: float = Field(
        30.0, gt=0,
        description="Time each question of a kit batch may take; a batch of n has n times this (s). The official kit "
        "(facebookresearch/CRAG, models/dummy_model.py) asks a model to respond to each query within 30 seconds.",
    )
    CRAG_MARGIN_S: float = Field(
        3.0, ge=0,
        description="Kept free before a question's limit: its hard deadline falls this much earlier, to cover the "
        "last step that cannot be cut (one transformer block, or the output layer) and returning (s).",
    )
    CRAG_MIN_START_S: float = Field(
        2.0, ge=0, description="A question with less time than this before its deadline is not started: 'i don't know' (s)."
    )
    CRAG_BATCH_SIZE: int = Field(
        4, ge=1, le=16, description="Questions per batch the adapter asks the kit for (questions; the kit allows 1-16)."
    )
    CRAG_ANSWER_TOKENS: int = Field(
        75, ge=2,
        description="Answers are cut to this many tokens of the kit's own tokenizer, at a word boundary (tokens; "
        "the kit trims predictions to 75).",
    )
    CRAG_TOKENIZER_PATH: Path | None = Field(
        None,
        description="Folder of the kit's trimming tokenizer (its tokenizer/); None = the kit's models.utils tokenizer "
        "when importable, else at most CRAG_ANSWER_TOKENS - 1 UTF-8 bytes (no Llama token is shorter than a byte).",
    )
    CRAG_ARTIFACTS_DIR: Path = Field(
        Path(user_cache_dir("agentic-rag")) / "crag-kit",
        description="ARTIFACTS_DIR of runs inside the kit (per-question indexes, telemetry), kept out of the kit's "
        "working directory.",
    )

    # --- Extensions (docs/extending.md) ------------------------------------------------------
    EXTENSIONS: Annotated[list[str], NoDecode] = Field(
        [], description="Agent nodes added without editing the graph, in order: 'module:attribute' paths or names "
        "registered under the 'agentic_rag.extensions' entry-point group (a comma-separated string is accepted).",
    )
    EXTENSION_SETTINGS: dict[str, dict[str, Any]] = Field(
        {}, description="Each extension's own settings by extension name, e.g. {\"freshness\": {\"REAL_TIME_MAX_AGE_H\": 48}} "
        "(keys and units are the extension's; `agentic-rag settings` lists those of the configured extensions).",
    )

    # --- Data and runs -----------------------------------------------------------------------
    BAD_RECORDS: Literal["skip", "fail"] = Field(
        "skip", description="On a malformed input record: report it and skip, or stop with an error."
    )
    BAD_RECORDS_SHOWN: int = Field(
        20, ge=0, description="Skipped bad records printed on stderr one by one; the rest are counted (records)."
    )
    MAX_QUESTION_CHARS: int = Field(
        1000, ge=10,
        description="Longer questions are refused (ABSTAIN_QUESTION_TOO_LONG) before any anchor, retrieval or LLM "
        "work (characters).",
    )
    ARTIFACTS_DIR: Path = Field(Path("artifacts"), description="Indexes, caches, runs and telemetry.")
    INDEX_CACHE_DIR: Path | None = Field(
        None,
        description="Folder of the per-question index cache (an index per question's pages, reused by every run "
        "that sees the same pages); None = ARTIFACTS_DIR/cache.",
    )

    @field_validator("EXTENSIONS", mode="before")
    @classmethod
    def _extension_list(cls, value: Any) -> Any:
        if isinstance(value, str):  # from the environment: a JSON list, or names separated by commas
            value = json.loads(value) if value.lstrip().startswith("[") else [v.strip() for v in value.split(",")]
        return [v for v in value if v] if isinstance(value, list) else value

    @field_validator("VECTOR_STORE")
    @classmethod
    def _vector_store_name(cls, value: str) -> str:
        if value in ("faiss", "inmemory"):
            return value
        module, _, name = value.replace(":", ".").rpartition(".")
        if not (module and name.isidentifier()):
            raise ValueError("must be 'faiss', 'inmemory' or a store class as module:Class")
        from agentic_rag.retrieval.vectorstore import store_class

        store_class(value)  # a class that cannot be imported is a settings error, not a failed question
        return value

    @model_validator(mode="after")
    def _reranker_needs_a_model(self) -> "Settings":
        if self.USE_RERANKER and self.RERANKER_KIND == "cross_encoder" and not self.RERANKER_MODEL:
            raise ValueError("USE_RERANKER=True needs RERANKER_MODEL (a local cross-encoder folder) "
                             "or RERANKER_KIND=llm (the generator grades the passages)")
        return self

    # -----------------------------------------------------------------------------------------
    @classmethod
    def keys(cls) -> list[str]:
        return list(cls.model_fields)

    @classmethod
    def load(
        cls,
        preset: str | Path | None = None,
        overrides: Mapping[str, Any] | Iterable[str] | None = None,
    ) -> "Settings":
        """Build settings from defaults < preset < environment < overrides."""
        values: dict[str, Any] = {}
        if preset:
            values.update(_canonical(read_preset(preset), source=f"preset {preset}"))
        values.update(_env_values())
        if overrides:
            if not isinstance(overrides, Mapping):
                overrides = parse_overrides(overrides)
            values.update(_canonical(overrides, source="override"))
        try:
            return cls.model_validate(values)
        except ValidationError as exc:
            raise SettingsError(_explain(exc)) from None

    def replace(self, **changes: Any) -> "Settings":
        """A copy with some fields changed (validated)."""
        data = self.model_dump()
        data.update(_canonical(changes, source="override"))
        try:
            return type(self).model_validate(data)
        except ValidationError as exc:
            raise SettingsError(_explain(exc)) from None

    @classmethod
    def from_runnable_config(cls, config: Mapping[str, Any] | None) -> "Settings":
        """Settings for a graph run: a ``Settings`` object or plain keys under ``configurable``."""
        configurable = dict((config or {}).get("configurable") or {})
        given = configurable.get("settings")
        if isinstance(given, Settings):
            return given
        known = {k: v for k, v in configurable.items() if k.upper() in cls.model_fields}
        preset = configurable.get("preset")
        if isinstance(given, Mapping):
            known = {**given, **known}
        return cls.load(preset=preset, overrides=known)

    def public_dump(self) -> dict[str, Any]:
        """Every setting as JSON-ready values, secrets masked (for run configs and telemetry)."""
        data = self.model_dump(mode="json")
        for secret in SECRET_SETTINGS:
            if data.get(secret):
                data[secret] = "***"
        return data

    def backend_error(self) -> str | None:
        """Why the configured LLM backend cannot be reached at all, or None (checked before a run starts)."""
        if self.LLM_BACKEND == "openai" and not self.OPENAI_BASE_URL and not self.openai_api_key:
            return ("LLM_BACKEND='openai' needs OPENAI_BASE_URL (a local server) or an OpenAI API key "
                    f"(set {ENV_PREFIX}OPENAI_BASE_URL, $OPENAI_BASE_URL or -o OPENAI_BASE_URL=...)")
        return None

    @property
    def cache_dir(self) -> Path:
        """Where per-question indexes (and, by default, the chunk vectors they are built from) live."""
        return Path(self.INDEX_CACHE_DIR or Path(self.ARTIFACTS_DIR) / "cache")

    @property
    def openai_api_key(self) -> str | None:
        if self.OPENAI_API_KEY is not None:
            return self.OPENAI_API_KEY.get_secret_value()
        return os.environ.get("OPENAI_API_KEY")


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


def parse_overrides(items: Iterable[str]) -> dict[str, Any]:
    """Parse ``KEY=VALUE`` strings; values that read as JSON (numbers, booleans, lists) are decoded."""
    out: dict[str, Any] = {}
    for item in items:
        if "=" not in item:
            raise SettingsError(f"override {item!r} is not of the form KEY=VALUE")
        key, raw = item.split("=", 1)
        key, raw = key.strip(), raw.strip()
        if key.upper() in SECRET_SETTINGS:  # a key is text even when it reads as a number
            value: Any = raw
        elif raw in {"True", "False"}:
            value = raw == "True"
        else:
            try:
                value = json.loads(raw)
            except json.JSONDecodeError:
                value = raw
        out[key] = value
    return out


def _canonical(values: Mapping[str, Any], source: str) -> dict[str, Any]:
    out = {}
    for key, value in values.items():
        name = key.upper()
        if name not in Settings.model_fields:
            close = difflib.get_close_matches(name, Settings.model_fields, n=3)
            hint = f"; did you mean {', '.join(close)}?" if close else ""
            raise SettingsError(f"unknown setting {key!r} in {source}{hint}")
        out[name] = value
    return out


def _env_values() -> dict[str, Any]:
    out = {}
    for name in Settings.model_fields:
        raw = os.environ.get(ENV_PREFIX + name)
        if raw is None and name in ENV_FALLBACKS:
            raw = os.environ.get(name) or None
        if raw is not None:
            out[name] = parse_overrides([f"{name}={raw}"])[name]
    return out


def ignored_env_names() -> list[str]:
    """Environment variables named exactly like a setting but without the prefix: the README's setting
    names invite ``export LLM_BACKEND=openai``, which would otherwise be silently ignored."""
    return [name for name in Settings.model_fields
            if name in os.environ and name not in ENV_FALLBACKS and ENV_PREFIX + name not in os.environ]


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
        key = ".".join(str(p) for p in err["loc"])
        if key:
            shown = "a hidden value" if key.upper() in SECRET_SETTINGS else repr(err.get("input"))
            lines.append(f"setting {key}: {err['msg']} (got {shown})")
        else:
            lines.append(str(err["msg"]).removeprefix("Value error, "))
    return "; ".join(lines)
