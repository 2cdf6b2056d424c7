"""Read a run's own answer prompts again for the signals tried on the decision (issue 70; read by scripts/bench_lofo.py).

For each drafted question of the runs, the answer prompt that gave its draft is read back from the run's LLM cache
(`LLM_CACHE_PATH`), and the in-process generator either samples a few replies from it, sharing one prefill
(self-consistency), or with --states gives the prompt's states at the reader's layer (the reader refitted per
left-out family). Resumable: a rerun reads only what is missing (samples with the same seeds).

Usage: python scripts/sample_drafts.py --run RUN [RUN ...] --cache CACHE.sqlite [CACHE ...] --out samples.jsonl
       [--n 4] [--temperature 0.7] [--max-tokens 40] [--states] [-o KEY=VALUE ...]
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from agentic_rag.training import candidate_signals as cs


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--run", type=Path, nargs="+", required=True, help="agent run folders")
    parser.add_argument("--cache", type=Path, nargs="+", required=True, help="the LLM caches the runs wrote")
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--n", type=int, default=cs.SAMPLES)
    parser.add_argument("--temperature", type=float, default=cs.SAMPLE_TEMPERATURE)
    parser.add_argument("--max-tokens", type=int, default=cs.SAMPLE_MAX_TOKENS)
    parser.add_argument("--states", action="store_true", help="the prompts' states at the reader's layer (.npz) instead of samples")
    parser.add_argument("-o", dest="overrides", action="append", default=[], help="a setting, KEY=VALUE")
    args = parser.parse_args()
    for path, what in [*((r / "results.jsonl", "a run folder") for r in args.run), *((c, "an LLM cache") for c in args.cache)]:
        if not path.is_file():
            raise SystemExit(f"{path} does not exist: give {what}")
    if args.n < 1 or args.temperature <= 0 or args.max_tokens < 1:
        raise SystemExit("--n and --max-tokens must be at least 1 and --temperature above 0")

    from agentic_rag.configuration import Settings
    from agentic_rag.eval.results import read_results
    from agentic_rag.llm.factory import get_chat_model

    settings = Settings.load(overrides=args.overrides).replace(LLM_CACHE_PATH=None)
    model = get_chat_model(settings)
    if not hasattr(model, "sample_replies"):
        raise SystemExit(f"LLM_BACKEND={settings.llm.LLM_BACKEND} cannot sample from a shared prefill: use the in-process model")
    prompts: dict = {}
    for cache in args.cache:
        for reply, found in cs.cached_answer_prompts(cache).items():
            prompts.setdefault(reply, []).extend(found)
    rows = [row for run in args.run for row in read_results(run / "results.jsonl")]
    if args.states:
        counts = cs.collect_prompt_states(rows, prompts, model, args.out)
        print(f"{counts['read']} prompts read, {counts['no_prompt']} without their prompt in the caches, "
              f"{counts['already']} already in {args.out}")
        return 0
    counts = cs.sample_drafts(rows, prompts, model, args.out, args.n, args.temperature, args.max_tokens)
    print(f"{counts['sampled']} drafts sampled, {counts['no_prompt']} without their prompt in the caches, "
          f"{counts['already']} already in {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
