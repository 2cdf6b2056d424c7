"""How well the evidence chain (chain/) tells HotpotQA's answerable questions from their twins, read
with the gold answer as the draft and every page of the record as evidence: what the chain check
can separate before retrieval and generation lose anything. Per plan shape: answerable questions
whose chain is complete, and twins (one supporting page removed, each in turn) whose chain is not."""

from __future__ import annotations

import json
from collections import Counter, defaultdict
from pathlib import Path
from typing import Any, Iterable, Iterator

from agentic_rag.anchors.hops import SHAPES, HopPlan, plan_hops
from agentic_rag.anchors.kind import question_kind
from agentic_rag.anchors.predictor import propose_anchors
from agentic_rag.baug.chain import answer_claims, draft_chain, evidence_chain, hops_found, missing_hop, unconfirmed_hop
from agentic_rag.configuration.sections import AgentSettings
from agentic_rag.datasets.prepare.hotpotqa import in_split, paragraphs_of, question_id, supporting_titles
from agentic_rag.telemetry import parse_json
from agentic_rag.text import strip_markup


def hotpot_questions(files: list[Path], split: str) -> Iterator[dict[str, Any]]:
    """The raw HotpotQA questions of one half (``prepare hotpotqa``'s split by question id)."""
    for path in files:
        text = path.read_text(encoding="utf-8")
        rows = parse_json(text) if text.lstrip().startswith("[") else [parse_json(line) for line in text.splitlines() if line.strip()]
        for raw in rows:
            if isinstance(raw, dict) and in_split(question_id(raw, str(raw.get("question", ""))), split):
                yield raw


def question_plan(question: str) -> tuple[HopPlan, str]:
    """The hop plan and the kind the agent's anchor step reads for a question under the default settings."""
    anchors = propose_anchors(question, top_m=AgentSettings.model_fields["ANCHOR_TOP_M"].default)
    kind = question_kind(question, anchors)
    return plan_hops(question, anchors, kind), kind


def record_pages(record: Any) -> list[dict[str, Any]]:
    """A record's pages as the chain reads passages (text pages: HotpotQA, SQuAD; not HTML)."""
    return [{"n": i, "page_name": p.page_name or "", "text": p.page_result or p.page_snippet or ""}
            for i, p in enumerate(record.search_results, start=1)]


def gold_chains(files: list[Path], split: str) -> dict[str, Any]:
    """Per plan shape: the questions, their HotpotQA types, answerable chains complete, twins' chains broken."""
    counts: dict[str, Counter] = defaultdict(Counter)
    for raw in hotpot_questions(files, split):
        question = raw["question"]
        plan, _ = question_plan(question)
        claims = answer_claims(raw["answer"], question)
        c = counts[plan.shape]
        c["questions"] += 1
        c[f"type_{raw.get('type', 'unknown')}"] += 1
        paragraphs = paragraphs_of(raw)
        for removed in [None, *supporting_titles(raw)]:
            pages = [{"n": i, "page_name": t, "text": "".join(s).strip()} for i, (t, s) in enumerate(paragraphs, 1) if t != removed]
            chain = evidence_chain(plan, claims, pages, answer=raw["answer"], question=question)
            complete = hops_found(chain) == 1.0
            if removed is None and any(h["role"] == "compare" for h in chain):
                c["compared"] += 1
                c["compared_as_gold"] += all(h["found"] for h in chain if h["role"] == "compare")
            if removed is None:
                c["answerable"] += 1
                c["answerable_complete"] += complete
            else:
                c["twins"] += 1
                c["twins_broken"] += not complete
    shapes = {s: dict(counts[s]) for s in SHAPES if s in counts}
    for row in shapes.values():
        row["complete_rate"] = round(row["answerable_complete"] / row["answerable"], 3) if row.get("answerable") else None
        row["broken_rate"] = round(row["twins_broken"] / row["twins"], 3) if row.get("twins") else None
    return {"split": split, "files": [p.name for p in files], "shapes": shapes}


def single_hop_exposure(records: list[Any], name: str) -> dict[str, Any]:
    """On a single-passage split (squad200): the answerable questions the plan reads as multi-hop, and of
    those, the ones whose chain breaks for the gold answer: what the chain check could cost there."""
    answerable = [r for r in records if r.answer and r.answer.lower() != "i don't know"]
    planned = broken = 0
    for r in answerable:
        plan, _ = question_plan(r.query)
        if not plan.multi_hop:
            continue
        planned += 1
        broken += hops_found(evidence_chain(plan, answer_claims(r.answer, r.query), record_pages(r), answer=r.answer,
                                            question=r.query)) != 1.0
    return {"split": name, "answerable": len(answerable), "planned_multi_hop": planned, "gold_chain_broken": broken}


