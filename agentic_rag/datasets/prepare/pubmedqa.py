"""PubMedQA (PQA-L) in CRAG's format: a paper's title as a yes/no question with its abstract, less the
conclusion, as the only page; the gold is the expert's ``final_decision``."""

from __future__ import annotations

from pathlib import Path
from typing import Any
from urllib.parse import quote

from agentic_rag.datasets.crag import DataError, ReadReport, answer_to_str, resolve_dataset
from agentic_rag.datasets.prepare.common import (
    BadLines,
    OnBad,
    Stats,
    check_n,
    iter_json_objects,
    question_rng,
    require_list,
    require_text,
    sample_sorted,
    write_converted,
)
from agentic_rag.datasets.prepare.onepage import Split, build, check_split, in_split, one_page_record

DECISIONS = ("yes", "no", "maybe")


def abstract(raw: dict[str, Any]) -> str:
    """``CONTEXTS`` as one text, each section on its own paragraph after its label (``RESULTS: ...``).
    ``LONG_ANSWER`` (the paper's own conclusion) is never read: it states the answer."""
    sections = require_list(raw, "CONTEXTS")
    labels = require_list(raw, "LABELS")
    if not sections or not all(isinstance(s, str) and s.strip() for s in sections):
        raise DataError("CONTEXTS is missing or holds an empty section")
    if labels and len(labels) != len(sections):
        raise DataError(f"LABELS names {len(labels)} sections, CONTEXTS has {len(sections)}")
    names = [answer_to_str(label) for label in labels] or [""] * len(sections)
    return "\n\n".join(f"{name}: {text.strip()}" if name else text.strip() for name, text in zip(names, sections))


def prepare_pubmedqa(
    input: str | Path,
    out_path: str | Path,
    split: Split = "all",
    n: int | None = None,
    seed: int = 0,
    keep_maybe: bool = False,
    on_bad: OnBad = "skip",
    report: ReadReport | None = None,
    progress: bool | None = None,
) -> tuple[Path, Stats]:
    """PubMedQA PQA-L lines (``{pubid, QUESTION, CONTEXTS[], LABELS[], ..., final_decision, LONG_ANSWER}``)
    as CRAG records, ``question_type`` yes_no.

    The abstract is one page (``pubmedqa://<pubid>``, its labelled sections in order, ``abstract``): the
    evidence is read as a whole, as PubMedQA's annotators read it; ``LONG_ANSWER`` is left out, as it
    leaks the answer. The gold is ``final_decision``, yes or no. "maybe" means the evidence is mixed, not
    missing, so it is never "i don't know": those questions are left out (``maybe_dropped`` in the stats)
    unless ``keep_maybe``, which keeps them with the gold "maybe". Every question is answerable.
    ``split`` keeps the dev or test half by a hash of the ``pubid`` (not PubMedQA's own 500-question test
    half, which this file does not mark); ``n`` samples that half."""
    check_n(n)
    check_split(split)
    src = resolve_dataset(input)
    bad = BadLines(src, on_bad, report)

    rows: list[dict[str, Any]] = []
    read = maybe = 0
    for lineno, raw in iter_json_objects(src, bad, "PubMedQA", progress):
        read += 1
        try:
            question = require_text(raw, "QUESTION")
            pubid = answer_to_str(raw.get("pubid"))
            if not pubid:
                raise DataError("pubid is missing or empty")
            decision = answer_to_str(raw.get("final_decision")).lower()
            if decision not in DECISIONS:
                raise DataError(f"final_decision is {decision or 'missing'}, not yes, no or maybe")
            text = abstract(raw)
        except DataError as exc:
            bad(lineno, str(exc))
            continue
        bad.good()
        if not in_split(pubid, split):
            continue
        if decision == "maybe" and not keep_maybe:
            maybe += 1
            continue
        rows.append({"line": lineno, "id": pubid, "question": question, "decision": decision, "text": text})

    chosen = sample_sorted(range(len(rows)), n, question_rng(seed, "pubmedqa", "sample"))

    def make(r: dict[str, Any]):
        return one_page_record(
            "pubmedqa", r["id"], r["question"], r["decision"], unanswerable=False, page_name=f"PubMed {r['id']}",
            page_url=f"pubmedqa://{quote(r['id'], safe='')}", text=r["text"], domain="pubmedqa", question_type="yes_no")

    records = build(rows, chosen, bad, make)
    return write_converted(records, out_path, src, read, bad, n, seed, split=split, keep_maybe=keep_maybe,
                           maybe_dropped=maybe, **{d: sum(r.answer == d for r in records) for d in DECISIONS})
