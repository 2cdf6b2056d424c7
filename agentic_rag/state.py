"""Typed graph state and the one output record every system produces.

Both graphs (``baseline`` and ``agent``) fill the same ``AnswerRecord`` so runs compare like for like.
State values are plain JSON-ready data (dicts, lists, strings) so the graphs also run under
``langgraph dev`` and their traces can be stored and replayed.
"""

from __future__ import annotations

import operator
from typing import Annotated, Any, Literal, TypedDict

from pydantic import BaseModel, Field
from typing_extensions import TypedDict as SchemaTypedDict  # pydantic builds JSON schemas only from this one on 3.11

Status = Literal["ok", "refuse", "ambiguous"]


def merge_usage(left: dict[str, Any] | None, right: dict[str, Any] | None) -> dict[str, Any]:
    """Reducer adding per-stage token counts and call counts from parallel or successive nodes."""
    out: dict[str, Any] = {k: dict(v) for k, v in (left or {}).items()}
    for stage, counts in (right or {}).items():
        cur = out.setdefault(stage, {})
        for key, value in counts.items():
            cur[key] = cur.get(key, 0) + value
    return out


def merge_flags(left: dict[str, Any] | None, right: dict[str, Any] | None) -> dict[str, Any]:
    """Reducer of extension requests: each extension's latest report replaces its previous one."""
    return {**(left or {}), **(right or {})}


def merge_latency(left: dict[str, float] | None, right: dict[str, float] | None) -> dict[str, float]:
    out = dict(left or {})
    for node, ms in (right or {}).items():
        out[node] = round(out.get(node, 0.0) + ms, 3)
    return out


class Citation(BaseModel):
    n: int
    chunk_id: str
    page_name: str
    page_url: str
    quote: str = ""
    # two questions a reader asks of a quote, answered apart: is it in the source, and does it say the answer?
    in_source: bool = False  # the quote occurs word for word in the cited source (trusted page)
    states_answer: bool = False  # the quote holds the answer's names, numbers and content words (signals.states_answer)
    verified: bool = False  # both, and the quote backs its sentence by BAUG's support check


def citation_status(citation: dict[str, Any]) -> str:
    """What a citation's quote is shown with: whether it is in the source and whether it states the answer."""
    if not citation.get("quote"):
        return "no quote"
    if "in_source" not in citation:  # a row recorded before the two were told apart
        return "quote verified (whether it states the answer was not recorded)" if citation.get("verified") else "quote unverified"
    found = "in the source" if citation.get("in_source") else "NOT in the source"
    states = "states the answer" if citation.get("states_answer") else "does not state the answer"
    return f"quote {found}, {states}"


def support_of(row: dict[str, Any]) -> list[tuple[int | None, str]]:
    """(source number, quote) of each source sentence that backs one answer sentence: one, or two for
    an answer that joins facts (its ``bridge``: a second sentence of the same passage or of another)."""
    if not row.get("quote"):
        return []
    bridge = row.get("bridge") or {}
    return [(row.get("n"), row["quote"]), *([(bridge.get("n"), bridge["quote"])] if bridge.get("quote") else [])]


class AnswerRecord(BaseModel):
    """What a user (CLI ``--json``, API, eval) gets back for one question."""

    question_id: str = ""
    question: str
    system: str
    status: Status = "ok"
    answer: str = ""
    short_answer: str = ""
    draft: str = ""  # the model's last raw output, markup included (for inspection; empty if never called)
    citations: list[Citation] = Field(default_factory=list)
    reason: str = ""
    abstention_layer: str = ""  # one of baug.policy.LAYER_CODES' values, out_of_domain, invalid_selection or extension
    explanation: str = ""
    p_right: float | None = None  # the fitted decision's P(the last draft is right), where it decided
    missing: list[str] = Field(default_factory=list)
    chain: list[dict[str, Any]] = Field(default_factory=list)  # a multi-hop answer's hops (baug/chain.py), each quoted or missing
    options: list[dict[str, Any]] = Field(default_factory=list)
    tokens: dict[str, Any] = Field(default_factory=dict)
    llm_calls: int = 0
    tokens_saved: int = 0  # prompt + output cap of the generation the confidence gate skipped
    latency_ms: float = 0.0
    latency_by_node_ms: dict[str, float] = Field(default_factory=dict)
    cpu_by_node_ms: dict[str, float] = Field(default_factory=dict)  # each node's own thread's CPU time
    llm_by_node_ms: dict[str, float] = Field(default_factory=dict)  # wall time inside each node's LLM calls
    llm_ms: float = 0.0  # wall time inside LLM calls, all nodes
    cpu_ms: float = 0.0  # the process's CPU time over the question, every thread (torch's included)
    trace: str = ""
    signals: dict[str, Any] = Field(default_factory=dict)
    events: list[dict[str, Any]] = Field(default_factory=list)  # one per node run (agentic_rag/events.py)
    quoted_chunks: dict[str, str] = Field(default_factory=dict)  # chunk id -> full text, for chunks quoted


