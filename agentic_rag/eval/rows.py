"""What a result row says: one judged question of a run, and the predicates every summary reads.

A run writes one row per question (``result_row``) to its results.jsonl; the metrics, the refusal
breakdown, the frontier replay and the benchmark scripts read rows back through these predicates, so
"a refusal" or "an unanswerable question" means the same in all of them.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from agentic_rag.datasets.crag import IDK, INVALID_QUESTION, CragRecord
from agentic_rag.eval.judge import judge

Finite = Annotated[float, Field(allow_inf_nan=False, ge=0)]


class Tokens(BaseModel):
    """A row's token counts, as the budget writes them (budget.token_report)."""

    model_config = ConfigDict(extra="allow")
    total: Annotated[int, Field(ge=0, strict=True)] = 0
    by_stage: dict[str, Annotated[int, Field(ge=0, strict=True)]] = Field(default_factory=dict)
    detail: dict[str, Any] = Field(default_factory=dict)


class ResultRow(BaseModel):
    """One result row as every reader of a run folder relies on it (trace, compare, resume, the metrics):
    a line of results.jsonl that is valid JSON but not this (an id that is no string, tokens that are no
    counts, a judgement that is no verdict, a time that is NaN) is damage, set aside like a broken line."""

    model_config = ConfigDict(extra="allow")
    id: Annotated[str, Field(min_length=1, strict=True)]
    query: str = ""
    prediction: str | None = ""
    status: str = "ok"
    reason: str = ""
    judgement: Literal["accurate", "incorrect", "missing", "unjudged"] | None = None  # where present, a verdict
    score: Annotated[float, Field(allow_inf_nan=False)] = 0.0
    em: Annotated[float, Field(allow_inf_nan=False)] | None = None
    f1: Annotated[float, Field(allow_inf_nan=False)] | None = None
    tokens: Tokens = Field(default_factory=Tokens)
    llm_calls: Annotated[int, Field(ge=0)] = 0
    latency_ms: Finite = 0.0
    cpu_ms: Finite = 0.0
    llm_ms: Finite = 0.0
    latency_by_node_ms: dict[str, Finite] = Field(default_factory=dict)
    cpu_by_node_ms: dict[str, Finite] = Field(default_factory=dict)
    llm_by_node_ms: dict[str, Finite] = Field(default_factory=dict)
    signals: dict[str, Any] = Field(default_factory=dict)
    missing: list[Any] = Field(default_factory=list)
    citations: list[dict[str, Any]] = Field(default_factory=list)
    chain: list[dict[str, Any]] = Field(default_factory=list)
    events: list[dict[str, Any]] = Field(default_factory=list)


def valid_row(row: Any) -> bool:
    """Whether ``row`` (parsed JSON) is a result row every reader can use."""
    try:
        ResultRow.model_validate(row)
    except ValidationError:
        return False
    return True


def result_row(record: CragRecord, result, judgement) -> dict[str, Any]:
    row = {
        "id": record.interaction_id,
        "query": record.query,
        "gold": record.answer,
        "alternatives": record.alternative_answers,
        "domain": record.domain,
        "question_type": record.question_type,
        "static_or_dynamic": record.static_or_dynamic,
        "prediction": result.answer,
        "draft": result.draft,
        "short_answer": result.short_answer,
        "status": result.status,
        "reason": result.reason,
        "abstention_layer": result.abstention_layer,
        "tokens_saved": result.tokens_saved,
        "explanation": result.explanation,
        "p_right": result.p_right,  # the fitted decision's, where it decided (a stated risk is a cut on it)
        "missing": list(result.missing),  # what a refusal says would be needed (entities, periods, units)
        "citations": [c.model_dump() for c in result.citations],
        "chain": list(result.chain),  # a multi-hop answer's hops, each quoted or missing (baug/chain.py)
        "judgement": judgement.label,
        "judge_rule": judgement.rule,
        "score": judgement.score,
        "em": judgement.em,
        "f1": judgement.f1,
        "tokens": result.tokens,
        "llm_calls": result.llm_calls,
        "latency_ms": result.latency_ms,
        "latency_by_node_ms": result.latency_by_node_ms,
        "cpu_ms": result.cpu_ms,
        "cpu_by_node_ms": result.cpu_by_node_ms,
        "llm_ms": result.llm_ms,
        "llm_by_node_ms": result.llm_by_node_ms,
        "signals": result.signals,
        "events": result.events,  # the trace: one compact entry per node run (agentic_rag/events.py)
        "quoted_chunks": result.quoted_chunks,
    }
    if getattr(record, "world_answer", None):
        row.update(world_answer=record.world_answer, world_alternatives=list(getattr(record, "world_alternatives", [])))
        row["matches_world_answer"] = matches_world_answer(row)
    return row


