"""Questions sharing one in-process model: one at a time, a static batch, and transformers' continuous
batching, on the agent's own answer prompts (studies/batching.py). Writes benchmarks/batching/MODEL.json and README.md
(a section per model measured).

Usage: python scripts/bench_batching.py [--preset fast] [--data squad200] [--n 4] [--new-tokens 48]
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
from pathlib import Path

from agentic_rag.configuration import Settings
from agentic_rag.errors import UserError
from agentic_rag.training.jobs import split_records
from agentic_rag.training.prompts import generator_prompt
from studies.batching import batching_comparison, batching_markdown

ROOT = Path(__file__).resolve().parents[1]
SHARED = ROOT.parent / "shared" / "data"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--preset", default=None)
    ap.add_argument("--data", default="squad200", help="a benchmark split or CRAG file whose answer prompts are decoded")
    ap.add_argument("--n", type=int, default=4, help="prompts decoded together")
    ap.add_argument("--new-tokens", type=int, default=48)
    ap.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "batching")
    args = ap.parse_args()
    load_before = os.getloadavg()[0]
    import graphs  # noqa: F401  (registers the agent graph, whose answer prompts are recorded)
    from agentic_rag.llm.factory import get_chat_model

    try:
        settings = Settings.load(preset=args.preset, overrides=["PROBE_ENABLED=false"])
        with tempfile.TemporaryDirectory() as work:
            records = split_records(args.data, SHARED, Path(work))
        chat = get_chat_model(settings)
        model, tokenizer = chat.loaded()
        prompts = []
        for record in records:
            messages = generator_prompt(record, settings)
            if messages is not None:
                prompts.append(chat.prompt_ids(messages))
            if len(prompts) == args.n:
                break
    except UserError as exc:
        raise SystemExit(f"error: {exc}") from None
    report = batching_comparison(model, tokenizer, prompts, args.new_tokens)
    report |= {"model": Path(chat.model_path).name, "dtype": chat.dtype, "data": args.data}
    from agentic_rag.llm.dtype import processor_class

    cpu = processor_class()
    host = f"{cpu['cpu']} ({cpu['class']}), {os.cpu_count()} cores, load average {load_before:.2f} before"
    command = "python scripts/bench_batching.py" + (f" --preset {args.preset}" if args.preset else "")
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / f"{report['model']}.json").write_text(json.dumps({**report, "host": host, "command": command}, indent=2) + "\n")
    reports = [json.loads(p.read_text()) for p in sorted(args.out.glob("*.json"))]  # one per model measured
    (args.out / "README.md").write_text("\n".join(batching_markdown(r, r["host"], r["command"]) for r in reports))
    print(batching_markdown(report, host, command))
    return 0


if __name__ == "__main__":
    sys.exit(main())
