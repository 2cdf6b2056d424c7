"""Measure what the packaged LLM costs on this machine, so budgets and timeouts rest on numbers.

Prints JSON: one-time setup (assemble + convert the GGUF), cached load, prefill and decode speed, in the
dtype ``--dtype`` names (``auto``: what LLM_DTYPE=auto picks on this processor). The one-time setup is only
measured with ``--fresh`` (into a temp dir, leaving the user cache alone) or when the cache is still empty,
since a warm cache would report ~0 s. ``--out`` keeps one row per processor class and dtype: a run on
another class, or in another dtype, adds its row.

    python scripts/bench_llm.py [--fresh] [--dtype auto|bfloat16|float32] [--out benchmarks/llm.json]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

import torch
import transformers

from agentic_rag.configuration import Settings
from agentic_rag.llm import local, packaged
from agentic_rag.llm.dtype import choose_dtype, processor_class
from testkit.bench import cpu_model, merge_class_row

PREFILL_TOKENS = 800
DECODE_TOKENS = 128
REPEATS = 3


def _first_load(cache_dir: Path, model: packaged.PackagedModel) -> dict:
    start = time.perf_counter()
    gguf = packaged.assemble_gguf(cache_dir, model)
    assembled = time.perf_counter()
    packaged.convert_gguf(gguf, cache_dir / model.converted_dir, model.sha256)
    done = time.perf_counter()
    return {
        "assemble_and_verify_s": round(assembled - start, 2),
        "convert_s": round(done - assembled, 2),
        "total_s": round(done - start, 2),
    }


def _prompt_ids(tokenizer, n_tokens: int) -> dict:
    """A chat prompt of about ``n_tokens``, built from varied text so it is not a trivial repeat."""
    words = "retrieval evidence passage citation answer question budget context model token".split()
    body, i = [], 0
    while len(tokenizer.encode(" ".join(body), add_special_tokens=False)) < n_tokens - 30:
        body.extend(f"{words[(i * 7 + j) % len(words)]}{i}" for j in range(10))
        i += 1
    messages = [
        {"role": "system", "content": "Summarise the passage."},
        {"role": "user", "content": " ".join(body)},
    ]
    return tokenizer.apply_chat_template(messages, add_generation_prompt=True, return_tensors="pt", return_dict=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--fresh", action="store_true", help="measure GGUF assembly+conversion in a temp dir")
    parser.add_argument("--out", type=Path, help="also write the JSON here")
    parser.add_argument("--model", default="packaged", choices=sorted(packaged.PACKAGED_MODELS),
                        help="which packaged generator (LLM_MODEL name)")
    parser.add_argument("--dtype", default="auto", choices=["auto", "bfloat16", "float32"], help="LLM_DTYPE")
    args = parser.parse_args()
    dtype = choose_dtype(args.dtype).dtype
    model_spec = packaged.PACKAGED_MODELS[args.model]

    settings = Settings.load()
    cache_dir = Path(settings.paths.MODEL_CACHE_DIR).expanduser()
    threads = settings.llm.TORCH_THREADS or os.cpu_count() or 1
    torch.set_num_threads(threads)
    result: dict = {
        "machine": {
            "cpu": cpu_model(),
            "cpu_count": os.cpu_count(),
            "torch": torch.__version__,
            "transformers": transformers.__version__,
            "python": platform.python_version(),
            "loadavg_at_start": [round(x, 2) for x in os.getloadavg()],
        },
        "processor": processor_class(),
        "model": args.model,
        "threads": threads,
        "dtype": dtype,
    }

    if args.fresh:
        tmp = Path(tempfile.mkdtemp(prefix="bench-llm-"))
        try:
            result["first_load"] = {"where": "temp dir (--fresh)", **_first_load(tmp, model_spec)}
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
    elif packaged.converted_source_key(cache_dir / model_spec.converted_dir) != model_spec.sha256:
        result["first_load"] = {"where": str(cache_dir), **_first_load(cache_dir, model_spec)}
    else:
        result["first_load"] = None  # cache already warm; rerun with --fresh to measure

    folder = packaged.ensure_converted(cache_dir, model_spec)
    start = time.perf_counter()
    model, tokenizer, _ = local._load(str(folder), dtype)
    result["cached_load_s"] = round(time.perf_counter() - start, 2)

    inputs = _prompt_ids(tokenizer, PREFILL_TOKENS)
    n_prompt = inputs["input_ids"].shape[1]
    with torch.inference_mode():
        model.generate(**inputs, max_new_tokens=2, do_sample=False)  # warm-up: first call allocates
        prefill, one, full = [], [], []
        for _ in range(REPEATS):
            t = time.perf_counter()
            model(**inputs)
            prefill.append(time.perf_counter() - t)
            t = time.perf_counter()
            model.generate(**inputs, max_new_tokens=1, do_sample=False)
            one.append(time.perf_counter() - t)
            t = time.perf_counter()
            out = model.generate(
                **inputs, max_new_tokens=DECODE_TOKENS, min_new_tokens=DECODE_TOKENS, do_sample=False
            )
            full.append(time.perf_counter() - t)
    assert out.shape[1] - n_prompt == DECODE_TOKENS
    # Decode speed excludes the prompt: time for 128 tokens minus time for the first one.
    decode_s = statistics.median(full) - statistics.median(one)
    result["prefill"] = {
        "prompt_tokens": n_prompt,
        "median_s": round(statistics.median(prefill), 3),
        "tokens_per_s": round(n_prompt / statistics.median(prefill), 1),
    }
    result["decode"] = {
        "new_tokens": DECODE_TOKENS,
        "context_tokens": n_prompt,
        "greedy": True,
        "median_generate_s": round(statistics.median(full), 3),
        "tokens_per_s": round((DECODE_TOKENS - 1) / decode_s, 1),
    }
    result["machine"]["loadavg_at_end"] = [round(x, 2) for x in os.getloadavg()]

    text = json.dumps(result, indent=2)
    print(text)
    if args.out:
        merge_class_row(args.out, result, ("dtype",))
        print(f"wrote {args.out}", file=sys.stderr)


if __name__ == "__main__":
    main()
