"""Fewer bytes per weight: the packaged model with its weights in 8 and 4 bits (torchao) against the dtype the
agent runs here, on the agent's own answer prompts (studies/quantization.py). Writes
benchmarks/quantization/MODEL.json and README.md (a section per model measured).

Usage: python scripts/bench_quantization.py [--preset fast] [--data squad200] [--n 8] [--new-tokens 48]
"""

from __future__ import annotations

import importlib.metadata
import json
import os
import sys
from pathlib import Path

from agentic_rag.errors import UserError
from studies.answer_prompts import answer_prompts, prompt_study_arguments
from studies.quantization import compare_formats, quantization_markdown

ROOT = Path(__file__).resolve().parents[1]


def main() -> int:
    args = prompt_study_arguments(__doc__.splitlines()[0], 8, ROOT / "benchmarks" / "quantization")
    try:
        torchao = importlib.metadata.version("torchao")
    except importlib.metadata.PackageNotFoundError:
        print("error: torchao is not installed: pip install torchao", file=sys.stderr)
        return 2
    load_before = os.getloadavg()[0]
    import torch
    from transformers import AutoModelForCausalLM

    from agentic_rag.llm.dtype import processor_class
    from agentic_rag.reader.probe import load_probe, packaged_probe_for

    try:
        chat, prompts = answer_prompts(args.preset, args.data, args.n)
        probe = load_probe(packaged_probe_for(chat.model_path))
    except UserError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    member = next(p for p in getattr(probe, "members", [probe]) if p.view == "last")

    def load(dtype: str):
        return AutoModelForCausalLM.from_pretrained(chat.model_path, dtype=getattr(torch, dtype)).eval()

    report = compare_formats(load, chat.dtype, prompts, args.new_tokens, member.layer, member.score)
    cpu = processor_class()
    report |= {"model": Path(chat.model_path).name, "dtype": chat.dtype, "data": args.data, "torchao": torchao,
               "torch": torch.__version__.split("+")[0],
               "host": f"{cpu['cpu']} ({cpu['class']}), {os.cpu_count()} cores, load average {load_before:.2f} before",
               "command": "python scripts/bench_quantization.py" + (f" --preset {args.preset}" if args.preset else "")}
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / f"{report['model']}.json").write_text(json.dumps(report, indent=2) + "\n")
    reports = [json.loads(p.read_text()) for p in sorted(args.out.glob("*.json"))]  # one per model measured
    (args.out / "README.md").write_text("\n".join(quantization_markdown(r) for r in reports))
    print(quantization_markdown(report))
    return 0


if __name__ == "__main__":
    sys.exit(main())
