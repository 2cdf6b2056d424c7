"""Concurrent work on shared cores, before and after the thread policy: `eval --workers 2` (two threads
in one process) and `eval --executor ray --workers 2` (two Ray workers), each with OpenMP's default
spin-waiting and, for the threads, torch on every core per question ("before", what the package did
until issue 28), and with the package's defaults ("after": OMP_WAIT_POLICY=PASSIVE set at import;
torch keeps every core, as the in-process model runs one call at a time).

"before" is reproduced by asking libgomp for its own default spin count (GOMP_SPINCOUNT=300000, which
wins over the wait policy) and, for the threads, TORCH_THREADS set to every core. Each run is a real `agentic-rag eval`
process over the same questions (pages indexed once beforehand, served from the index cache to every
run); ``--background N`` adds N busy processes for the whole measurement, as other work sharing the
machine would. Figures: wall time, questions per minute, median question latency, load average.

    python scripts/bench_load.py [--dataset example] [--n 6] [--background 2] [--out benchmarks/under_load]
    python scripts/bench_load.py --dry-run    # the commands, without running them
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
LIBGOMP_DEFAULT_SPINCOUNT = "300000"  # what libgomp spins before sleeping when OMP_WAIT_POLICY is unset
CONFIGS = (("local", 2), ("ray", 2))  # (executor, workers)


def policy_env(policy: str, executor: str, cores: int) -> tuple[dict[str, str], list[str]]:
    """(environment, overrides) of a run under ``policy``: before or after (a Ray worker already ran
    torch on the CPUs it reserved; only its spin-waiting changed)."""
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("AGENTIC_RAG_", "OMP_", "GOMP_")) or k == "AGENTIC_RAG_PRESET"}
    env["PYTHONPATH"] = str(ROOT)
    if policy == "before":
        threads = ["-o", f"TORCH_THREADS={cores}"] if executor == "local" else []
        return {**env, "GOMP_SPINCOUNT": LIBGOMP_DEFAULT_SPINCOUNT}, threads
    return env, []


def eval_command(dataset: str, n: int, executor: str, workers: int, out: Path, overrides: list[str]) -> list[str]:
    return [sys.executable, "-m", "agentic_rag.cli", "eval", "--dataset", dataset, "--n", str(n),
            "--executor", executor, "--workers", str(workers), "--out", str(out), "--overwrite", *overrides]


def _spin() -> None:  # pragma: no cover - a background load
    while True:
        pass


def run_one(policy: str, executor: str, workers: int, args, scratch: Path, cores: int) -> dict:
    env, overrides = policy_env(policy, executor, cores)
    overrides = [*overrides, "-o", f"ARTIFACTS_DIR={scratch / 'artifacts'}", "-o", f"INDEX_CACHE_DIR={scratch / 'cache'}"]
    out = scratch / "runs" / f"{policy}-{executor}-{workers}"
    cmd = eval_command(args.dataset, args.n, executor, workers, out, overrides)
    if args.dry_run:
        shown = {k: env[k] for k in ("GOMP_SPINCOUNT",) if k in env}
        print(" ".join(f"{k}={v}" for k, v in shown.items()), " ".join(cmd))
        return {}
    load_before = os.getloadavg()[0]
    t0 = time.perf_counter()
    try:
        done = subprocess.run(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                              timeout=args.timeout_s)
    except subprocess.TimeoutExpired:  # recorded, not fatal: what did not finish under load is a result
        return {"policy": policy, "executor": executor, "workers": workers, "questions": 0,
                "wall_s": f"> {args.timeout_s:.0f} (stopped)", "questions_per_min": 0.0, "latency_p50_s": "-",
                "accuracy": "-", "load_before": round(load_before, 2), "load_after": round(os.getloadavg()[0], 2)}
    wall = time.perf_counter() - t0
    if done.returncode != 0:
        raise SystemExit(f"{policy} {executor} x{workers} failed: {done.stderr.strip().splitlines()[-1:]}")
    summary = json.loads((out / "summary.json").read_text())
    return {"policy": policy, "executor": executor, "workers": workers, "questions": summary["n"],
            "wall_s": round(wall, 1), "questions_per_min": round(summary["n"] / wall * 60, 2),
            "latency_p50_s": round(summary["latency_p50_ms"] / 1000, 2), "accuracy": summary["accuracy"],
            "load_before": round(load_before, 2), "load_after": round(os.getloadavg()[0], 2)}


def to_markdown(report: dict) -> str:
    lines = ["# Under load: concurrent questions on shared cores, before and after the thread policy", "",
             f"`scripts/bench_load.py` on {report['cores']} cores, {report['questions']} questions of "
             f"`{report['dataset']}`, {report['background']} busy background process(es). before: libgomp's "
             "default spin-waiting, torch on every core; after: OMP_WAIT_POLICY=PASSIVE (set at import), torch "
             "on every core (the in-process model runs one call at a time).", "",
             "| executor | workers | policy | wall (s) | q/min | median latency (s) | accuracy | load before -> after |",
             "|---|---|---|---|---|---|---|---|"]
    for r in report["runs"]:
        lines.append(f"| {r['executor']} | {r['workers']} | {r['policy']} | {r['wall_s']} | {r['questions_per_min']} | "
                     f"{r['latency_p50_s']} | {r['accuracy']} | {r['load_before']} -> {r['load_after']} |")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--dataset", default="example")
    ap.add_argument("--n", type=int, default=6)
    ap.add_argument("--background", type=int, default=0, help="busy processes running throughout (shared cores)")
    ap.add_argument("--out", default="benchmarks/under_load", help="writes OUT.json and OUT.md")
    ap.add_argument("--executors", nargs="+", choices=[e for e, _ in CONFIGS], default=[e for e, _ in CONFIGS])
    ap.add_argument("--timeout-s", type=float, default=1800.0, help="a run still going after this is stopped and "
                    "recorded as such")
    ap.add_argument("--dry-run", action="store_true", help="print the commands only")
    args = ap.parse_args(argv)
    from agentic_rag import usable_cpus

    cores = usable_cpus()
    scratch = Path(tempfile.mkdtemp(prefix="bench-load-"))
    spinners = [] if args.dry_run else [multiprocessing.Process(target=_spin, daemon=True) for _ in range(args.background)]
    for p in spinners:
        p.start()
    try:
        if not args.dry_run:  # index every question once, so no run pays for it
            env, overrides = policy_env("after", "local", cores)
            subprocess.run(eval_command(args.dataset, args.n, "local", 1, scratch / "runs" / "warm",
                                        [*overrides, "-o", f"ARTIFACTS_DIR={scratch / 'artifacts'}",
                                         "-o", f"INDEX_CACHE_DIR={scratch / 'cache'}"]),
                           env=env, check=True, stdout=subprocess.DEVNULL)
        runs = [run_one(policy, executor, workers, args, scratch, cores)
                for executor, workers in CONFIGS if executor in args.executors for policy in ("before", "after")]
    finally:
        for p in spinners:
            p.terminate()
    if args.dry_run:
        return 0
    report = {"cores": cores, "dataset": args.dataset, "questions": args.n, "background": args.background, "runs": runs}
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.with_suffix(".json").write_text(json.dumps(report, indent=2))
    out.with_suffix(".md").write_text(to_markdown(report))
    print(to_markdown(report))
    return 0


if __name__ == "__main__":
    sys.exit(main())
