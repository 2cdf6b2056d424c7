"""The final check's operating frontier: could any cut on any recorded reading meet the targets?

Replays the final check of finished runs (``agentic_rag.eval.frontier``) over a grid of thresholds, one
curve per reading, and reports for each reading the most each run refuses while the false-refusal run
stays at or under the cap, and the false refusal a run needs to refuse the target share. Nothing is
chosen from it; the shipped thresholds come from the dev sweeps. It answers whether a better threshold
exists at all, or whether the readings themselves are what fall short.

    python scripts/bench_frontier.py --tag qwen-1.5b \\
        --answerable squad_test=artifacts/runs15/v17/squad200/agent/results.jsonl \\
        --run squad_test=artifacts/runs15/v17/squad200/agent/results.jsonl \\
        --run rgb_negative=artifacts/runs15/v17/rgb_negative100/agent/results.jsonl \\
        --run dev350=artifacts/calibration15_dev350/17/mean_with_probes/VERIFIER_MIN=0.425/results.jsonl
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from agentic_rag.eval.frontier import READINGS, frontier, operating_bounds  # noqa: E402
from agentic_rag.eval.plots import pyplot  # noqa: E402

MAX_FALSE_REFUSAL = 0.15
MIN_REFUSAL = 0.70
THRESHOLDS = [round(float(t), 3) for t in np.arange(0.0, 1.0001, 0.025)]


def named(spec: str) -> tuple[str, Path]:
    name, _, path = spec.partition("=")
    if not path or not Path(path).is_file():
        raise argparse.ArgumentTypeError(f"expected NAME=results.jsonl with an existing file, got {spec!r}")
    return name, Path(path)


def read(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def false_refusal_run(curves: dict[str, dict], run: str, answerable: str) -> str:
    """Whose answerable questions give ``run``'s false refusal: its own, or (a run of unanswerable
    questions only, such as RGB's negatives) ``answerable``'s at the same threshold."""
    return run if any(p["false_refusal"] is not None for p in curves[run]["answerability"]) else answerable


def summary(curves: dict[str, dict], answerable: str) -> dict[str, dict]:
    """Per reading and run: the best refusal while false refusal <= the cap, and the least false
    refusal at which the run's refusal reaches the target."""
    out: dict[str, dict] = {}
    for reading in READINGS:
        out[reading] = {}
        for run, by_reading in curves.items():
            fr_run = false_refusal_run(curves, run, answerable)
            fr = [p["false_refusal"] for p in curves[fr_run][reading]]
            ref = [p["refusal_unanswerable"] for p in by_reading[reading]]
            out[reading][run] = {"false_refusal_of": fr_run,
                                 **operating_bounds(ref, fr, MAX_FALSE_REFUSAL, MIN_REFUSAL)}
    return out


def plot(curves: dict[str, dict], answerable: str, path: Path) -> Path:
    plt = pyplot()
    runs = [r for r in curves if any(p["refusal_unanswerable"] is not None for p in curves[r]["answerability"])]
    fig, axes = plt.subplots(1, len(runs), figsize=(4.2 * len(runs), 3.8), squeeze=False)
    for ax, run in zip(axes[0], runs):
        fr_run = false_refusal_run(curves, run, answerable)
        for reading in READINGS:
            fr = [p["false_refusal"] for p in curves[fr_run][reading]]
            ref = [p["refusal_unanswerable"] for p in curves[run][reading]]
            ax.plot(fr, ref, marker=".", markersize=3, label=reading)
        ax.fill_between([0, MAX_FALSE_REFUSAL], MIN_REFUSAL, 1.0, color="green", alpha=0.12, label="targets")
        ax.set_xlim(0, 1)
        ax.set_ylim(0, 1.02)
        ax.grid(alpha=0.3)
        ax.set_xlabel(f"false refusal ({fr_run}'s answerable)")
        ax.set_ylabel("refusal on unanswerable")
        ax.set_title(run, fontsize=10)
    axes[0][0].legend(fontsize=7, loc="lower right")
    fig.suptitle("Final check replayed at every threshold, one curve per reading", fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--run", type=named, action="append", required=True, help="NAME=results.jsonl (repeatable)")
    ap.add_argument("--answerable", type=named, required=True,
                    help="NAME=results.jsonl whose answerable questions give the false refusal of runs that have none")
    ap.add_argument("--tag", required=True, help="the generator preset the runs used (names the output files)")
    ap.add_argument("--out", type=Path, default=ROOT / "benchmarks")
    args = ap.parse_args()
    runs = dict(args.run)
    answerable, answerable_path = args.answerable
    runs.setdefault(answerable, answerable_path)
    curves = {name: frontier(read(path), THRESHOLDS) for name, path in runs.items()}
    report = {
        "runs": {name: str(path.resolve().relative_to(ROOT) if path.resolve().is_relative_to(ROOT) else path)
                 for name, path in runs.items()},
        "false_refusal_of_runs_without_answerables": answerable,
        "targets": {"max_false_refusal": MAX_FALSE_REFUSAL, "min_refusal": MIN_REFUSAL},
        "summary": summary(curves, answerable),
        "curves": curves,
    }
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / f"frontier_{args.tag}.json").write_text(json.dumps(report, indent=1))
    plot(curves, answerable, args.out / f"frontier_{args.tag}.png")
    print(json.dumps(report["summary"], indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