def matches_world_answer(row: dict[str, Any]) -> bool:
    """An answer to a question labelled unanswerable that is in fact the real answer (RGB's negative
    snippets sometimes state it in other words): still scored against the label, counted apart."""
    if row["status"] != "ok":
        return False
    j = judge(row["prediction"], row["short_answer"], row["world_answer"], row.get("world_alternatives") or [], False,
              question=row.get("query", ""))
    return j.label == "accurate"


def family_of(question_id: str) -> str:
    """The question family a row's id names (its prefix: ``squad2-...``, ``nq-...``, ``hotpotqa-...``,
    ``rgb-...``): what a decision is validated on when it was fitted on the others."""
    head = str(question_id).split("-", 1)[0].lower()
    return {"squad2": "squad"}.get(head, head)


def is_refusal(row: dict[str, Any]) -> bool:
    """A refusal by the system (any non-ok status) or an answer that only says it does not know."""
    return row["status"] != "ok" or row["judge_rule"] == "abstained"


def stage_calls(row: dict[str, Any], stage: str) -> int:
    """LLM calls a result row booked under ``stage`` (0 when it carries no per-stage detail)."""
    return int((((row.get("tokens") or {}).get("detail") or {}).get(stage) or {}).get("calls", 0))


# what a data set writes where it has no answer: a pandas NaN or null written out as text, a dash
UNUSABLE_GOLD = frozenset({"", "nan", "none", "null", "n/a", "na", "-", "?"})


def usable_gold(gold: Any) -> bool:
    """Whether a gold answer can score a prediction. The bundled CRAG example has gold "nan" (a missing
    value written as text): scored, every answer to it is wrong and every refusal a false refusal."""
    return str(gold if gold is not None else "").strip().lower() not in UNUSABLE_GOLD


def split_judged(rows: list[dict[str, Any]]) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """(rows a judge graded, rows it left unjudged: an LLM judge that did not answer). An unjudged answer
    is neither right nor wrong: it is counted apart, never scored."""
    return [r for r in rows if r.get("judgement") != "unjudged"], [r for r in rows if r.get("judgement") == "unjudged"]


def split_usable(rows: list[dict[str, Any]]) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """(rows a metric may score, rows whose gold cannot score them: reported and left out)."""
    return [r for r in rows if usable_gold(r.get("gold"))], [r for r in rows if not usable_gold(r.get("gold"))]


def _gold(row: dict[str, Any]) -> str:
    return str(row.get("gold", "")).strip().lower()


def gold_is_idk(row: dict[str, Any]) -> bool:
    """Whether a result row's question has no answer in its pages (its gold is "i don't know")."""
    return _gold(row) == IDK


def gold_groups(rows: list[dict[str, Any]]) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """(answerable, unanswerable) result rows by their gold; false-premise questions and questions
    whose gold is unusable (``usable_gold``) are in neither."""
    rows = split_usable(rows)[0]
    return ([r for r in rows if _gold(r) not in (IDK, INVALID_QUESTION)], [r for r in rows if gold_is_idk(r)])


def reextracted_short_answer(row: dict[str, Any]) -> str:
    """The row's short answer by the current extractor (a rejudged run's EM/F1 read the span it gives
    today), with the question kind the run decided (its anchors event) when the row has it."""
    if row["status"] != "ok":
        return row["short_answer"]
    from agentic_rag.anchors.kind import question_kind
    from agentic_rag.anchors.predictor import propose_anchors
    from agentic_rag.generator.short_answer import short_answer

    kind = next((e["kind"] for e in row.get("events") or () if e.get("node") == "anchors" and e.get("kind")), None)
    return short_answer(row["query"], row["prediction"], kind or question_kind(row["query"], propose_anchors(row["query"])))
