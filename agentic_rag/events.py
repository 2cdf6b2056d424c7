"""What a run keeps of each node for its trace: one compact event per node execution.

The ``timed`` wrapper calls :func:`node_event` with the node's own update, so any node (today's or
one added later) is recorded the same way, keyed by its name. What an event holds is chosen by the
*state keys* the node wrote, not by which node it is: a node that writes ``paths`` gets its passages
kept and pruned with their scores, one that writes ``decision`` its action and reason, and so on.
Texts are cut to ``TRACE_TEXT_CHARS`` so a results file stays small; the full text of the chunks a
quote comes from is kept apart (:func:`quoted_chunks`) so the quoted span can be shown in place. The LLM
calls a node made are kept whole under ``llm`` (``llm.usage.call_record``, added by ``timed``): what the
model was asked and said is the one text a trace cannot rebuild.
"""

from __future__ import annotations

from typing import Any, Callable

from agentic_rag.budget import llm_calls, tokens_used
from agentic_rag.state import support_of

Summary = Callable[[Any, int], Any]

_PASSAGE_SCORES = ("fused_score", "vector_score", "bm25_score", "path_score", "fine_sim", "question_overlap", "utility")


def clip(text: Any, limit: int) -> str:
    """At most ``limit`` characters, cut at a word boundary where there is one, with an ellipsis: a
    reader sees where text was left out, and no word is cut in half."""
    text = str(text or "")
    if len(text) <= limit:
        return text
    head = text[: max(0, limit - 1)]
    cut = head.rsplit(" ", 1)[0] if " " in head else head
    return cut.rstrip(" ,;:") + "…"


def _passage(p: dict[str, Any], limit: int, *extra: str) -> dict[str, Any]:
    out = {k: p[k] for k in ("n", "chunk_id", "page_name", "page_url", "hop", "anchor_hit", *extra) if k in p}
    out.update({k: p[k] for k in _PASSAGE_SCORES if p.get(k) is not None})
    out["text"] = clip(p.get("text", ""), limit)
    return out


def _paths(paths: list[dict[str, Any]], limit: int) -> list[dict[str, Any]]:
    out = []
    for path in paths or []:
        anchor = path.get("anchor") or {}
        out.append({
            "anchor": anchor.get("text", ""),
            "anchor_type": anchor.get("type", ""),
            "query": path.get("query", ""),
            **{k: path[k] for k in ("round", "path_score", "new_hits_ratio", "candidates", "pruned_count",
                                    "terminated_by") if k in path},
            "kept": [_passage(p, limit) for p in path.get("passages", [])],
            "pruned": [_passage(p, limit, "pruned_by") for p in path.get("pruned_best", [])],
        })
    return out


def _bundle(bundle: dict[str, Any], limit: int) -> dict[str, Any]:
    out = {k: bundle[k] for k in ("context_tokens", "dropped", "path_count", "prune_fallback", "generation_cost")
           if k in bundle}
    out["passages"] = [_passage(p, limit, "anchors_held") for p in bundle.get("passages", [])]
    return out


def _signals(signals: dict[str, Any], limit: int) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in (signals or {}).items():
        if key.startswith("_"):
            continue
        if key == "sentences":
            out[key] = [{"sentence": clip(r.get("sentence"), limit), "n": r.get("n"), "quote": r.get("quote", ""),
                         "mode": r.get("mode"), "supported": r.get("supported")} for r in value]
        elif isinstance(value, (int, float, bool, str)) or value is None:
            out[key] = value
        elif isinstance(value, list):
            out[key] = [clip(v, limit) if isinstance(v, str) else v for v in value[:10]]
    return out


def _anchors(anchors: list[dict[str, Any]], limit: int) -> list[dict[str, Any]]:
    return [{k: a.get(k) for k in ("text", "type", "score")} for a in anchors or []]


def _ambiguity(value: dict[str, Any], limit: int) -> dict[str, Any]:
    out = {k: v for k, v in (value or {}).items() if k != "options"}
    if value and value.get("options"):
        out["options"] = [{"id": o.get("id"), "signature": o.get("signature")} for o in value["options"]]
    return out


def _confidence(value: dict[str, Any], limit: int) -> dict[str, Any]:
    return {**(value or {}), "scores": [round(s, 4) for s in (value or {}).get("scores", [])[:10]]}


def _result(value: dict[str, Any], limit: int) -> dict[str, Any]:
    return {k: (value or {}).get(k) for k in ("status", "reason", "abstention_layer")}


def _as_is(value: Any, limit: int) -> Any:
    return value


# State key -> how an event keeps it. Keys not listed (record, usage, latency_ms, held_ids...) are
# either bulky inputs or accounted for separately (tokens, ms).
SUMMARIES: dict[str, Summary] = {
    "anchors_proposed": _anchors,
    "anchors": _anchors,
    "kind": _as_is,
    "ood": _as_is,
    "paths": _paths,
    "passages": lambda ps, limit: [_passage(p, limit, "rank") for p in ps or []],
    "bundle": _bundle,
    "no_new_hits": _as_is,
    "confidence": _confidence,
    "ambiguity": _ambiguity,
    "draft": lambda d, limit: clip(d, 2 * limit),
    "probe": lambda p, limit: {k: v for k, v in (p or {}).items() if isinstance(v, (int, float, str, bool))},
    "signals": _signals,
    "validation": _as_is,
    "flags": _as_is,
    "extension_flags": _as_is,
    "extension_error": _as_is,
    "decision": lambda d, limit: {k: d.get(k) for k in ("action", "reason", "explanation", "final_check", "p_right")
                                  if d.get(k) is not None},
    "extra_terms": _as_is,
    "hop_query": _as_is,
    "reflected": _as_is,
    "result": _result,
}


def node_event(node: str, state: dict[str, Any], update: dict[str, Any], start: float, ms: float,
               limit: int) -> dict[str, Any]:
    """One node execution: when and how long, the round it ran in, its LLM cost, what it wrote."""
    event: dict[str, Any] = {"node": node, "round": state.get("round", 1), "start": round(start, 4),
                             "ms": round(ms, 3)}
    usage = update.get("usage")
    if usage:
        event.update(tokens=tokens_used(usage), llm_calls=llm_calls(usage))
    for key, value in update.items():
        summary = SUMMARIES.get(key)
        if summary is not None and value is not None:
            event[key] = summary(value, limit)
    return event


def quoted_chunks(state: dict[str, Any], citations: list[dict[str, Any]]) -> dict[str, str]:
    """Full text of every evidence chunk a quote was taken from (a citation, or a draft sentence's
    support), so a trace can show the quoted span inside its chunk."""
    bundle = state.get("bundle") or {}
    by_n = {p.get("n"): p for p in bundle.get("passages", [])}
    by_id = {p.get("chunk_id"): p for p in bundle.get("passages", [])}
    wanted = [c.get("chunk_id") for c in citations]
    wanted += [by_n[n].get("chunk_id") for r in (state.get("signals") or {}).get("sentences", [])
               for n, _ in support_of(r) if n in by_n]
    return {cid: by_id[cid]["text"] for cid in dict.fromkeys(wanted) if cid in by_id}
