"""Which check refused what: per reason code, refusals of answerable and of unanswerable questions.

A run's false refusal rate says how often answerable questions were refused, not which check did
it. Counted per reason code, a check that refuses mostly answerable questions shows up as one to
loosen or fix; one that refuses mostly unanswerable questions earns its keep. An answerable question
refused after a wrong draft is no loss either (the draft would have been a hallucination), so the
withheld drafts are judged too. Read it on dev splits only: choosing which check to change from a
test split's table would tune on the test.
"""

from __future__ import annotations

from typing import Any

from agentic_rag.baug.fitted import FEATURE_REASONS
from agentic_rag.eval.judge import judge
from agentic_rag.eval.markdown import markdown_table
from agentic_rag.eval.rows import gold_groups, is_refusal

# a refusal written into an answer ("I don't know" with status ok): no check refused it, the model did
ANSWERED_IDK = "ANSWERED_IDK"


def refusal_reason(row: dict[str, Any]) -> str:
    """The reason code a refused row is booked under."""
    if row["status"] == "ok":
        return ANSWERED_IDK
    return row.get("reason") or "UNKNOWN"


def withheld_right_answer(row: dict[str, Any]) -> bool | None:
    """Whether a refused row's withheld draft would have been judged accurate: what the refusal cost
    (a wrong draft refused is a hallucination avoided). None when no draft was written (refused
    before generation)."""
    draft = str(row.get("draft") or "").strip()
    if not draft:
        return None
    return judge(draft, draft, str(row.get("gold", "")), list(row.get("alternatives") or []), refused=False,
                 question=str(row.get("query", ""))).label == "accurate"


def draft_right(row: dict[str, Any]) -> bool:
    """Whether a row's last draft is right as the judge reads it: the shown answer's judgement, or for a
    refusal the withheld draft judged as if it had been shown (none written: not right)."""
    return row.get("judgement") == "accurate" if not is_refusal(row) else bool(withheld_right_answer(row))


def only_stop_words(piece: str) -> bool:
    """A `missing` piece made of stop words alone (a multi-word name may hold one: "Bank of America")."""
    from agentic_rag.anchors.ner import STOP_WORDS

    words = [w.strip(".,;:!?\"'()").lower() for w in piece.split()]
    return all(not w or w in STOP_WORDS for w in words)


def missing_report(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """What a run's refusals name as missing: how many refusals name pieces, how many pieces, and any made
    of stop words alone (the target: none; filler such as "other" or "between" is no missing piece)."""
    refused = [r for r in rows if is_refusal(r)]
    pieces = [(r["id"], p) for r in refused for p in r.get("missing") or []]
    return {"refusals": len(refused), "refusals_naming_pieces": sum(bool(r.get("missing")) for r in refused),
            "pieces": len(pieces), "stop_words_only": [{"id": i, "piece": p} for i, p in pieces if only_stop_words(p)]}


def refusals_by_reason(rows: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """Per reason code: refused answerable, refused unanswerable (and false-premise, in neither group),
    the answerable:unanswerable ratio (None with no unanswerable refused), and the share of all
    answerable questions the code refused (its part of the false refusal rate). Most refusals first."""
    answerable, unanswerable = gold_groups(rows)
    ans_ids, unans_ids = {id(r) for r in answerable}, {id(r) for r in unanswerable}
    out: dict[str, dict[str, Any]] = {}
    for r in rows:
        if not is_refusal(r):
            continue
        c = out.setdefault(refusal_reason(r), {"refused": 0, "refused_answerable": 0, "refused_unanswerable": 0,
                                               "refused_false_premise": 0, "withheld_right": 0, "withheld_wrong": 0})
        c["refused"] += 1
        key = ("refused_answerable" if id(r) in ans_ids else
               "refused_unanswerable" if id(r) in unans_ids else "refused_false_premise")
        c[key] += 1
        if id(r) in ans_ids and (right := withheld_right_answer(r)) is not None:
            c["withheld_right" if right else "withheld_wrong"] += 1
    for c in out.values():
        a, u = c["refused_answerable"], c["refused_unanswerable"]
        c["answerable_per_unanswerable"] = round(a / u, 3) if u else None
        c["share_of_answerable"] = round(a / len(answerable), 4) if answerable else None
    return dict(sorted(out.items(), key=lambda kv: (-kv[1]["refused"], kv[0])))


def reader_refusals(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """The refusals the answerability reader made: of answerable questions (with how many of those drafts
    were right) and of unanswerable ones. The reader is the one signal both policies refuse on by itself."""
    reason = FEATURE_REASONS["answerability"][0]
    c = refusals_by_reason(rows).get(reason, {})
    return {"reason": reason, "answerable": c.get("refused_answerable", 0),
            "answerable_draft_right": c.get("withheld_right", 0), "unanswerable": c.get("refused_unanswerable", 0)}


def refusal_table(by_reason: dict[str, dict[str, Any]]) -> list[str]:
    """Markdown rows of ``refusals_by_reason`` (header included)."""
    def dash(value: Any) -> Any:
        return "-" if value is None else value

    return markdown_table(
        ["reason", "refused", "answerable", "unanswerable", "false premise", "answerable per unanswerable",
         "share of answerable refused", "answerable: draft right / wrong"],
        [[reason, c["refused"], c["refused_answerable"], c["refused_unanswerable"], c["refused_false_premise"],
          dash(c["answerable_per_unanswerable"]), dash(c["share_of_answerable"]),
          f"{c.get('withheld_right', 0)} / {c.get('withheld_wrong', 0)}"] for reason, c in by_reason.items()])
