"""A run folder read for inspection: each question's timeline, checks against thresholds and evidence.

Both renderers (text and HTML) draw the same view built here, so what a node did is described once.
A node event becomes a one-line summary and a few detail blocks (passages with scores, signals
against their thresholds, key/value facts). Runs written before per-node events were recorded still
load: their timeline comes from the BAUG telemetry rows, and what is missing is said, not guessed.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from agentic_rag.baug.chain import hop_line
from agentic_rag.budget import tokens_per_pass
from agentic_rag.checks import CHECK_BY_SIGNAL, DRAFT_CHECKS, STOP, Check, gate_readings, reading
from agentic_rag.datasets.crag import pick, position_hint
from agentic_rag.errors import UserError
from agentic_rag.eval.results import read_object, read_results
from agentic_rag.events import clip
from agentic_rag.nodes import EXTENSION_ROLE, ROLE, Node
from agentic_rag.state import citation_status, support_of
from agentic_rag.telemetry import read_rows
from agentic_rag.trace.draw import ROLE_COLOURS

# Signal -> the setting it must reach (>=) in baug/policy.decide for the answer to stand (agentic_rag/checks.py).
SIGNAL_THRESHOLDS = {c.signal: c.setting for c in DRAFT_CHECKS}
# Worker path fields -> the setting they are held to in workers/worker.py.
PATH_THRESHOLDS = {"path_score": "PATH_MIN_SCORE", "new_hits_ratio": "NEW_HITS_EPS"}
OUTCOMES = {"accurate": "right", "incorrect": "wrong", "missing": "missing"}


class TraceError(UserError, ValueError):
    """A run folder, question id or step that cannot be shown."""


@dataclass
class Run:
    path: Path
    rows: list[dict[str, Any]]
    config: dict[str, Any] = field(default_factory=dict)
    summary: dict[str, Any] = field(default_factory=dict)
    telemetry: dict[str, list[dict[str, Any]]] = field(default_factory=dict)

    @property
    def system(self) -> str:
        return self.config.get("system") or self.summary.get("system") or ""

    @property
    def settings(self) -> dict[str, Any]:
        """The run's settings; a run without config.json is read with today's defaults."""
        if self.config.get("settings"):
            return self.config["settings"]
        from agentic_rag.configuration import Settings

        return Settings.load().public_dump()

    def row(self, qid: str) -> dict[str, Any]:
        """A question by its id, its 0-based row as ``@N``, or a prefix of its id that no other id shares."""
        found, _ = pick(self.rows, qid, lambda row: row["id"])
        if found is not None:
            return found
        matches = [row for row in self.rows if qid and row["id"].startswith(qid)]
        if len(matches) == 1:
            return matches[0]
        hint = position_hint(qid, len(self.rows))
        if matches:
            raise TraceError(f"{qid!r} is the start of {len(matches)} ids in {self.path}: "
                             f"{', '.join(r['id'] for r in matches[:8])}{', ...' if len(matches) > 8 else ''}{hint}")
        raise TraceError(f"no question {qid!r} in {self.path} (ids: {', '.join(r['id'] for r in self.rows[:5])}"
                         f"{', ...' if len(self.rows) > 5 else ''}){hint}")


def load_run(path: str | Path) -> Run:
    path = Path(path)
    if not path.is_dir():
        raise TraceError(f"{path} is not a run folder (make one with `agentic-rag eval --out {path}`)")
    rows = read_results(path / "results.jsonl")
    if not rows:
        raise TraceError(f"{path} has no results.jsonl rows; is it a run folder written by `agentic-rag eval`?")
    telemetry: dict[str, list[dict[str, Any]]] = {}
    try:
        for t in read_rows(path / "telemetry.jsonl"):
            telemetry.setdefault(t.get("question_id", ""), []).append(t)
    except json.JSONDecodeError:
        pass  # a telemetry line cut by a kill: the results still show
    return Run(path, rows, read_object(path / "config.json"), read_object(path / "summary.json"), telemetry)


# -- checks ----------------------------------------------------------------------------------------
# a check row's status: held to its threshold ("pass", "fail"); below it on an answer the policy let
# through ("advisory": it did not decide the outcome); its switch off ("off"); or not comparable ("-")
PASS, FAIL, ADVISORY, OFF, NONE = "pass", "fail", "advisory", "off", "-"


def _check(name: str, value: Any, setting: str, settings: dict[str, Any], switch: str = "", full: float = 1.0) -> dict[str, Any]:
    threshold = settings.get(setting)
    if threshold is None or not isinstance(value, (int, float)):
        status = NONE
    elif switch and settings.get(switch) is False:
        status = OFF
    else:
        status = PASS if value >= threshold else FAIL
    return {"signal": name, "value": value, "setting": setting, "threshold": threshold, "full": full,
            "passed": {PASS: True, FAIL: False}.get(status), "status": status}


def _registered(check: Check, value: Any, settings: dict[str, Any], label: str = "") -> dict[str, Any]:
    return _check(label or check.signal, value, check.setting, settings, check.switch, check.full)


def advisory(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The same rows for an answer that was shown: a check below its threshold did not stop it."""
    return [{**r, "passed": None, "status": ADVISORY} if r["status"] == FAIL else r for r in rows]


