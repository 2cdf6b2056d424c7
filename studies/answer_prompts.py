"""The agent's own answer prompts of a split, as token ids of the chat model that answers them: what the
decoding studies (batching, quantization) feed one loaded model, so that they measure the prompts the agent
really sends."""

from __future__ import annotations

import argparse
import tempfile
from pathlib import Path
from typing import Any

SHARED = Path(__file__).resolve().parents[2] / "shared" / "data"


def prompt_study_arguments(description: str, prompts: int, out: Path) -> argparse.Namespace:
    """The command line every such study takes: which model (a preset), which split, how many prompts,
    how long a reply may grow, and where the report goes."""
    ap = argparse.ArgumentParser(description=description)
    ap.add_argument("--preset", default=None)
    ap.add_argument("--data", default="squad200", help="a benchmark split or CRAG file whose answer prompts are decoded")
    ap.add_argument("--n", type=int, default=prompts, help="answer prompts")
    ap.add_argument("--new-tokens", type=int, default=48)
    ap.add_argument("--out", type=Path, default=out)
    args = ap.parse_args()
    if args.n < 1 or args.new_tokens < 1:
        ap.error("--n and --new-tokens must be 1 or more")  # exit 2
    return args


def answer_prompts(preset: str | None, data: str, n: int) -> tuple[Any, list[list[int]]]:
    """The chat model of ``preset`` and the first ``n`` answer prompts of ``data`` that reach the generator
    (a question refused before generation has none), the answerability reader off: it reads prompts, not replies."""
    import graphs  # noqa: F401  (registers the agent graph, whose answer prompts are recorded)
    from agentic_rag.configuration import Settings
    from agentic_rag.errors import UserError
    from agentic_rag.llm.factory import get_chat_model
    from agentic_rag.training.jobs import split_records
    from agentic_rag.training.prompts import generator_prompt

    settings = Settings.load(preset=preset, overrides=["PROBE_ENABLED=false"])
    with tempfile.TemporaryDirectory() as work:
        records = split_records(data, SHARED, Path(work))
    chat = get_chat_model(settings)
    prompts = []
    for record in records:
        if (messages := generator_prompt(record, settings)) is not None:
            prompts.append(chat.prompt_ids(messages))
        if len(prompts) == n:
            break
    if not prompts:
        raise UserError(f"no question of {data} reaches the generator: every one is refused before it")
    return chat, prompts