class _Question(SchemaTypedDict):
    question: str


class GraphInput(_Question, total=False):
    """What a caller may give a graph: ``question`` required, the rest optional. The server checks
    requests against it (graphs/server.py). (Two classes, not ``Required[...]``: under postponed
    annotations Python 3.11 does not see ``Required`` and would make every key optional.)"""

    question_id: str
    query_time: str
    record: dict[str, Any]  # a CRAG record: its own pages form the corpus (per-question mode)
    index_dir: str  # or a persistent corpus index
    selected_option: str  # answer from this option of an earlier 'ambiguous' result


class GraphOutput(SchemaTypedDict):
    """What a graph returns: the ``AnswerRecord`` as a dict. The rest of the state stays in the run:
    ``invoke(..., output_keys=STATE_KEYS)`` returns all of it, and a served thread's state holds it."""

    result: dict[str, Any]


# -- the working data's shapes (typing_extensions' TypedDict: LangGraph Studio renders their schemas) ----
class AnchorInfo(SchemaTypedDict):
    text: str
    type: str  # anchors/predictor.py's types: year, date, person, award, ...
    score: float  # 0-1


class Passage(SchemaTypedDict, total=False):
    """A retrieved chunk with its scores; each step adds its own keys (worker, supervisor, packing)."""

    rank: int
    chunk_id: str
    page_id: str
    page_name: str
    page_url: str
    page_last_modified: str
    page_untrusted: int  # sentences on the page that address the model
    start: int  # character offsets in the page's text
    end: int
    text: str
    vector_score: float
    bm25_score: float
    fused_score: float
    bonus: float
    # a worker's pruning
    hop: int
    anchor_hit: bool
    question_overlap: float
    fine_sim: float
    path_score: float
    pruned_by: str  # why pruning turned it down: rough, fine, path_score
    # the Supervisor's merge and packing
    found_by: list[str]  # the anchors whose workers found it
    anchors_held: list[str]
    anchor_coverage: float
    utility: float
    utility_per_token: float
    n: int  # its source number in the prompt, from 1
    truncated: bool


class WorkerPath(SchemaTypedDict, total=False):
    """One Retriever-Worker's result for one anchor in one round."""

    anchor: AnchorInfo | None  # None: the worker searched the question itself
    round: int
    query: str
    passages: list[Passage]
    pruned_best: list[Passage]  # what pruning turned down, best first (the Supervisor's fallback)
    candidates: int
    pruned_count: int
    path_score: float
    new_hits_ratio: float
    terminated_by: str  # complete, low_score, no_novelty, time
    latency_ms: float


class AnchorStat(SchemaTypedDict, total=False):
    type: str
    passages: int
    in_bundle: bool


class Bundle(SchemaTypedDict, total=False):
    """The evidence packed for the prompt, strictly under MAX_CONTEXT_TOKENS."""

    passages: list[Passage]
    context_tokens: int
    max_context_tokens: int
    dropped: int
    truncated: bool
    anchor_stats: dict[str, AnchorStat]  # anchor text -> what the bundle holds of it
    path_count: int
    prune_fallback: list[str]  # chunk ids packed from what pruning turned down (PRUNE_FALLBACK_K)
    generation_cost: int  # tokens the generation call would cost (prompt + output cap)


class SentenceSupport(SchemaTypedDict, total=False):
    sentence: str
    model_cites: list[int]
    n: int | None  # the source that supports it
    quote: str
    mode: str
    similarity: float
    claims_found: float
    supported: bool


class Signals(SchemaTypedDict, total=False):
    """BAUG's readings of the draft against its evidence (collect_signals; final_check adds the
    verifier's). Fractions and probabilities are 0-1, similarities cosines."""

    overlap_est: float
    faith_est: float
    anchor_coverage: float
    answer_relevance: float
    missing_anchors: list[str]
    new_hits_ratio: float
    tokens_used: int
    tokens_left: int
    llm_calls: int
    rounds: int
    stagnation: bool
    sentences: list[SentenceSupport]
    claims: list[str]
    unsupported_claims: list[str]
    question_terms_unmatched: list[str]
    untrusted_sources: list[dict[str, Any]]
    cited_text_chars: int
    answerability: float  # the probe's reading
    judge_score: float
    nli_entailment: float
    quote_answerability: float
    support_verdict: float
    support_verdict_skipped: str
    verified_score: float | None
    chain: list[dict[str, Any]]  # a multi-hop answer's hops: role, claim, quote, source, found (baug/chain.py)
    hops_found: float | None  # the share of them a sentence states (None: single-hop, no chain)
    lp_mean: float | None  # the draft's mean token log-probability (nats; llm/logprobs.py)
    lp_min: float | None  # its least likely token's log-probability (nats)
    p_first: float | None  # the probability of its first token
    logprobs: str  # whether the backend returned them


