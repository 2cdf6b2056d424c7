"""The settings' declarations: one model per section, one field per setting with its default, unit and
meaning, and the names they are known by. How values are read (presets, the environment, overrides, in
either spelling) is loading.py; the ``Settings`` object that holds the sections is settings.py."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Any, Literal

from platformdirs import user_cache_dir
from pydantic import BaseModel, ConfigDict, Field, SecretStr, field_validator, model_validator
from pydantic.fields import FieldInfo
from pydantic_settings import NoDecode

from agentic_rag.configuration.available import import_store_class, missing_otel_packages
from agentic_rag.configuration.checks import value_problem
from agentic_rag.errors import UserError

NESTED_DELIMITER = "__"  # retrieval__RETRIEVAL_K, AGENTIC_RAG_RETRIEVAL__RETRIEVAL_K
USER_CACHE = Path(user_cache_dir("agentic-rag"))  # ~/.cache/agentic-rag on Linux; written `<user cache>` in docs


class SettingsError(UserError, ValueError):
    """A setting key, value or preset the user gave cannot be used."""

    label = "settings error"


def setting(default: Any, unit: str, text: str, per_request: bool = False, **constraints: Any) -> Any:
    """A settings field whose description ends with its unit, kept apart too (the `settings` table's
    unit column, and LangGraph Studio's schema) so it never has to be read out of the prose.

    ``per_request``: a question-level knob (a budget, a threshold, a policy) that a served graph's client
    may set for its own run. Every other setting (an endpoint, a credential, a model, a path, what the
    process imports or spends) is the server's: a request that names one is refused."""
    extra = {"unit": unit, "per_request": per_request}
    return Field(default, description=f"{text} Unit: {unit}.", json_schema_extra=extra, **constraints)


def unit_of(field: FieldInfo) -> str:
    extra = field.json_schema_extra
    return str(extra.get("unit", "")) if isinstance(extra, dict) else ""


def per_request(field: FieldInfo) -> bool:
    extra = field.json_schema_extra
    return bool(extra.get("per_request")) if isinstance(extra, dict) else False


def meaning_of(field: FieldInfo) -> str:
    """A field's description without the unit sentence ``setting`` appends."""
    text = field.description or ""
    unit = unit_of(field)
    return text.removesuffix(f" Unit: {unit}.") if unit else text


class _Section(BaseModel):
    # titled by their names, which are what presets, -o and the environment spell; no inf or nan, which
    # no setting means and JSON (config.json, telemetry) cannot hold
    model_config = ConfigDict(extra="forbid", validate_assignment=True, field_title_generator=lambda name, _: name,
                              allow_inf_nan=False)

    @model_validator(mode="after")
    def _values_usable(self) -> "_Section":
        """A pattern that does not compile, or a key or URL no server could be reached with, is a settings
        error now, in one line that shows no key, not a traceback inside a question (configuration/checks.py)."""
        for name, field in type(self).model_fields.items():
            if problem := value_problem(name, unit_of(field), getattr(self, name)):
                raise ValueError(problem)
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
    MAX_OUTPUT_TOKENS: int = setting(160, "tokens", "Cap on generated tokens per LLM call.", ge=1, le=4096, per_request=True)
    TEMPERATURE: float = setting(0.0, "unitless", "Sampling temperature; 0 = greedy (deterministic).", ge=0.0, le=2.0)
    TORCH_THREADS: int = setting(0, "threads", "Torch intra-op threads; 0 = number of CPU cores.", ge=0)
    LLM_DTYPE: Literal["auto", "bfloat16", "float32"] = setting("auto", "choice", "What the local model computes in: 'auto' = "
        "bfloat16 where it is native and faster (AMX, Arm BF16, AMD's AVX-512 BF16), else float32 (see benchmarks/dtype.md).")
    LLM_SPECULATION: Literal["off", "prompt_lookup", "assisted"] = setting("prompt_lookup", "choice", "Speculative decoding of "
        "the local model, lossless when greedy: tokens from the prompt (prompt_lookup) or the 0.5B (assisted), checked in one pass.")
    MAX_REPLY_CHARS: int = setting(20_000, "characters", "A remote model's reply is cut to this many characters before "
                                   "any text processing (a server may ignore MAX_OUTPUT_TOKENS).", ge=100)
    LLM_TIMEOUT_S: float = setting(
        300.0, "s", "Time one remote LLM call attempt may take in all, from connecting to the reply's last byte "
        "(not per read), cut to what is left of the question's WALL_TIME_S.", gt=0
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
    LLM_BREAKER_COOLDOWN_S: float = setting(
        60.0, "s",
        "After a remote LLM call got no reply within the whole LLM_TIMEOUT_S on every attempt, further calls to that "
        "server end at once as ABSTAIN_LLM_UNAVAILABLE; after this long one call tries it again, and a reply ends "
        "the refusals. 0 = off: every call waits out its own timeouts.",
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
        "Keep chunk vectors on disk by embedding model and chunk text, so a page is embedded once across questions and runs.",
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
    RETRIEVAL_POOL_K: int = setting(
        24, "passages", "Candidates taken from each retriever before fusion.", ge=1, per_request=True
    )
    RETRIEVAL_K: int = setting(8, "passages", "Passages returned after fusion and MMR.", ge=1, per_request=True)
    MMR_LAMBDA: float = setting(
        0.45, "unitless, 0-1", "MMR trade-off: 1 = pure relevance, 0 = pure diversity.", ge=0.0, le=1.0, per_request=True
    )
    RRF_K: int = setting(60, "ranks", "Reciprocal-rank-fusion constant k in 1/(k+rank).", ge=1, per_request=True)

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
    ANCHOR_TOP_M: int = setting(6, "anchors", "Anchors proposed per question.", ge=1, per_request=True)
    ANCHOR_MIN_SCORE: float = setting(
        0.5, "0-1", "Confidence an anchor needs to be selected.", ge=0.0, le=1.0, per_request=True
    )
    MAX_WORKERS: int = setting(4, "workers", "Retriever-Workers per round, one per selected anchor.", ge=1, per_request=True)
    FINE_MIN_SIM: float = setting(
        0.2, "cosine", "Fine prune: similarity of passage to question needed to keep it.", ge=-1.0, le=1.0, per_request=True
    )
    PATH_MIN_SCORE: float = setting(
        0.3, "0-1", "A path whose best passage scores below this ends as 'low_score'.", ge=0.0, le=1.0, per_request=True
    )
    PRUNE_FALLBACK_K: int = setting(
        2, "passages",
        "When pruning leaves every worker without a passage, the Supervisor packs this many of the best passages it "
        "turned down and lets the confidence gate and the answer layers decide (0 = refuse as no evidence).",
        ge=0, per_request=True,
    )
    NEW_HITS_EPS: float = setting(
        0.2, "fraction", "New-hits ratio below which a path ends as 'no_novelty'.", ge=0.0, le=1.0, per_request=True
    )
    ANCHOR_BONUS: float = setting(
        0.07, "0-1 score", "Added to the [0,1] fused score, scaled by the passage's anchor coverage.", ge=0.0, le=1.0,
        per_request=True
    )
    AMBIGUITY_ENABLED: bool = setting(
        False, "on/off",
        "Group evidence into topic clusters and return 'ambiguous' with options when none wins (off by default: it "
        "raised false refusal on the dev sweep, benchmarks/calibration/qwen-1.5b/13_AMBIGUITY_ENABLED).", per_request=True,
    )
    AMBIGUITY_MERGE_SIM: float = setting(
        0.5, "cosine", "Centroid similarity above which two source groups are one topic.", ge=-1.0, le=1.0, per_request=True
    )
    MIN_GROUP_GAP: float = setting(
        0.1, "0-1", "Score or similarity gap that lets the best cluster win.", ge=0.0, per_request=True
    )
    MAX_OPTIONS: int = setting(3, "options", "Options returned with an 'ambiguous' status.", ge=2, per_request=True)
    FACTOID_ONE_SHOT_RETRIEVAL: bool = setting(
        True, "on/off", "Before abstaining on missing anchors, retrieve once more with them appended to the query.",
        per_request=True
    )
    FACTOID_MIN_TOKENS_LEFT: int = setting(
        300, "tokens", "Token budget left that the one-shot anchor retrieval needs.", ge=0, per_request=True
    )
    USE_FACTOID_FINALIZER: bool = setting(True, "on/off", "Extract a short answer span for EM/F1 scoring.", per_request=True)
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


class ConfidenceGateSettings(_Section):
    """Layer 1, the confidence gate before the LLM: tier 1 grades the packed passages, tier 2 reads
    the retrieval scores."""

    GATE_ENABLED: bool = setting(
        True, "on/off", "Refuse before generation when retrieval confidence is low.", per_request=True
    )
    GATE_SCORE_SOURCE: Literal["vector", "bm25", "fused"] = setting(
        "vector", "choice", "Tier-2 score the gate reads, normalised to [0,1] (see supervisor/confidence_gate.py).", per_request=True
    )
    RETRIEVAL_MIN_SCORE: float = setting(
        0.15, "0-1", "Tier 2: normalised score the top passage needs; calibrated on a SQuAD dev split.", ge=0.0, le=1.0,
        per_request=True
    )
    RETRIEVAL_MIN_RATIO: float = setting(
        1.0, "ratio", "Tier 2: top-1 / top-2 score ratio needed (1 = rule off).", ge=1.0, per_request=True
    )
    USE_RERANKER: bool = setting(
        False, "on/off", "Tier 1: grade the packed passages 0-3 with the grader RERANKER_KIND names.", per_request=True
    )
    RERANKER_KIND: Literal["cross_encoder", "llm"] = setting(
        "cross_encoder", "choice",
        "Tier 1's grader: the cross-encoder at RERANKER_MODEL, or the generator asked for a 0-3 digit per passage "
        "(one call each, stage 'grade'; see supervisor/grader.py).", per_request=True,
    )
    RERANKER_MODEL: str | None = setting(
        None, "path", "Local folder of a relevance cross-encoder (e.g. a saved ms-marco-MiniLM-L-6-v2)."
    )
    GRADE_MAX_PASSAGES: int = setting(
        4, "passages", "RERANKER_KIND=llm: passages graded, in rank order; each is one LLM call.", ge=1, per_request=True
    )
    RELEVANCE_THRESHOLD: float = setting(
        2.0, "grade, 0-3", "Tier 1: relevance the top passage needs.", ge=0.0, le=3.0, per_request=True
    )

    @model_validator(mode="after")
    def _reranker_needs_a_model(self) -> "ConfidenceGateSettings":
        if self.USE_RERANKER and self.RERANKER_KIND == "cross_encoder" and not self.RERANKER_MODEL:
            raise ValueError("USE_RERANKER=True needs RERANKER_MODEL (a local cross-encoder folder) "
                             "or RERANKER_KIND=llm (the generator grades the passages)")
        return self


class BAUGSettings(_Section):
    """BAUG, answer layers 2 and 3 and the policy: how a draft is checked against its evidence, and
    when the agent stops, revises or abstains."""

    GROUNDING_ENABLED: bool = setting(
        True, "on/off", "Layer 2: an answer must be supported by its sources (overlap, faith, NLI) to STOP.",
        per_request=True
    )
    OVERLAP_TAU: float = setting(
        0.3, "cosine",
        "Similarity from which an answer sentence counts as supported by its source sentence; calibrated on a SQuAD "
        "dev split (benchmarks/calibration/OVERLAP_TAU).",
        ge=0.0, le=1.0, per_request=True,
    )
    ATTRIBUTION_MIN_CLAIMS: float = setting(
        0.5, "fraction", "Share of a sentence's new names/numbers its supporting source sentence must hold.",
        ge=0.0, le=1.0, per_request=True,
    )
    OVERLAP_MIN: float = setting(
        0.5, "fraction of sentences", "Support overlap needed to STOP.", ge=0.0, le=1.0, per_request=True
    )
    FAITH_MIN: float = setting(0.6, "fraction of claims", "Faithfulness needed to STOP.", ge=0.0, le=1.0, per_request=True)
    ANSWER_RELEVANCE_MIN: float = setting(
        0.3, "cosine", "Similarity of answer to question needed to STOP.", ge=-1.0, le=1.0, per_request=True
    )
    ANSWER_NEW_WORDS_MIN: float = setting(
        1.0, "words",
        "Content words the answer adds to the question, needed to STOP: an answer that only restates the "
        "question adds nothing a source could back (questions that offer options are not read).",
        ge=0.0, per_request=True,
    )
    COVERAGE_MIN: float = setting(
        0.0, "fraction", "Share of selected anchors the cited text must hold to STOP.", ge=0.0, le=1.0, per_request=True
    )
    NLI_MODEL: str | None = setting(None, "path", "Local folder of an NLI cross-encoder for layer 2 (optional).")
    NLI_MIN: float = setting(
        0.5, "0-1", "P(entailment) an answer needs when NLI_MODEL is set.", ge=0.0, le=1.0, per_request=True
    )
    PROBE_ENABLED: bool = setting(
        True, "on/off",
        "Layer 2: the answerability reader: a probe on the answer prompt's last-token hidden state, from the "
        "generation call's prefill for a packaged model in this process, else from a prefill of READER_MODEL here.",
        per_request=True,
    )
    ANSWERABILITY_READER: Literal["probe", "cross-encoder", "both"] = setting(
        "probe", "reader", "What reads answerability: the probe on a packaged model's prefill; the fine-tuned MiniLM "
        "cross-encoder on the question and the prompt's sources (no generator needed); both: their logits averaged.",
        per_request=True)
    PROBE_PATH: Path | None = setting(None, "path", "Probe file; None = the packaged probe of the model it reads.")
    READER_MODEL: Literal["auto", "packaged", "packaged-1.5b"] = setting(
        "auto", "packaged model",
        "The packaged model whose prefill the answerability probe reads when the generator cannot give its own "
        "(a server, a model without a probe): auto = the packaged model the server serves, else packaged-1.5b.",
    )
    ANSWERABILITY_MIN: float = setting(
        0.3, "0-1",
        "P(the context answers the question) from the probe below which the answer is refused (the sweep: "
        "benchmarks/calibration/ANSWERABILITY_MIN).",
        ge=0.0, le=1.0, per_request=True,
    )
    VERIFIER_ENABLED: bool = setting(
        True, "on/off",
        "Layer 2: before an answer is shown, the generator is asked whether the sentences it quotes state that answer "
        "(one prefill-only call on the local backend, booked as stage 'verify').", per_request=True,
    )
    VERIFIER_MIN: float = setting(
        0.425, "0-1", "P(yes) from the support verifier below which the answer is refused.", ge=0.0, le=1.0, per_request=True
    )
    VERIFIER_COMBINE: Literal["alone", "mean_with_probe", "mean_with_probes", "probes"] = setting(
        "mean_with_probes", "choice",
        "What VERIFIER_MIN cuts: the verifier's P(yes) alone ('alone'); its mean with the probe's answerability "
        "('mean_with_probe'); its mean with that and the quote probe's ('mean_with_probes'); or the mean of the two "
        "probe readings without the verifier call ('probes'). The quote probe is the same probe read on an answer "
        "prompt whose only source is the sentences the draft quotes (one prefill, stage 'verify').", per_request=True,
    )
    HEDGING_ENABLED: bool = setting(
        True, "on/off", "Layer 3: hedging or filler in the answer becomes an abstention.", per_request=True
    )
    CHAIN_CHECK: bool = setting(False, "on/off", "A bridge or comparison answer must be stated hop by hop, each hop by "
                                "a sentence of its own page; the chain is shown either way.", per_request=True)
    HOPS_FOUND_MIN: float = setting(1.0, "fraction", "Share of a multi-hop answer's hops a page must state (CHAIN_CHECK).",
                                    ge=0.0, le=1.0, per_request=True)
    PERIOD_SCOPE: Literal["window", "content", "sentence"] = setting(
        "window", "choice",
        "Where a year, quarter or date the question names must be stated for the answer to stand: 'window' = the "
        "supporting sentence or a neighbour of it; 'content' = the same, but a neighbour that is only a date (a "
        "snippet's page date) does not count; 'sentence' = the supporting sentence itself.", per_request=True,
    )
    REFLECT_ENABLED: bool = setting(
        True, "on/off", "Allow the one Self-RAG-style critique-and-revise per question.", per_request=True
    )
    REFLECT_MIN_OVERLAP: float = setting(
        0.25, "fraction", "Below this overlap a draft is not worth revising: abstain instead.", ge=0.0, le=1.0,
        per_request=True
    )
    JUDGE_POLICY: Literal["off", "gray_zone"] = setting(
        "off", "choice", "LLM grounding judge: off, or only for gray-zone signals (counted as stage 'judge').",
        per_request=True
    )
    JUDGE_MAX_CALLS_PER_Q: int = setting(1, "calls", "LLM judge calls per question at most.", ge=0, per_request=True)
    # -- the fitted decision (baug/fitted.py, fitted by `agentic-rag train decision`) --------------
    GATE_POLICY: Literal["auto", "thresholds", "fitted"] = setting(
        "auto", "choice",
        "How a draft is judged: the hand-set thresholds above, or one fitted P(the answer is right | signals) from "
        "DECISION_FILE compared with the cut WRONG_ANSWER_COST implies; auto = fitted in-process where a decision "
        "ships for the model (or DECISION_FILE is set), else thresholds.", per_request=True,
    )
    DECISION_FILE: Path | None = setting(
        None, "path", "Decision file written by `agentic-rag train decision`, read under GATE_POLICY=fitted or auto; "
        "None = the one shipped for the packaged model, where one ships.",
    )
    WRONG_ANSWER_COST: float = setting(
        1.0, "points",
        "What a wrong answer costs against +1 for a right one and 0 for a refusal (CRAG: 1); the fitted policy answers "
        "when P(right) > cost / (1 + cost).", gt=0.0, per_request=True,
    )
    RISK: float | None = setting(None, "fraction", "The share of wrong answers among shown ones you accept: the fitted "
                                 "policy answers when P(right) clears the threshold `calibrate --risk` stored for it; None = "
                                 "WRONG_ANSWER_COST's cut.", gt=0.0, lt=1.0, per_request=True)
    GREY_ZONE_WIDTH: float = setting(
        0.1, "probability",
        "Within this distance of the cut the fitted policy retrieves more, reflects or asks the verifier (while the "
        "budget allows) instead of deciding at once.", ge=0.0, le=0.5, per_request=True,
    )
    REQUEST_LOGPROBS: bool = setting(
        True, "on/off",
        "Ask the model for its tokens' log-probabilities (the draft's confidence signals; the verifier's P(yes) "
        "from top_logprobs on a server). Turn off for a server that rejects the parameter.",
    )


class BudgetSettings(_Section):
    """Caps per question, read by both graphs: evidence, tokens, calls, rounds, time, question length."""

    MAX_CONTEXT_TOKENS: int = setting(
        1000, "tokens", "Evidence packed into a prompt, strictly below.", ge=50, per_request=True
    )
    TOKEN_BUDGET: int = setting(
        3000, "tokens", "Hard cap on LLM tokens (prompt + completion) per question, all calls.", ge=200, per_request=True
    )
    MAX_LLM_CALLS: int = setting(3, "calls", "Hard cap on LLM calls per question.", ge=1, per_request=True)
    MAX_ROUNDS: int = setting(
        2, "rounds", "Retrieval rounds per question, the first included.", ge=1, le=5, per_request=True
    )
    WALL_TIME_S: float = setting(
        600.0, "s", "Per-question wall time after which no new LLM call or retrieval round starts.", gt=0, per_request=True
    )
    MAX_QUESTION_CHARS: int = setting(
        1000, "characters",
        "Longer questions are refused (ABSTAIN_QUESTION_TOO_LONG) before any anchor, retrieval or LLM work.",
        ge=10, per_request=True,
    )


class EvalSettings(_Section):
    """Evaluation and records: the evaluation judge, malformed input records, the trace's texts.
    None of them changes what a graph decides."""

    EVAL_JUDGE: Literal["rule", "llm"] = setting("rule", "choice", "Who judges each answer: the rule judge, or an LLM judge "
                                                 "at EVAL_JUDGE_BASE_URL by CRAG's protocol (the rule verdict kept beside it).")
    EVAL_JUDGE_MODEL: str = setting("gpt-4o-mini", "model name", "Model name of the evaluation judge.")
    EVAL_JUDGE_BASE_URL: str | None = setting(None, "URL", "OpenAI-compatible endpoint of the evaluation judge.")
    EVAL_JUDGE_API_KEY: SecretStr | None = setting(None, "secret", "API key of the evaluation judge endpoint.")
    BAD_RECORDS: Literal["skip", "fail"] = setting("skip", "choice", "On a malformed input record: report it and skip, "
                                                   "or stop with an error.")
    BAD_RECORDS_SHOWN: int = setting(20, "records", "Skipped bad records printed on stderr one by one; the rest are counted.", ge=0)
    MAX_RECORD_BYTES: int = setting(64_000_000, "bytes", "A record (a dataset line, or a served request, its pages "
                                    "included) longer than this is refused unread: a record is held whole in memory.", ge=1_000)
    MAX_RECORD_PAGES: int = setting(50, "pages", "Pages a served request's record may hold (CRAG gives 5, HotpotQA 10); "
                                    "more is answered 422.", ge=1)
    TRACE_TEXT_CHARS: int = setting(240, "characters", "Passage and draft texts kept per node in a result's trace events; "
                                    "the chunks a quote comes from are kept whole.", ge=20)


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
    CRAG_TOKENIZER_PATH: Path | None = setting(
        None, "path",
        "Folder of the kit's trimming tokenizer (its tokenizer/); None = the kit's models.utils tokenizer when "
        "importable, else one UTF-8 byte fewer than the kit's token cap (no Llama token is shorter than a byte).",
    )


class PathSettings(_Section):
    """Where files go: caches, artifacts, telemetry and checkpoints. None changes an answer."""

    ARTIFACTS_DIR: Path = setting(Path("artifacts"), "path", "Indexes, caches, runs and telemetry.")
    INDEX_CACHE_DIR: Path | None = setting(None, "path", "Folder of the per-question index cache (an index per question's "
        "pages, reused by every run that sees the same pages); None = ARTIFACTS_DIR/cache.")
    INDEX_CACHE_MAX: int = setting(20_000, "indexes", "Per-question indexes the cache keeps; past it the least recently "
                                   "used go (a served graph builds one for every client's record).", ge=1)
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
    CHECKPOINT_PATH: Path | None = setting(None, "path", "SQLite file checkpointing every graph step (thread id = question "
        "id) for `trace --steps` and replay; None = off (`eval --checkpoints` puts one in the run folder).")
    MAX_CHECKPOINT_BYTES: int = setting(256_000_000, "bytes", "A checkpointed value that decompresses to more than this is "
                                        "refused when read (a small file can stand for gigabytes).", ge=1_000_000)
    OTLP_ENDPOINT: str | None = setting(
        None, "URL",
        "OTLP/HTTP collector (Phoenix, Langfuse) each answered question's spans are sent to (docs/opentelemetry.md); "
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
        if value and not value.lower().startswith(("http://", "https://")):  # else every span is lost in silence
            raise ValueError(f"OTLP_ENDPOINT must be an http:// or https:// URL, not {value!r}")
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
    "confidence_gate": ConfidenceGateSettings,
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
# What a served graph's request may set for its own run (fields declared with per_request=True)
PER_REQUEST_SETTINGS = SettingNames(name for section, model in SECTIONS.items()
                                    for name, field in model.model_fields.items() if per_request(field))