def gold_chains_markdown(report: dict[str, Any]) -> str:
    rows = ["| plan shape | questions | HotpotQA types | answerable: chain complete | twins: chain broken |", "|---|---|---|---|---|"]
    for shape, r in report["shapes"].items():
        types = ", ".join(f"{k[5:]} {v}" for k, v in sorted(r.items()) if k.startswith("type_"))
        complete = f"{r['answerable_complete']}/{r['answerable']} = {r['complete_rate']}" if shape != "single" else "(no chain)"
        broken = f"{r['twins_broken']}/{r['twins']} = {r['broken_rate']}" if shape != "single" else "(no chain)"
        rows.append(f"| {shape} | {r['questions']} | {types} | {complete} | {broken} |")
    return (f"# Evidence chains on HotpotQA's {report['split']} half, gold answers\n\n"
            "Generated by `python scripts/bench_chains.py --split " + report["split"] + "`. Each question is read with "
            "its gold answer as the draft and all its pages as evidence; its twins drop one supporting page each "
            "(a twin may stay answerable when another page repeats what the dropped one said). A single-shape "
            "question gets no chain: the chain check never reads it. The rules were built on the dev half, but "
            "while writing them a few questions of the first-100 file that belong to the test half were read too "
            "(the ones the committed hotpot_test run shows): the test figures are not wholly unseen.\n\n" + "\n".join(rows) + "\n"
            + "".join(f"\nA comparison's last hop (the item the pages' dates or numbers make the winner, for \"older\", "
                      f"\"taller\" ...) was read on {r['compared']} answerable questions and names the gold answer's item on "
                      f"{r['compared_as_gold']}.\n" for s, r in report["shapes"].items() if r.get("compared"))
            + "".join(f"\nOn {e['split']}, a single-passage split, {e['planned_multi_hop']} of {e['answerable']} answerable "
                      f"questions are planned as multi-hop, and the chain of {e['gold_chain_broken']} of them breaks for "
                      "the gold answer: what `CHAIN_CHECK` could cost there.\n" for e in report.get("single_hop", [])))


def write_gold_chains(files: list[Path], split: str, out: Path, single_hop: list[dict[str, Any]] = ()) -> dict[str, Any]:
    report = {**gold_chains(files, split), "single_hop": list(single_hop)}
    out.mkdir(parents=True, exist_ok=True)
    (out / f"gold_chains_{split}.json").write_text(json.dumps(report, indent=2) + "\n")
    (out / f"gold_chains_{split}.md").write_text(gold_chains_markdown(report))
    return report


def rechained(rows: list[dict[str, Any]], records: Iterable[Any]) -> list[dict[str, Any]]:
    """The rows with each draft's chain read again by this code, over all of its record's pages (the run
    read the chunks retrieved for the draft): how a change to the plan or the chain would have read the
    drafts a run wrote, with no model call. A row whose record is not in ``records`` keeps no chain."""
    pages = {r.interaction_id: r for r in records}
    plans: dict[str, tuple[HopPlan, str]] = {}  # a question and its twins share one plan
    out = []
    for row in rows:
        record, draft = pages.get(str(row.get("id"))), str(row.get("draft") or "")
        chain: list[dict[str, Any]] = []
        if record is not None and draft:
            passages = record_pages(record)
            if record.query not in plans:
                plans[record.query] = question_plan(record.query)
            plan, kind = plans[record.query]
            chain = draft_chain(plan.to_dict(), record.query, strip_markup(draft, [p["text"] for p in passages]),
                                kind, passages)
        signals = {k: v for k, v in (row.get("signals") or {}).items() if k != "chain"}
        out.append({**row, "chain": chain, "signals": signals})
    return out


def _row_chain(row: dict[str, Any]) -> list[dict[str, Any]]:
    return (row.get("signals") or {}).get("chain") or row.get("chain") or []


def _chain_state(row: dict[str, Any]) -> str:
    chain = _row_chain(row)
    if not chain:
        return "no chain"
    return "complete" if hops_found(chain) == 1.0 else "broken"


