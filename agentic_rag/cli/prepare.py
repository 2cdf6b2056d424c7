"""`prepare`: datasets converted to CRAG's JSON-lines format."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Optional

import typer

from agentic_rag.cli.common import console, fail, prepare_app
from agentic_rag.datasets.crag import DataError
from agentic_rag.errors import named_path, output_file


@prepare_app.command("crag")
def prepare_crag_cmd(
    input: Annotated[Path, typer.Option("--input", help="A CRAG .jsonl[.bz2] file, e.g. the release's crag_task_1_dev_v4.jsonl.bz2.")],
    out: Annotated[str, typer.Option("--out")] = "data",
    split: Annotated[Optional[str], typer.Option("--split")] = None,
    static_only: Annotated[bool, typer.Option("--static-only")] = False,
    n: Annotated[Optional[int], typer.Option("--n")] = None,
    seed: Annotated[int, typer.Option("--seed")] = 0,
) -> None:
    """CRAG file -> question file (with pages) + deduplicated page corpus."""
    from agentic_rag.datasets.prepare import prepare_crag

    out = named_path(out, "--out")
    _run_prepare(lambda: prepare_crag(input, out, split=split, static_only=static_only, n=n, seed=seed))


@prepare_app.command("squad2")
def prepare_squad2_cmd(
    input: Annotated[Path, typer.Option("--input", help="SQuAD 2.0 questions with their paragraphs, a JSON object a line.")],
    out: Annotated[str, typer.Option("--out")] = "data/squad2.jsonl",
    n: Annotated[Optional[int], typer.Option("--n")] = None,
    seed: Annotated[int, typer.Option("--seed")] = 0,
) -> None:
    """SQuAD 2.0 -> CRAG format (own paragraph + others of the article; unanswerable -> "i don't know")."""
    from agentic_rag.datasets.prepare import prepare_squad2

    out = output_file(out, "--out")
    _run_prepare(lambda: prepare_squad2(input, out, n=n, seed=seed))


@prepare_app.command("rgb")
def prepare_rgb_cmd(
    input: Annotated[Path, typer.Option("--input", help="RGB's English questions (en_fact.json), a JSON object a line.")],
    out: Annotated[str, typer.Option("--out")] = "data/rgb.jsonl",
    variants: Annotated[
        str, typer.Option("--variants", help="Comma list of answerable,negative,counterfactual.")
    ] = "answerable,negative,counterfactual",
    n: Annotated[Optional[int], typer.Option("--n")] = None,
    seed: Annotated[int, typer.Option("--seed")] = 0,
) -> None:
    """RGB -> CRAG format, three variants per question."""
    from agentic_rag.datasets.prepare import prepare_rgb

    names = tuple(v.strip() for v in variants.split(",") if v.strip())
    out = output_file(out, "--out")
    _run_prepare(lambda: prepare_rgb(input, out, variants=names, n=n, seed=seed))


@prepare_app.command("nq")
def prepare_nq_cmd(
    input: Annotated[Path, typer.Option("--input", help="NQ-open questions with their oracle passage, a JSON object a line.")],
    out: Annotated[str, typer.Option("--out")] = "data/nq.jsonl",
    n: Annotated[Optional[int], typer.Option("--n")] = None,
    seed: Annotated[int, typer.Option("--seed")] = 0,
) -> None:
    """Natural Questions (open, oracle passage) -> CRAG format."""
    from agentic_rag.datasets.prepare import prepare_nq

    out = output_file(out, "--out")
    _run_prepare(lambda: prepare_nq(input, out, n=n, seed=seed))


@prepare_app.command("hotpotqa")
def prepare_hotpotqa_cmd(
    input: Annotated[Path, typer.Option("--input", help="HotpotQA questions in the distractor setting: "
                                                        "the JSON array as distributed, or JSON lines.")],
    out: Annotated[str, typer.Option("--out")] = "data/hotpotqa.jsonl",
    split: Annotated[str, typer.Option("--split", help="dev, test (each half of the questions, split by question) or all.")] = "all",
    variants: Annotated[str, typer.Option("--variants", help="Comma list of answerable,unanswerable.")] = "answerable,unanswerable",
    n: Annotated[Optional[int], typer.Option("--n", help="Questions to sample (each gives one record per variant).")] = None,
    seed: Annotated[int, typer.Option("--seed")] = 0,
    layout: Annotated[str, typer.Option("--layout", help="How the evidence is laid out: distractors (ten pages), support_only, "
                                                        "html_pages, snippets or long_page; a comma list for several.")] = "distractors",
) -> None:
    """HotpotQA -> CRAG format: ten paragraphs as pages, and an unanswerable twin without one supporting paragraph."""
    from agentic_rag.datasets.prepare import prepare_hotpotqa

    names = tuple(v.strip() for v in variants.split(",") if v.strip())
    layouts = tuple(v.strip() for v in layout.split(",") if v.strip())
    out = output_file(out, "--out")
    _run_prepare(lambda: prepare_hotpotqa(input, out, split=split, variants=names, n=n, seed=seed, layouts=layouts))


SPLIT_HELP = "dev, test (each half of the questions, split by a hash of the question's id) or all."


@prepare_app.command("subjqa")
def prepare_subjqa_cmd(
    input: Annotated[Path, typer.Option("--input", help="SubjQA rows (its CSV columns), a JSON object a line.")],
    out: Annotated[str, typer.Option("--out")] = "data/subjqa.jsonl",
    split: Annotated[str, typer.Option("--split", help=SPLIT_HELP)] = "all",
    n: Annotated[Optional[int], typer.Option("--n", help="Questions to sample, about half unanswerable.")] = None,
    seed: Annotated[int, typer.Option("--seed")] = 0,
) -> None:
    """SubjQA -> CRAG format: the review as the page, the annotated span as the gold (none -> "i don't know")."""
    from agentic_rag.datasets.prepare import prepare_subjqa

    out = output_file(out, "--out")
    _run_prepare(lambda: prepare_subjqa(input, out, split=split, n=n, seed=seed))


@prepare_app.command("quail")
def prepare_quail_cmd(
    input: Annotated[Path, typer.Option("--input", help="QuAIL questions in its jsonl layout, a JSON object a line.")],
    out: Annotated[str, typer.Option("--out")] = "data/quail.jsonl",
    split: Annotated[str, typer.Option("--split", help=SPLIT_HELP)] = "all",
    n: Annotated[Optional[int], typer.Option("--n", help="Questions to sample, about half unanswerable.")] = None,
    seed: Annotated[int, typer.Option("--seed")] = 0,
) -> None:
    """QuAIL -> CRAG format: the text as the page, the correct option as the gold (Unanswerable -> "i don't know")."""
    from agentic_rag.datasets.prepare import prepare_quail

    out = output_file(out, "--out")
    _run_prepare(lambda: prepare_quail(input, out, split=split, n=n, seed=seed))


@prepare_app.command("pubmedqa")
def prepare_pubmedqa_cmd(
    input: Annotated[Path, typer.Option("--input", help="PubMedQA PQA-L questions, a JSON object a line.")],
    out: Annotated[str, typer.Option("--out")] = "data/pubmedqa.jsonl",
    split: Annotated[str, typer.Option("--split", help=SPLIT_HELP)] = "all",
    n: Annotated[Optional[int], typer.Option("--n")] = None,
    seed: Annotated[int, typer.Option("--seed")] = 0,
    keep_maybe: Annotated[bool, typer.Option("--keep-maybe", help="Keep the \"maybe\" questions (gold \"maybe\").")] = False,
) -> None:
    """PubMedQA -> CRAG format: the abstract (no conclusion) as the page, yes/no as the gold; "maybe" left out."""
    from agentic_rag.datasets.prepare import prepare_pubmedqa

    out = output_file(out, "--out")
    _run_prepare(lambda: prepare_pubmedqa(input, out, split=split, n=n, seed=seed, keep_maybe=keep_maybe))


def _run_prepare(fn) -> None:
    try:
        result = fn()
    except (DataError, FileNotFoundError, ValueError) as exc:
        fail(str(exc))
    console.print_json(data=_jsonable(result))


def _jsonable(obj):
    return json.loads(json.dumps(obj, default=str))
