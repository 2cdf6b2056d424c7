"""Lossless speculative decoding measured per question: benchmarks/speculation.json and .md.

The default agent answers the first ``--n`` questions of each split twice in one process, with
``LLM_SPECULATION=off`` and with each other mode, the LLM cache off (a replayed call would time nothing).
Per split and mode: median and p95 seconds per question, the generator's tokens per forward pass (its
calls' output tokens over their passes: 1 is one token per pass over the weights), and how many questions
got the same answer, judgement and answerability reading as with speculation off (greedy decoding must
give the same tokens, up to rounding in the verification pass). The processor class and the load average
before and after are recorded: measure on a quiet machine.

Usage: python scripts/bench_speculation.py [--datasets squad200 hotpot_test] [--n 20] [--modes prompt_lookup assisted]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
from pathlib import Path

import graphs  # noqa: F401  (registers the agent and baseline graphs with agentic_rag.runner)
from agentic_rag.configuration import Settings
from agentic_rag.datasets.crag import IDK
from agentic_rag.datasets.prepare.benchmarks import benchmark_dataset
from agentic_rag.eval.markdown import markdown_table
from agentic_rag.eval.metrics import auc
from agentic_rag.eval.results import read_results
from agentic_rag.eval.runner import run_eval
from agentic_rag.llm.dtype import choose_dtype

ROOT = Path(__file__).resolve().parents[1]
# a reader reading "the same" within this: the verification pass computes the prompt's last state in a wider
# batch than a plain prefill, which moves bfloat16 sums in their last bits
READING_TOLERANCE = 0.01
SHARED = ROOT.parent / "shared" / "data"


def generation_calls(row: dict) -> list[dict]:
    return [c for e in row.get("events") or () if e.get("node") == "generate" for c in e.get("llm") or ()]


def tokens_per_pass(rows: list[dict]) -> float | None:
    calls = [c for r in rows for c in generation_calls(r) if c.get("forward_passes")]
    passes = sum(c["forward_passes"] for c in calls)
    return round(sum(c.get("output_tokens", 0) for c in calls) / passes, 3) if passes else None


def p95(values: list[float]) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(0.95 * len(ordered)))]


def reading(row: dict) -> float | None:
    return (row.get("signals") or {}).get("answerability")


def reader_auc(rows: list[dict]) -> float | None:
    """How well the reader's reading tells the answerable questions from the rest, over the questions it read."""
    read = [(int(r.get("gold") != IDK), reading(r)) for r in rows if reading(r) is not None]
    if len({y for y, _ in read}) < 2:
        return None
    return round(float(auc([y for y, _ in read], [p for _, p in read])), 4)


def summary(rows: list[dict], base: dict[str, dict] | None) -> dict:
    seconds = [r["latency_ms"] / 1000 for r in rows]
    out = {"questions": len(rows), "median_s": round(statistics.median(seconds), 2), "p95_s": round(p95(seconds), 2),
           "tokens_per_pass": tokens_per_pass(rows), "reader_auc": reader_auc(rows)}
    if base is not None:
        def same(key: str) -> int:
            return sum(r.get(key) == base[r["id"]].get(key) for r in rows)

        gaps = [abs(reading(r) - reading(base[r["id"]])) for r in rows
                if reading(r) is not None and reading(base[r["id"]]) is not None]
        out.update(same_answer=same("prediction"), same_judgement=same("judgement"),
                   same_reading=sum(g <= READING_TOLERANCE for g in gaps), reading_max_gap=round(max(gaps), 4) if gaps else None)
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--datasets", nargs="+", default=["squad200", "hotpot_test"])
    parser.add_argument("--n", type=int, default=20)
    parser.add_argument("--modes", nargs="+", default=["prompt_lookup", "assisted"])
    parser.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "speculation.json")
    parser.add_argument("--work", type=Path, help="the run folders of an earlier measurement (<split>-<mode>/): "
                        "rebuild the report from their rows, running nothing")
    args = parser.parse_args()
    settings = Settings.load(overrides={"LLM_CACHE_PATH": None, "LLM_SPECULATION": "off"})
    work = args.work or Path(tempfile.mkdtemp(prefix="bench_speculation_"))
    report = {"processor": choose_dtype(settings.llm.LLM_DTYPE).reason, "n": args.n, "load_before": os.getloadavg()[0],
              "load_after": None, "splits": {}}
    if args.work is not None:  # the machine as it was when measured, where the measuring run wrote it down
        measured = work / "measured.json"
        report.update(json.loads(measured.read_text()) if measured.is_file() else {"load_before": None})
    else:
        for mode in ("off", *args.modes):  # every model loaded and warm before anything is timed
            run_eval(benchmark_dataset(args.datasets[0], work, SHARED), "agent", settings.replace(LLM_SPECULATION=mode),
                     work / f"warm-{mode}", n=1, progress=False)
    for name in args.datasets:
        runs = {}
        for mode in ("off", *args.modes):
            folder = work / f"{name}-{mode}"
            if args.work is None:
                runs[mode] = run_eval(benchmark_dataset(name, work, SHARED), "agent", settings.replace(LLM_SPECULATION=mode),
                                      folder, n=args.n, progress=True)["rows"]
            elif rows := read_results(folder / "results.jsonl")[: args.n]:
                runs[mode] = rows
            else:
                raise SystemExit(f"{folder} holds no results.jsonl rows: --work names the folder a measurement wrote "
                                 "(<split>-<mode>/ inside it)")
        base = {r["id"]: r for r in runs["off"]}
        report["splits"][name] = {mode: summary(rows, None if mode == "off" else base) for mode, rows in runs.items()}
    if args.work is None:
        report["load_after"] = os.getloadavg()[0]
        (work / "measured.json").write_text(json.dumps({k: report[k] for k in ("processor", "load_before", "load_after")}))
    args.out.write_text(json.dumps(report, indent=1) + "\n")
    args.out.with_suffix(".md").write_text(to_markdown(report))
    print(to_markdown(report))
    return 0


def to_markdown(report: dict) -> str:
    lines = ["# Speculative decoding, per question", "",
             f"Generated by `python scripts/bench_speculation.py`: the default agent on the first {report['n']} questions of "
             f"each split, once per mode, in one process. Processor: {report['processor']}. "
             + (f"Load average {report['load_before']:.2f} before, {report['load_after']:.2f} after."
                if report["load_before"] is not None and report["load_after"] is not None else "Load average not recorded."), ""]
    with_auc = any("reader_auc" in s for modes in report["splits"].values() for s in modes.values())  # later reports
    rows = []
    for split, modes in report["splits"].items():
        for mode, s in modes.items():
            rows.append([split, mode, s["questions"], s["median_s"], s["p95_s"], s["tokens_per_pass"],
                         s.get("same_answer", "-"), s.get("same_judgement", "-"), s.get("same_reading", "-"),
                         s.get("reading_max_gap", "-")] + ([s.get("reader_auc") or "-"] if with_auc else []))
    lines += markdown_table(["split", "LLM_SPECULATION", "questions", "median s", "p95 s", "tokens per pass",
                             "same answer", "same judgement", f"reader reading within {READING_TOLERANCE}",
                             "largest reading gap"] + (["reader AUC (answerable or not)"] if with_auc else []), rows)
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    sys.exit(main())