def chain_outcomes(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """A run's drafts by outcome and by the state of their last chain (complete, broken, none), and what
    two uses of the chain would have changed in CRAG score, the retrieval they would add aside:
    refusing every answer whose chain is broken (``CHAIN_CHECK``), and answering every refused draft
    whose chain is complete (the chain as positive evidence over the other checks)."""
    from agentic_rag.eval.refusals import withheld_right_answer
    from agentic_rag.eval.rows import gold_is_idk, is_refusal

    table: dict[str, Counter] = defaultdict(Counter)
    by_type: dict[str, Counter] = defaultdict(Counter)  # the dataset's question type (HotpotQA: bridge, comparison)
    for row in rows:
        if is_refusal(row):
            right = withheld_right_answer(row)
            group = "refused, no draft" if right is None else "refused, draft right" if right else "refused, draft wrong"
        else:
            group = {"accurate": "answered, right", "incorrect": "answered, wrong"}.get(row.get("judgement"), "answered, other")
        state = _chain_state(row)
        table[group][state] += 1
        by_type[str(row.get("question_type") or "unknown")][f"{group}: {'chain ' * (state != 'no chain')}{state}"] += 1
    refuse_broken = table["answered, wrong"]["broken"] - table["answered, right"]["broken"]
    refused = [row for row in rows if is_refusal(row) and not gold_is_idk(row)]
    answer_complete = table["refused, draft right"]["complete"] - table["refused, draft wrong"]["complete"]
    return {"n": len(rows), "table": {k: dict(v) for k, v in sorted(table.items())},
            "by_type": {k: dict(sorted(v.items())) for k, v in sorted(by_type.items())},
            "score_change": {"refuse_broken": refuse_broken, "answer_complete": answer_complete},
            "hop_named": {"answerable_refusals": len(refused), "named": sum(names_a_hop(row) for row in refused),
                          "no_chain": sum(_chain_state(row) == "no chain" for row in refused)}}


def names_a_hop(row: dict[str, Any]) -> bool:
    """Whether a refusal's ``missing`` names a hop of its chain: the one missing, or the one left unconfirmed."""
    chain = _row_chain(row)
    hop = missing_hop(chain) or unconfirmed_hop(chain, row.get("query", ""))
    return bool(hop) and hop in (row.get("missing") or [])


def chain_outcomes_markdown(name: str, report: dict[str, Any], command: str = "--run RUN", reread: bool = False) -> str:
    """The report as markdown; ``reread``: the chains were read again by this code (``rechained``)."""
    states = ("complete", "broken", "no chain")
    rows = ["| drafts | " + " | ".join(f"chain {s}" if s != "no chain" else s for s in states) + " |", "|---|---|---|---|"]
    rows += [f"| {group} | " + " | ".join(str(counts.get(s, 0)) for s in states) + " |" for group, counts in report["table"].items()]
    change = report["score_change"]
    types = [f"- {kind}: " + "; ".join(f"{k} {v}" for k, v in counts.items()) for kind, counts in report.get("by_type", {}).items()]
    again = " (read again by this code, over all of its record's pages)" if reread else ""
    return (f"# The evidence chain on the drafts of {name}\n\n"
            f"Generated by `python scripts/bench_chains.py {command}` ({report['n']} "
            f"questions): each question's last draft, by outcome and by its chain{again}. A refused draft is right when the "
            "rule judge would have scored it accurate.\n\n" + "\n".join(rows) + "\n\nBy the dataset's question type:\n\n"
            + "\n".join(types) + "\n\n"
            f"Refusing every answer whose chain is broken would change the summed CRAG score by {change['refuse_broken']:+d}; "
            f"answering every refused draft whose chain is complete, by {change['answer_complete']:+d} (the extra round "
            "a missing hop gets is not counted: it needs a run with `CHAIN_CHECK` on).\n"
            + ("" if reread else _named_line(report)))  # a chain read again is not the one the refusal named


def _named_line(report: dict[str, Any]) -> str:
    named = report.get("hop_named")
    if not named or not named["answerable_refusals"]:
        return ""
    return (f"\nRefusals of answerable questions that name a hop in `missing`: {named['named']} of "
            f"{named['answerable_refusals']} ({named['no_chain']} had no chain: the plan read the question as one "
            "passage, or no draft was written).\n")
