"""Throughput of the `openai` backend against the number of concurrent requests.

Starts `transformers serve` on 127.0.0.1 with the packaged 0.5B (the stand-in here for vLLM), then
evaluates the agent on a few bundled questions with `--workers` 1, 2 and 4, so that 1, 2 and 4
questions send their LLM calls to the server at once. Each question's pages are indexed before any
timing. Reports questions per minute, completion tokens per second (the server's decoded tokens over
the run's wall time) and the load average (the machine is shared; server and eval compete for its cores).

    python scripts/bench_openai_concurrency.py [--n 8] [--concurrency 1,2,4] [--max-tokens 32]
        [--continuous-batching] [--out benchmarks/openai_concurrency]
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path

from agentic_rag.configuration import Settings
from agentic_rag.eval.runner import run_eval
from agentic_rag.llm.packaged import FAST_MODEL, ensure_converted
from testkit.bench import HIGH_LOAD, cpu_model, index_all, load_average, write_outputs
from testkit.servers import console_script, free_port, running


def _stage_sum(rows: list[dict], field: str) -> int:
    return sum(int(v.get(field) or 0) for r in rows for v in (r["tokens"].get("detail") or {}).values())


def _run(concurrency: int, dataset: str, n: int, settings: Settings, out: Path) -> dict:
    before = load_average()
    t0 = time.perf_counter()
    res = run_eval(dataset, "agent", settings, out / f"c{concurrency}", n=n, workers=concurrency, progress=False, overwrite=True)
    wall = time.perf_counter() - t0
    rows = res["rows"]
    completion = _stage_sum(rows, "output_tokens")
    return {
        "concurrency": concurrency,
        "questions": len(rows),
        "wall_s": round(wall, 1),
        "questions_per_min": round(len(rows) / wall * 60, 2),
        "llm_calls": sum(r["llm_calls"] for r in rows),
        "prompt_tokens": _stage_sum(rows, "input_tokens"),
        "completion_tokens": completion,
        "completion_tokens_per_s": round(completion / wall, 2),
        "prompt_tokens_per_s": round(_stage_sum(rows, "input_tokens") / wall, 2),
        "llm_unavailable": res["summary"]["llm_unavailable"],
        "accuracy": res["summary"]["accuracy"],
        "load_before": before,
        "load_after": load_average(),
    }


def to_markdown(report: dict) -> str:
    m = report["machine"]
    mode = "with --continuous-batching" if report["continuous_batching"] else "its default, without continuous batching"
    # reports from before the preset was recorded ran the defaults of the time, the 0.5B's: now preset fast
    preset = f"`{report['preset']}`" if "preset" in report else "`default` as it was then, now `fast`"
    lines = [
        "# The openai backend against concurrent requests",
        "",
        f"`scripts/bench_openai_concurrency.py` on {m['cores']} cores ({m['cpu']}): `transformers serve` "
        f"({mode}) serving the packaged 0.5B (agent settings: preset {preset}) on 127.0.0.1, and `eval --workers C` of the agent on "
        f"{report['questions']} questions of `{report['dataset']}` with MAX_OUTPUT_TOKENS={report['max_tokens']}; "
        "server and eval share the machine.",
        "",
        "| concurrent requests | wall (s) | q/min | LLM calls | prompt tokens | prompt tok/s | completion tokens | "
        "completion tok/s | unavailable | load avg before -> after |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in report["runs"]:
        busy = " (busy machine)" if max(r["load_before"][0], r["load_after"][0]) > HIGH_LOAD * m["cores"] else ""
        lines.append(f"| {r['concurrency']} | {r['wall_s']} | {r['questions_per_min']} | {r['llm_calls']} | "
                     f"{r['prompt_tokens']} | {r['prompt_tokens_per_s']} | {r['completion_tokens']} | "
                     f"{r['completion_tokens_per_s']} | {r['llm_unavailable']} | "
                     f"{r['load_before'][0]} -> {r['load_after'][0]}{busy} |")
    lines += ["", "Token rates are the server's tokens over the run's wall time, which includes the agent's own "
              f"work between calls. Load average: 1-minute; rows marked busy had more than {HIGH_LOAD:g} per core.", ""]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--dataset", default="example")
    ap.add_argument("--n", type=int, default=8)
    ap.add_argument("--concurrency", default="1,2,4")
    ap.add_argument("--max-tokens", type=int, default=32)
    ap.add_argument("--continuous-batching", action="store_true", help="start the server with --continuous-batching")
    ap.add_argument("--out", default="benchmarks/openai_concurrency", help="writes OUT.json and OUT.md")
    # the server is started on the packaged 0.5B's folder, so the agent runs that model's thresholds
    ap.add_argument("--preset", default="fast", help="settings preset of the agent (default: fast, the 0.5B's)")
    args = ap.parse_args(argv)
    scratch = Path(tempfile.mkdtemp(prefix="bench-openai-"))
    local = Settings.load(preset=args.preset,
                          overrides={"ARTIFACTS_DIR": str(scratch / "artifacts"), "INDEX_CACHE_DIR": str(scratch / "cache")})
    model_dir = ensure_converted(local.paths.MODEL_CACHE_DIR, FAST_MODEL)
    port = free_port()
    base_url = f"http://127.0.0.1:{port}/v1"
    # `transformers serve` pinned to a folder accepts requests naming that path; /v1/models scans the hub cache
    settings = local.replace(LLM_BACKEND="openai", LLM_MODEL=str(model_dir), OPENAI_BASE_URL=base_url,
                             MAX_OUTPUT_TOKENS=args.max_tokens)
    report = {
        "machine": {"cores": os.cpu_count(), "cpu": cpu_model()},
        "dataset": args.dataset, "questions": args.n, "max_tokens": args.max_tokens, "preset": args.preset,
        "continuous_batching": args.continuous_batching, "load_at_start": load_average(),
    }
    print(f"indexing {args.n} questions ...", file=sys.stderr)
    report["indexing"] = index_all(args.dataset, args.n, settings)
    cmd = [*console_script("transformers"), "serve", "--host", "127.0.0.1", "--port", str(port), str(model_dir)]
    if args.continuous_batching:
        cmd.append("--continuous-batching")
    env = {**os.environ, "HF_HUB_CACHE": str(scratch / "hub"), "HF_HUB_OFFLINE": "1"}
    (scratch / "hub").mkdir()
    report["runs"] = []
    with running(cmd, base_url + "/models", scratch / "serve.log", 300, env=env):
        run_eval(args.dataset, "agent", settings, scratch / "warm", n=1, progress=False, overwrite=True)  # the server's first load
        for c in (int(x) for x in args.concurrency.split(",")):
            print(f"concurrency {c} ...", file=sys.stderr)
            report["runs"].append(_run(c, args.dataset, args.n, settings, scratch / "runs"))
            print(json.dumps(report["runs"][-1]), file=sys.stderr)
    report["load_at_end"] = load_average()
    write_outputs(args.out, report, to_markdown(report))
    return 0


if __name__ == "__main__":
    sys.exit(main())