def signal_checks(signals: dict[str, Any], settings: dict[str, Any], answered: bool = False) -> list[dict[str, Any]]:
    """Each draft check (agentic_rag/checks.py) whose reading was taken, against its threshold (``passed`` None
    when not comparable, switched off, or only advisory because the answer was shown)."""
    rows = [_registered(c, reading(signals, c), settings) for c in DRAFT_CHECKS if reading(signals, c) is not None]
    return advisory(rows) if answered else rows


def gate_checks(confidence: dict[str, Any], settings: dict[str, Any]) -> list[dict[str, Any]]:
    scores = confidence.get("scores") or []
    if not scores:
        return []
    labels = {"top_relevance": "top relevance (0-3)", "top_ratio": "top-1 / top-2 ratio",
              "top_score": f"top {settings.get('GATE_SCORE_SOURCE', '')} score".replace("  ", " ")}
    return [_registered(CHECK_BY_SIGNAL[signal], round(value, 4) if signal == "top_ratio" else value, settings, labels[signal])
            for signal, value in gate_readings(scores, confidence.get("tier", "")).items() if value is not None]


# -- one event as a summary line and detail blocks ------------------------------------------------
def _fmt(value: Any) -> str:
    if isinstance(value, float):
        return f"{value:.3f}".rstrip("0").rstrip(".") if abs(value) < 1000 else f"{value:.0f}"
    return str(value)


def _passage_rows(passages: list[dict[str, Any]], *cols: str) -> list[dict[str, Any]]:
    return [{"chunk_id": p.get("chunk_id", ""), "page": p.get("page_name", ""),
             **{c: p.get(c) for c in cols if p.get(c) is not None}, "text": p.get("text", "")} for p in passages]


