"""Questions sharing one in-process model: one at a time, a static batch, and transformers' continuous
batching, on the agent's own answer prompts (studies/batching.py). Writes benchmarks/batching/MODEL.json and README.md
(a section per model measured).

Usage: python scripts/bench_batching.py [--preset fast] [--data squad200] [--n 4] [--new-tokens 48]
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

from agentic_rag.errors import UserError
from studies.answer_prompts import answer_prompts, prompt_study_arguments
from studies.batching import batching_comparison, batching_markdown

ROOT = Path(__file__).resolve().parents[1]


def main() -> int:
    args = prompt_study_arguments(__doc__.splitlines()[0], 4, ROOT / "benchmarks" / "batching")
    load_before = os.getloadavg()[0]
    try:
        chat, prompts = answer_prompts(args.preset, args.data, args.n)
        model, tokenizer = chat.loaded()
    except UserError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
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
