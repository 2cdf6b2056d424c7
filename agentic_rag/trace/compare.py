"""Two runs of the same questions side by side (`agentic-rag compare A B --html OUT`): the questions
whose judgement or decision flipped, each with both runs' views, so the two timelines can be read
next to each other. Questions are paired as `eval.compare` pairs them; the first run is the reference."""

from __future__ import annotations

from typing import Any

from agentic_rag.eval.compare import paired_ids
from agentic_rag.trace.draw import ROLE_COLOURS
from agentic_rag.trace.run import Run, graph_view, question_view, run_header

# A question flipped when its judgement or the decision (answer or refuse) differs; a reason code
# alone differs between any two systems (a baseline's is always STOP_SINGLE_PASS) and is only context.
FLIP_FIELDS = ("judgement", "status")
CONTEXT_FIELDS = ("reason",)


def flips(a: dict[str, Any], b: dict[str, Any]) -> list[str]:
    """What changed between two rows of one question, in words ("judgement accurate -> missing");
    empty when neither the judgement nor the decision changed."""
    if all(a.get(k) == b.get(k) for k in FLIP_FIELDS):
        return []
    return [f"{k} {a.get(k) or '-'} -> {b.get(k) or '-'}" for k in (*FLIP_FIELDS, *CONTEXT_FIELDS) if a.get(k) != b.get(k)]


def compare_view(run_a: Run, run_b: Run, graph_a=None, graph_b=None) -> dict[str, Any]:
    """The flipped questions with both runs' views; with each run's compiled graph, each side's path on it."""
    by_id = {row["id"]: row for row in run_b.rows}
    pairs = set(paired_ids(run_a.rows, run_b.rows))
    common = [row for row in run_a.rows if row["id"] in pairs]
    flipped = []
    for row in common:
        changed = flips(row, by_id[row["id"]])
        if changed:
            a, b = question_view(run_a, row), question_view(run_b, by_id[row["id"]])
            flipped.append({"id": row["id"], "query": row.get("query", ""), "flips": changed,
                            "status": b["status"], "outcome": b["outcome"], "reason": b["reason"], "a": a, "b": b})
    side = [run_header(r) for r in (run_a, run_b)]
    return {"name": f"{side[0]['name']} vs {side[1]['name']}", "system": f"{side[0]['system']} vs {side[1]['system']}",
            "compare": {"a": side[0], "b": side[1], "common": len(common),
                        "graphs": {k: graph_view(g) if g is not None else None for k, g in (("a", graph_a), ("b", graph_b))},
                        "only_a": len(run_a.rows) - len(common), "only_b": len(run_b.rows) - len(common)},
            "summary": {}, "questions": flipped, "graph": None, "colours": ROLE_COLOURS}