class BAUGDecision(SchemaTypedDict, total=False):
    """The policy's action and reason code (baug/policy.py), with the flags it read."""

    action: str  # STOP, ABSTAIN, RETRIEVE_MORE, REFLECT
    reason: str  # a reason code, e.g. STOP_OVERLAP_OK, ABSTAIN_NO_EVIDENCE
    flags: dict[str, Any]  # baug/policy.Flags
    final_check: bool  # the decision waits for the final check


class RAGState(TypedDict, total=False):
    # input
    question: str
    question_id: str
    query_time: str
    # a CRAG record (CragRecord.to_dict): its own pages form the corpus (per-question mode); a dict because the
    # graph's input is JSON (langgraph dev, the CRAG kit), and CragRecord is its schema
    record: dict[str, Any]
    index_dir: str  # or a persistent corpus index
    # working data
    passages: list[Passage]
    bundle: Bundle
    draft: str
    draft_logprobs: dict[str, Any]  # the draft's token log-probability signals: logprobs.LOGPROB_SIGNALS' keys
    llm_error: dict[str, Any]  # the model was unavailable: url, last error, attempts (LLMUnavailableError)
    # accounting (reducers make parallel branches add up)
    usage: Annotated[dict[str, Any], merge_usage]  # stage -> calls and tokens; stages are open-ended (extensions add theirs)
    latency_ms: Annotated[dict[str, float], merge_latency]
    cpu_ms: Annotated[dict[str, float], merge_latency]  # the node's own thread's CPU time
    llm_ms: Annotated[dict[str, float], merge_latency]  # wall time inside the node's LLM calls
    events: Annotated[list[dict[str, Any]], operator.add]  # one per node run; events.py owns their shape
    # agent: anchors, workers, rounds and BAUG
    started_at: float  # time.time() at the first node, for the wall-time cap
    anchors_proposed: list[AnchorInfo]
    anchors: list[AnchorInfo]  # the selected ones
    kind: str  # question kind for the type validators
    hop_plan: dict[str, Any]  # anchors/hops.HopPlan: single, bridge or comparison, and what each hop must name
    paths: Annotated[list[WorkerPath], operator.add]  # every worker's path, all rounds
    held_ids: list[str]  # chunk ids of evidence already held
    round: int
    extra_terms: list[str]  # anchors appended to worker queries in the one-shot retrieval
    hop_query: str  # the one-shot retrieval's next hop: the draft's names with the missing anchors ("" = none)
    one_shot_done: bool
    reflected: bool
    no_new_hits: bool
    confidence: dict[str, Any]  # the confidence gate's result for the current bundle
    probe: dict[str, Any]  # the answerability probe's reading of the latest answer call
    selected_option: str  # input: answer from this ambiguity option
    ood: str  # why the question is out of domain ("" when it is not)
    too_long: str  # why the question is refused as too long ("" when it is not)
    ambiguity: dict[str, Any]  # the ambiguity policy's status, rule and options
    citations: list[dict[str, Any]]  # Citation.model_dump(): JSON in the checkpoint, Citation is its schema
    signals: Signals  # BAUG's readings of the draft (collect_signals; final_check adds the verifier's)
    cited_text: str  # the chunks the draft rests on, as collect_signals read them (the final check's verifier reads it)
    validation: dict[str, Any]  # supervisor/validators.validate's result: its kind decides which keys it has
    flags: dict[str, Any]  # what the policy reads besides the signals (baug/policy.Flags), from collect_signals
    # extension name -> its request to BAUG ({"action": ABSTAIN | RETRIEVE_MORE, "code", "message", "missing",
    # "terms"}) or None; the latest report of each extension stands (docs/extending.md)
    extension_flags: Annotated[dict[str, Any], merge_flags]
    extension_error: dict[str, Any]  # an extension node raised: {"extension": name, "error": "Type: message"}
    extension_route: str  # where the extension that just ran chose to go (its router runs inside its node)
    decision: BAUGDecision
    # output
    result: dict[str, Any]  # AnswerRecord.model_dump(): JSON for the graph's output, AnswerRecord is its schema


# every state key: what the runner and tests ask a graph's run for (its output is only GraphOutput)
STATE_KEYS = tuple(RAGState.__annotations__)


class WorkerState(TypedDict, total=False):
    """What one Retriever-Worker receives through ``Send``."""

    question: str
    anchor: AnchorInfo | None
    round: int
    held_ids: list[str]
    extra_terms: list[str]
    hop_query: str  # set: this worker searches for it alone, not for the question
    follow_mentions: bool  # a bridge question: hop 1 follows the names its passages give to their pages
    record: dict[str, Any]
    index_dir: str
    deadline_at: float