def describe(event: dict[str, Any], settings: dict[str, Any], answered: bool = False) -> tuple[str, list[dict[str, Any]]]:
    """A node event as one line (what it decided or found) and detail blocks, from the keys it wrote.
    ``answered``: the decision these readings led to showed the answer, so a check below its threshold
    is advisory (it did not stop the answer), not failed."""
    parts: list[str] = []
    blocks: list[dict[str, Any]] = []
    if event.get("ood"):
        parts.append(f"out of domain: {event['ood']}")
    if "anchors" in event:
        sel = ", ".join(f"{a['text']} ({a.get('type')})" for a in event["anchors"]) or "none"
        parts.append(f"anchors {sel}" + (f"; kind {event['kind']}" if event.get("kind") else ""))
        if event.get("anchors_proposed"):
            blocks.append({"type": "table", "title": "anchors proposed",
                           "rows": [{"anchor": a["text"], "type": a.get("type"), "score": a.get("score"),
                                     "selected": any(a["text"] == s["text"] for s in event["anchors"])}
                                    for a in event["anchors_proposed"]]})
    for path in event.get("paths", []):
        label = f'anchor "{path["anchor"]}"' if path.get("anchor") else "question"
        parts.append(f"{label}: kept {len(path.get('kept', []))}, pruned {path.get('pruned_count', 0)} of "
                     f"{path.get('candidates', '?')} candidates, path score {_fmt(path.get('path_score'))}, "
                     f"{path.get('terminated_by', '')}")
        checks = [_check(k, path[k], s, settings) for k, s in PATH_THRESHOLDS.items() if k in path]
        if path.get("round", 1) == 1:
            checks = [c for c in checks if c["signal"] != "new_hits_ratio"]  # nothing held yet to be new against
        blocks.append({"type": "checks", "title": f"{label} (round {path.get('round', 1)})", "rows": checks})
        blocks.append({"type": "passages", "title": f"{label}: kept", "rows": _passage_rows(
            path.get("kept", []), "hop", "path_score", "fine_sim", "fused_score", "anchor_hit")})
        if path.get("pruned"):
            blocks.append({"type": "passages", "title": f"{label}: best pruned", "rows": _passage_rows(
                path["pruned"], "pruned_by", "path_score", "fine_sim", "question_overlap")})
    if "passages" in event:
        ps = event["passages"]
        parts.append(f"retrieved {len(ps)} passages" + (f", top fused {_fmt(ps[0].get('fused_score'))}" if ps else ""))
        blocks.append({"type": "passages", "title": "retrieved", "rows": _passage_rows(
            ps, "rank", "fused_score", "vector_score", "bm25_score")})
    if "bundle" in event:
        b = event["bundle"]
        parts.append(f"packed {len(b.get('passages', []))} passages ({b.get('context_tokens', '?')} tokens)"
                     + (f", dropped {b['dropped']}" if b.get("dropped") else "")
                     + (", from pruned passages (fallback)" if b.get("prune_fallback") else ""))
        blocks.append({"type": "passages", "title": "evidence bundle", "rows": _passage_rows(
            b.get("passages", []), "n", "utility", "fused_score")})
    if event.get("ambiguity"):
        a = event["ambiguity"]
        parts.append(f"ambiguity {a.get('status')} ({a.get('rule')})")
        if a.get("options"):
            blocks.append({"type": "table", "title": "options", "rows": a["options"]})
    if "confidence" in event:
        c = event["confidence"]
        parts.append("confidence gate " + ("passed" if c.get("passed") else f"refused: {c.get('message') or c.get('reason')}")
                     + (f" ({c.get('tier')} tier)" if c.get("tier") else ""))
        blocks.append({"type": "checks", "title": "confidence gate", "rows": gate_checks(c, settings)})
    if event.get("draft"):
        parts.append(f'draft "{clip(event["draft"], 80)}"')
        blocks.append({"type": "text", "title": "draft", "text": event["draft"]})
    probe = event.get("probe") or {}
    if probe.get("status") == "scored":
        how = (f"read by the packaged reader {probe['reader']} in {probe['ms']:.0f} ms" if probe.get("how") == "local"
               else "from the generation call's prefill")
        parts.append(f"answerability {_fmt(probe.get('answerability'))} ({how})")
    elif probe.get("status") == "pending":
        parts.append(f"answerability: read next by the packaged reader {probe.get('reader')}")
    if "signals" in event:
        sig = event["signals"]
        checks = signal_checks(sig, settings, answered)
        below = [f"{c['signal']} {_fmt(c['value'])} < {_fmt(c['threshold'])}" for c in checks if c["passed"] is False]
        advised = [f"{c['signal']} {_fmt(c['value'])} < {_fmt(c['threshold'])}" for c in checks if c["status"] == ADVISORY]
        if checks and sig.get("sentences"):  # without a draft the readings are all zero and say nothing
            parts.append(f"signals below threshold: {', '.join(below)}" if below else
                         f"signals advisory (the answer stood): {', '.join(advised)}" if advised else
                         f"signals pass {len(checks)} checks")
        blocks.append({"type": "checks", "title": "signals", "rows": checks})
        sents = [s for s in sig.get("sentences", []) if s.get("sentence")]
        if sents:
            blocks.append({"type": "table", "title": "draft sentences and their support", "rows": [
                {"sentence": s["sentence"], "source": s.get("n"), "mode": s.get("mode"), "supported": s.get("supported"),
                 "quote": s.get("quote", "")} for s in sents]})
        extra = {k: sig[k] for k in ("missing_anchors", "unsupported_claims", "question_terms_unmatched") if sig.get(k)}
        if extra:
            blocks.append({"type": "kv", "title": "what is missing", "items": extra})
    if event.get("validation") and not event["validation"].get("ok", True):
        v = event["validation"]
        parts.append(f"validator {v.get('name')} {'advisory' if answered else 'failed'}"
                     + (f": missing {', '.join(v.get('missing') or [])}" if v.get("missing") else ""))
    for name, req in (event.get("extension_flags") or {}).items():
        parts.append(f"{name} asks {req['action']} ({req['code']}): {req['message']}" if req else f"{name}: no request")
    if "decision" in event:
        d = event["decision"]
        parts.append(f"-> {d.get('action')} ({d.get('reason')})" + (", pending the final check" if d.get("final_check") else ""))
    if event.get("reflected"):
        parts.append("revised the draft")
    if "result" in event:
        r = event["result"]
        parts.append(f"result {r.get('status')} ({r.get('reason')})")
    return "; ".join(parts) or "no change", blocks


