"""RGB in CRAG's format, three variants per question: answerable (its positive snippets among negative
ones), negative (negative snippets only: unanswerable) and counterfactual (snippets stating a wrong answer)."""

from __future__ import annotations

import random
from collections import Counter
from pathlib import Path
from typing import Any, Sequence

from pydantic import ValidationError

from agentic_rag.datasets.crag import (
    IDK,
    CragRecord,
    DataError,
    ReadReport,
    SearchResult,
    answer_to_str,
    resolve_dataset,
)
from agentic_rag.datasets.prepare.common import (
    BadLines,
    OnBad,
    Stats,
    check_n,
    distinct,
    error_text,
    iter_json_objects,
    question_rng,
    require_list,
    require_text,
    sample_sorted,
    write_converted,
)

RGB_VARIANTS = ("answerable", "negative", "counterfactual")


def _rgb_answer(value: Any) -> tuple[str, list[str], list[list[str]] | None]:
    """RGB answers: a string, a list of aliases, or a list of parts each a list of aliases.

    Returns (answer, alternative answers, parts). A single part is a list of aliases; several parts (every
    one needed) become one answer joined with ", " and are kept whole in ``answer_parts``.
    """
    if isinstance(value, list):
        if value and all(isinstance(v, list) for v in value):
            parts = [distinct(v) for v in value]
            parts = [p for p in parts if p]
            if len(parts) == 1:
                return parts[0][0], parts[0][1:], None
            if parts:
                return ", ".join(p[0] for p in parts), [], parts
            return "", [], None
        aliases = distinct(v for v in value if not isinstance(v, (list, dict)))
        return (aliases[0], aliases[1:], None) if aliases else ("", [], None)
    return answer_to_str(value), [], None


def prepare_rgb(
    input: str | Path,
    out_path: str | Path,
    variants: Sequence[str] = RGB_VARIANTS,
    n: int | None = None,
    seed: int = 0,
    noise: int = 2,
    on_bad: OnBad = "skip",
    report: ReadReport | None = None,
    progress: bool | None = None,
) -> tuple[Path, Stats]:
    """RGB questions (``{id, query, answer, fakeanswer, positive[], positive_wrong[], negative[]}``) as CRAG records.

    Per question and variant, a record ``rgb-<id>-<variant>``:

    * ``answerable``: the positive snippets plus ``noise`` negative ones, shuffled; gold = the answer.
    * ``negative``: only the negative snippets; gold = "i don't know" (RGB's negative rejection);
      the real answer in the extra fields ``world_answer`` / ``world_alternatives``.
    * ``counterfactual``: the ``positive_wrong`` snippets, which state ``fakeanswer``; gold = the true
      answer, the planted one in the extra field ``fake_answer``.

    A variant a question has no snippets for is skipped and counted in ``stats['skipped']``.
    """
    check_n(n)
    if noise < 0:
        raise ValueError(f"noise must be >= 0, not {noise}")
    variants = tuple(variants)
    unknown = [v for v in variants if v not in RGB_VARIANTS]
    if unknown or not variants:
        raise ValueError(f"unknown RGB variant(s) {unknown}: choose from {', '.join(RGB_VARIANTS)}")
    src = resolve_dataset(input)
    bad = BadLines(src, on_bad, report)

    rows: list[tuple[int, dict[str, Any]]] = []
    for lineno, raw in iter_json_objects(src, bad, "RGB", progress):
        try:
            require_text(raw, "query")
            rid = answer_to_str(raw.get("id"))
            if not rid:
                raise DataError("id is missing")
            answer, _, _ = _rgb_answer(raw.get("answer"))
            if not answer:
                raise DataError("answer is missing or empty")
            for key in ("positive", "negative", "positive_wrong"):
                require_list(raw, key)
        except DataError as exc:
            bad(lineno, str(exc))
            continue
        bad.good()
        rows.append((lineno, raw))

    chosen = sample_sorted(range(len(rows)), n, random.Random(seed))
    records: list[CragRecord] = []
    per_variant: Counter[str] = Counter()
    skipped: Counter[str] = Counter()
    for i in chosen:
        lineno, raw = rows[i]
        rid = answer_to_str(raw["id"])
        answer, alternatives, parts = _rgb_answer(raw["answer"])
        fake, _, _ = _rgb_answer(raw.get("fakeanswer"))
        snippets = {k: [str(s) for s in raw.get(k) or [] if str(s).strip()] for k in ("positive", "negative", "positive_wrong")}

        def pages(chosen_snippets: list[tuple[str, int]], r: random.Random) -> list[SearchResult]:
            r.shuffle(chosen_snippets)
            return [
                SearchResult(
                    page_name=f"RGB snippet {pos}",
                    page_url=f"rgb://{rid}/{kind}/{k}",
                    page_snippet=snippets[kind][k],
                    page_result=snippets[kind][k],
                )
                for pos, (kind, k) in enumerate(chosen_snippets, start=1)
            ]

        for variant in variants:
            r = question_rng(seed, "rgb", rid, variant)
            extra: dict[str, Any] = {}
            if variant == "answerable":
                if not snippets["positive"]:
                    skipped[variant] += 1
                    continue
                negatives = list(range(len(snippets["negative"])))
                noisy = sorted(r.sample(negatives, min(noise, len(negatives))))
                chosen_snippets = [("positive", k) for k in range(len(snippets["positive"]))]
                chosen_snippets += [("negative", k) for k in noisy]
                gold, alts, qtype = answer, alternatives, "simple"
                extra["gold_page_urls"] = [f"rgb://{rid}/positive/{k}" for k in range(len(snippets["positive"]))]
                if parts:
                    extra["answer_parts"] = parts
            elif variant == "negative":
                if not snippets["negative"]:
                    skipped[variant] += 1
                    continue
                chosen_snippets = [("negative", k) for k in range(len(snippets["negative"]))]
                gold, alts, qtype = IDK, [], "unanswerable"
                extra["gold_page_urls"] = []
                # the real answer, kept apart from the gold: an answer that matches it came from a
                # "negative" snippet that leaked it, which the report counts separately
                extra["world_answer"] = answer
                extra["world_alternatives"] = alternatives
            else:
                if not snippets["positive_wrong"] or not fake:
                    skipped[variant] += 1
                    continue
                chosen_snippets = [("positive_wrong", k) for k in range(len(snippets["positive_wrong"]))]
                gold, alts, qtype = answer, alternatives, "counterfactual"
                extra["fake_answer"] = fake
                extra["gold_page_urls"] = []
                if parts:
                    extra["answer_parts"] = parts
            try:
                records.append(
                    CragRecord(
                        interaction_id=f"rgb-{rid}-{variant}",
                        query=raw["query"],
                        answer=gold,
                        alternative_answers=alts,
                        domain="news",
                        question_type=qtype,
                        static_or_dynamic="static",
                        search_results=pages(chosen_snippets, r),
                        source="rgb",
                        source_id=rid,
                        variant=variant,
                        **extra,
                    )
                )
            except ValidationError as exc:
                bad(lineno, f"{variant}: {error_text(exc)}")
                continue
            per_variant[variant] += 1

    return write_converted(
        records, out_path, src, len(rows), bad, n, seed, noise=noise, questions=len(chosen),
        variants={v: per_variant[v] for v in variants}, skipped={v: skipped[v] for v in variants if skipped[v]},
    )
