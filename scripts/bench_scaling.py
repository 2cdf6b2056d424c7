"""Questions per minute of `eval --executor ray` against the number of Ray workers on this machine.

The real packaged 0.5B generator answers a small fixed question set (default: the bundled CRAG
example, ten questions with five HTML pages each) with the local executor (threads in this process,
the reference) and with 1, 2 and 4 Ray workers on a local Ray instance. Each question's pages are
indexed once before any timing (the index cache then serves every configuration alike), and that
cold indexing is measured on its own, since a full run pays it once per question too.

Figures per configuration: wall time including the workers' start (Ray up, models loaded), the start
alone, questions per minute over the whole wall and over the answering part, the median question
latency inside a worker, and the machine's load average before and after (the machine is shared).

    python scripts/bench_scaling.py [--dataset example] [--n 10] [--workers 1,2,4] [--out benchmarks/scaling]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

import graphs  # noqa: F401,E402  (registers the agent's graph with the runner, as the CLI does)
from agentic_rag.configuration import Settings
from agentic_rag.eval.executors import LocalExecutor, RayExecutor
from agentic_rag.eval.runner import run_eval
from agentic_rag.runner import warm_up
from testkit.bench import HIGH_LOAD, cpu_model, index_all, load_average, write_outputs


def _run(name: str, workers: int, dataset: str, n: int, settings: Settings, out: Path) -> dict:
    before = load_average()
    finished: list[float] = []
    memory: list[int] = []

    def on_result(row: dict) -> None:
        finished.append(time.perf_counter() - t0)
        if name == "ray" and len(finished) == n // 2:  # every worker loaded and busy by now
            memory.extend(w["rss_mb"] for w in executor.workers_where())

    t0 = time.perf_counter()
    if name == "local":
        executor = LocalExecutor(workers)
        warm_up("agent", settings)  # what a Ray worker does when it starts, here in this process
        start_s = time.perf_counter() - t0
    else:
        executor = RayExecutor(workers, settings)
    res = run_eval(dataset, "agent", settings, out / f"{name}-{workers}", n=n, progress=False, executor=executor,
                   on_result=on_result, overwrite=True)
    wall = time.perf_counter() - t0
    if name == "ray":
        start_s = min(executor.ready_s)
    rows = res["rows"]
    answering = finished[-1] - start_s
    return {
        "executor": name,
        "workers": workers,
        "questions": len(rows),
        "wall_s": round(wall, 1),
        "start_s": round(start_s, 1),
        "workers_ready_s": executor.ready_s if name == "ray" else [round(start_s, 2)],
        "questions_per_min": round(len(rows) / wall * 60, 2),
        "answering_questions_per_min": round(len(rows) / answering * 60, 2),
        "latency_median_s": round(statistics.median(r["latency_ms"] for r in rows) / 1000, 2),
        "worker_rss_mb": memory,
        "accuracy": res["summary"]["accuracy"],
        "judgements": {r["id"]: r["judgement"] for r in rows},
        "load_before": before,
        "load_after": load_average(),
    }


CRAG_DEV_QUESTIONS = 2706  # CRAG's dev split, each question with its own 5 HTML pages
CLUSTER_MACHINES = (1, 2, 4, 8, 16)


def estimate(report: dict, questions: int = CRAG_DEV_QUESTIONS) -> dict:
    """Machine time per question (cold indexing plus answering with one Ray worker per core) and the
    wall time of ``questions`` on clusters of machines like this one; questions are independent."""
    cores = report["machine"]["cores"]
    per_core = [r for r in report["runs"] if r["executor"] == "ray" and r["workers"] == cores]
    if not per_core:
        return {}
    indexing_s = report["indexing"]["total_s"] / report["indexing"]["questions"]
    answering_s = 60.0 / per_core[0]["answering_questions_per_min"]
    per_question_s = indexing_s + answering_s
    return {
        "questions": questions, "indexing_s": round(indexing_s, 2), "answering_s": round(answering_s, 2),
        "per_question_s": round(per_question_s, 2), "indexing_share": round(indexing_s / per_question_s, 2),
        "warm_cache_machine_h": round(questions * answering_s / 3600, 1),
        "hours_by_machines": {m: round(questions * per_question_s / 3600 / m, 2) for m in CLUSTER_MACHINES},
    }


def generator(report: dict) -> str:
    """The generator a report was measured with (reports from before it was recorded: the 0.5B, then the default)."""
    if "model" not in report:
        return "the packaged 0.5B generator (the default when this was measured; now preset `fast`)"
    name = {"packaged": "the packaged 0.5B generator", "packaged-1.5b": "the packaged 1.5B generator"}.get(
        report["model"], f"`{report['model']}`")
    return f"{name} (preset `{report.get('preset') or 'default'}`)"


def to_markdown(report: dict) -> str:
    m = report["machine"]
    lines = [
        "# Scaling: questions per minute against Ray workers",
        "",
        f"`scripts/bench_scaling.py` on {m['cores']} cores ({m['cpu']}), {m['memory_gb']} GB; "
        f"{report['questions']} questions of `{report['dataset']}` answered by the agent with {generator(report)}; "
        f"each Ray worker reserves {report['cpus_per_worker']:g} CPU and runs torch on "
        f"{report['torch_threads_per_worker']} thread(s), the local executor on all {m['cores']} cores. "
        f"More workers than cores oversubscribe the machine. Pages indexed beforehand (cold indexing: median "
        f"{report['indexing']['median_s']} s per question, measured apart).",
        "",
        "| executor | workers | wall (s) | start (s) | q/min (wall) | q/min (answering) | median latency (s) | "
        "worker memory (MB) | accuracy | load avg before -> after |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in report["runs"]:
        busy = max(r["load_before"][0], r["load_after"][0]) > HIGH_LOAD * m["cores"]
        note = " (busy machine)" if busy else ""
        lines.append(
            f"| {r['executor']} | {r['workers']} | {r['wall_s']} | {r['start_s']} | {r['questions_per_min']} | "
            f"{r['answering_questions_per_min']} | {r['latency_median_s']} | "
            f"{max(r.get('worker_rss_mb') or [0]) or '-'} | {r['accuracy']} | "
            f"{r['load_before'][0]} -> {r['load_after'][0]}{note} |")
    lines += ["", "start: Ray up and the first worker's models loaded (local: the same models loaded in the process). "
              "q/min (answering): questions over the time from that start to the last answer. Worker memory: the "
              "largest resident set of a Ray worker halfway through the run. Load average: "
              f"1-minute; rows marked busy had more than {HIGH_LOAD:g} per core.", ""]
    if est := estimate(report):
        lines += [f"## A full CRAG dev run ({est['questions']:,} questions)", "",
                  f"Machine time per question: {est['indexing_s']} s of cold indexing (mean) plus {est['answering_s']} s "
                  f"of answering with one Ray worker per core = {est['per_question_s']} s; indexing is "
                  f"{est['indexing_share']:.0%} of it, so a re-run with warm caches needs {est['warm_cache_machine_h']} "
                  "machine-hours.", "",
                  f"| {m['cores']}-core machines | wall time (h) |", "|---|---|",
                  *[f"| {n} | {h} |" for n, h in est["hours_by_machines"].items()], ""]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--dataset", default="example")
    ap.add_argument("--n", type=int, default=10)
    ap.add_argument("--workers", default="1,2,4")
    ap.add_argument("--no-local", action="store_true", help="skip the local executor's reference run")
    ap.add_argument("--out", default="benchmarks/scaling", help="writes OUT.json and OUT.md")
    ap.add_argument("--preset", default=None, help="settings preset (default: the defaults)")
    args = ap.parse_args(argv)
    scratch = Path(tempfile.mkdtemp(prefix="bench-scaling-"))
    settings = Settings.load(preset=args.preset,
                             overrides={"ARTIFACTS_DIR": str(scratch / "artifacts"), "INDEX_CACHE_DIR": str(scratch / "cache")})
    report = {
        "model": settings.llm.LLM_MODEL,
        "preset": args.preset or "default",
        "machine": {"cores": os.cpu_count(), "cpu": cpu_model(),
                    "memory_gb": round(os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30, 1)},
        "dataset": args.dataset,
        "questions": args.n,
        "cpus_per_worker": settings.scale.RAY_CPUS_PER_WORKER,
        "torch_threads_per_worker": RayExecutor(1, settings).worker_settings(settings).llm.TORCH_THREADS,
        "load_at_start": load_average(),
    }
    print(f"indexing {args.n} questions (cold) ...", file=sys.stderr)
    report["indexing"] = index_all(args.dataset, args.n, settings)
    configs = ([] if args.no_local else [("local", 1)]) + [("ray", int(w)) for w in args.workers.split(",")]
    report["runs"] = []
    for name, workers in configs:
        print(f"{name} executor, {workers} worker(s) ...", file=sys.stderr)
        report["runs"].append(_run(name, workers, args.dataset, args.n, settings, scratch / "runs"))
        print(json.dumps({k: v for k, v in report["runs"][-1].items() if k != "judgements"}), file=sys.stderr)
    report["load_at_end"] = load_average()
    write_outputs(args.out, report, to_markdown(report))
    return 0


if __name__ == "__main__":
    sys.exit(main())