# -- one question --------------------------------------------------------------------------------
def _telemetry_events(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """An old run's BAUG rounds as events (no per-node detail was recorded then)."""
    out = []
    for t in rows:
        signals = {k: t.get(k) for k in SIGNAL_THRESHOLDS if t.get(k) is not None}
        out.append({"node": str(Node.DECIDE), "round": t.get("round", 1), "signals": signals, "tokens": None,
                    "decision": {"action": t.get("action"), "reason": t.get("reason")}, "from": "telemetry",
                    "anchors_selected": t.get("anchors_selected"), "confidence": t.get("confidence_gate") or None})
    return [{k: v for k, v in e.items() if v is not None} for e in out]


def rounds(row: dict[str, Any], events: list[dict[str, Any]], settings: dict[str, Any]) -> list[dict[str, Any]]:
    """The signals behind each decision, per round: BAUG's latest readings, or a baseline's measured ones."""
    out, signals = [], None
    for e in events:
        signals = e.get("signals", signals)
        if "decision" in e and signals is not None and not e["decision"].get("final_check"):
            out.append({"label": f"round {e.get('round', 1)}: {e['decision'].get('reason')}",
                        "checks": signal_checks(signals, settings, answered=e["decision"].get("action") == STOP)})
    if not out and row.get("signals"):
        out = [{"label": "measured (not acted on)", "checks": signal_checks(row["signals"], settings, answered=True)}]
    return [r for r in out if r["checks"]]


def _spans(text: str, quotes: list[str]) -> list[dict[str, Any]]:
    """The chunk text cut into plain and quoted segments (first occurrence of each quote, case-insensitive)."""
    low = text.lower()
    marks: list[tuple[int, int]] = []
    for q in quotes:
        q = q.strip().strip('"').rstrip(".")
        i = low.find(q.lower()) if len(q) >= 8 else -1
        if i >= 0:
            marks.append((i, i + len(q)))
    out, pos = [], 0
    for a, b in sorted(marks):
        if b <= pos:
            continue
        a = max(a, pos)
        if a > pos:
            out.append({"text": text[pos:a], "quoted": False})
        out.append({"text": text[a:b], "quoted": True})
        pos = b
    if pos < len(text):
        out.append({"text": text[pos:], "quoted": False})
    return out


def evidence(row: dict[str, Any], events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The last evidence bundle, each passage with its quoted spans marked; an old row: its citations."""
    bundles = [e["bundle"] for e in events if "bundle" in e]
    full = row.get("quoted_chunks") or {}
    sentences = next((e["signals"].get("sentences", []) for e in reversed(events) if "signals" in e), None)
    if sentences is None:
        sentences = (row.get("signals") or {}).get("sentences", [])
    quotes_by_n: dict[Any, list[str]] = {}
    for s in sentences:
        if s.get("supported"):
            for n, quote in support_of(s):
                quotes_by_n.setdefault(n, []).append(quote)
    quotes_by_chunk: dict[str, list[str]] = {}
    for c in row.get("citations") or []:
        quotes_by_chunk.setdefault(c["chunk_id"], []).append(c.get("quote", ""))
    # an old row has no bundle event: its cited chunks are the evidence shown
    passages = bundles[-1].get("passages", []) if bundles else list(
        {c["chunk_id"]: {**c, "text": c.get("quote", "")} for c in row.get("citations") or []}.values())
    out = []
    for p in passages:
        qs = quotes_by_chunk.get(p["chunk_id"], []) + quotes_by_n.get(p.get("n"), [])
        text = full.get(p["chunk_id"], p.get("text", ""))
        out.append({"n": p.get("n"), "chunk_id": p["chunk_id"], "page": p.get("page_name", ""), "url": p.get("page_url", ""),
                    "segments": _spans(text, qs), "cited": p["chunk_id"] in quotes_by_chunk,
                    "truncated": p["chunk_id"] not in full})
    return out


def verdict(events: list[dict[str, Any]], settings: dict[str, Any]) -> dict[str, Any]:
    """Where the outcome was decided and which checks then stood below thresholds that apply. On an
    answer that was shown, those checks did not decide it: they are listed as advisory, not failed."""
    decisions = [e for e in events if e.get("decision")]
    d = decisions[-1] if decisions else None
    answered = d is not None and d["decision"].get("action") == STOP
    last_signals = next((e["signals"] for e in reversed(events) if e.get("signals")), {})
    last_gate = next((e["confidence"] for e in reversed(events) if e.get("confidence")), {})
    rows = signal_checks(last_signals, settings) + gate_checks(last_gate, settings)
    below = [c for c in rows if c["status"] == FAIL]
    validation = next((e["validation"] for e in reversed(events) if e.get("validation")), {})
    invalid = "" if validation.get("ok", True) else (
        f"type validator {validation.get('name')}"
        + (f" (missing {', '.join(validation['missing'])})" if validation.get("missing") else ""))
    out = {"failed": [] if answered else below, "invalid": "" if answered else invalid,
           "advisory": advisory(below) if answered else [], "advisory_invalid": invalid if answered else ""}
    if d is None:
        return {"node": "", "round": None, "action": "", "reason": "", **out}
    return {"node": d["node"], "round": d.get("round", 1), "action": d["decision"].get("action", ""),
            "reason": d["decision"].get("reason", ""), **out}


def _led_to_an_answer(events: list[dict[str, Any]], i: int) -> bool:
    """Whether the first decision that stands at or after event ``i`` showed the answer (STOP)."""
    following = (e["decision"] for e in events[i:] if e.get("decision") and not e["decision"].get("final_check"))
    return (next(following, None) or {}).get("action") == STOP


def llm_calls(events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Every LLM call of the question in order, with the timeline step (``i``) and node that made it."""
    return [{"i": i, "node": e["node"], "round": e.get("round", 1), **call}
            for i, e in enumerate(events, start=1) for call in e.get("llm") or []]


def path_taken(events: list[dict[str, Any]]) -> dict[str, Any]:
    """The way the question went through the graph: each node with the rounds it ran in, and each
    edge taken with the rounds it was taken in. Parallel runs of one node (the workers) are one step."""
    steps: list[dict[str, Any]] = []
    for e in events:
        if steps and steps[-1]["node"] == e["node"] and steps[-1]["round"] == e.get("round", 1):
            steps[-1]["count"] += 1
            continue
        steps.append({"node": e["node"], "round": e.get("round", 1), "count": 1})
    nodes: dict[str, list[int]] = {}
    edges: dict[tuple[str, str], list[int]] = {}
    names = ["__start__", *(s["node"] for s in steps), "__end__"] if steps else []
    rounds = [1, *(s["round"] for s in steps), steps[-1]["round"] if steps else 1]
    for s in steps:
        if s["round"] not in nodes.setdefault(s["node"], []):
            nodes[s["node"]].append(s["round"])
    for a, b, r in zip(names, names[1:], rounds[1:]):
        edges.setdefault((a, b), [])
        if r not in edges[(a, b)]:
            edges[(a, b)].append(r)
    return {"steps": steps, "nodes": nodes,
            "edges": [{"source": a, "target": b, "rounds": r} for (a, b), r in edges.items()]}


def _ms(value: Any) -> Any:
    return round(value, 1) if isinstance(value, (int, float)) else value


def question_view(run: Run, row: dict[str, Any]) -> dict[str, Any]:
    """Everything shown about one question."""
    settings = run.settings
    events = sorted(row.get("events") or [], key=lambda e: e.get("start", 0.0))
    note = ""
    if not events:
        events = _telemetry_events(run.telemetry.get(row["id"], []))
        note = ("This run was recorded before per-node events: only the BAUG rounds from telemetry.jsonl are shown."
                if events else "This run was recorded before per-node events and has no telemetry for this question.")
    t0 = events[0].get("start", 0.0) if events else 0.0
    timeline = []
    for i, e in enumerate(events, start=1):
        summary, blocks = describe(e, settings, answered=_led_to_an_answer(events, i - 1))
        timeline.append({
            "i": i, "node": e["node"], "role": ROLE.get(e["node"], EXTENSION_ROLE), "round": e.get("round", 1),
            "offset_ms": round((e["start"] - t0) * 1000.0, 1) if "start" in e else None,
            "ms": _ms(e.get("ms", (row.get("latency_by_node_ms") or {}).get(e["node"]))),
            "tokens": e.get("tokens", 0), "llm_calls": e.get("llm_calls", 0),
            "summary": summary, "blocks": blocks,
        })
    tokens = row.get("tokens") or {}
    return {
        "id": row["id"], "query": row.get("query", ""), "gold": row.get("gold", ""),
        "prediction": row.get("prediction", ""), "status": row.get("status", ""), "reason": row.get("reason", ""),
        "judgement": row.get("judgement", ""), "outcome": OUTCOMES.get(row.get("judgement", ""), row.get("judgement", "")),
        "explanation": row.get("explanation", ""), "missing": row.get("missing", []),
        "p_right": row.get("p_right"), "promise": _promise(run),
        "tokens": tokens.get("total", 0), "tokens_by_stage": {k: v for k, v in (tokens.get("by_stage") or {}).items() if v},
        "llm_calls": row.get("llm_calls", 0), "latency_ms": row.get("latency_ms", 0.0),
        "tokens_per_pass": tokens_per_pass(tokens.get("detail")),
        "latency_by_node_ms": {k: _ms(v) for k, v in (row.get("latency_by_node_ms") or {}).items()},
        "citations": [{**c, "status": citation_status(c)} for c in row.get("citations") or []],
        "chain": [{"found": h.get("found", False), "line": hop_line(h)} for h in row.get("chain") or []], "timeline": timeline,
        "rounds": rounds(row, events, settings),
        "verdict": verdict(events, settings),
        "evidence": evidence(row, events), "note": note,
        "llm": llm_calls(events), "path": path_taken(events),
    }


def _promise(run: Run) -> str:
    """The stated risk the run answered under, in words ("" without one)."""
    from agentic_rag.eval.risk_control import promise_line, promise_of

    promise = promise_of(run.config)
    return promise_line(promise) if promise else ""


def run_header(run: Run) -> dict[str, Any]:
    """What names a run on a page: its folder, system, dataset and headline figures."""
    keys = ("n", "accuracy", "hallucination", "missing", "score", "refusal_rate_unanswerable", "false_refusal_rate",
            "tokens_per_q", "latency_p50_ms")
    return {"name": run.path.name, "system": run.system, "dataset": run.config.get("dataset", ""),
            "summary": {k: run.summary[k] for k in keys if run.summary.get(k) is not None}}


def run_view(run: Run, graph=None) -> dict[str, Any]:
    """The whole run as the page shows it; with the compiled ``graph`` the run used, its drawing."""
    return {
        **run_header(run),
        "thresholds": {s: run.settings.get(s) for s in
                       [*SIGNAL_THRESHOLDS.values(), *PATH_THRESHOLDS.values(), "RETRIEVAL_MIN_SCORE", "RETRIEVAL_MIN_RATIO"]},
        "questions": [question_view(run, row) for row in run.rows],
        "graph": graph_view(graph) if graph is not None else None, "colours": ROLE_COLOURS,
    }


def graph_view(graph) -> dict[str, Any]:
    """The graph's nodes by role, its labelled edges and where each is drawn (trace/draw.py)."""
    from agentic_rag.trace.draw import diagram, layout

    d = diagram(graph)
    return {**d.to_dict(), "layout": layout(d)}
