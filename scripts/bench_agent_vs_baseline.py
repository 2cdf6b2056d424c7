"""Agent vs baseline, same packaged model and settings, on the bundled CRAG examples and 40 RGB questions.

Writes, per dataset, under ``benchmarks/agent_vs_baseline/<dataset>/``: each system's ``summary.json``
and ``config.json``, and ``comparison.md`` (summary side by side, paired bootstrap CI on the CRAG score
difference, and per question the two answers, reason codes, judgements, tokens and latency), and every
row of each run gzipped as ``<system>_results.jsonl.gz``. The run folders (telemetry, traces) stay
under ``artifacts/runs/``.

Usage: python scripts/bench_agent_vs_baseline.py [--datasets crag_example rgb40 squad200 rgb_negative100 hotpot_test]
       [--preset NAME] [--out benchmarks/agent_vs_baseline] [--systems agent [agent_chain_check]] [--resume]

``--systems agent`` runs the agent again and pairs it with the baseline run already in its folder: a
change to the agent alone leaves the baseline's answers as they were. ``--systems ... agent_chain_check`` also
runs the agent with ``CHAIN_CHECK`` on and pairs it with the agent (``comparison_chain_check.md``) and with
the baseline (a third run in ``comparison.md``).
"""

from __future__ import annotations

import argparse
import gzip
import json
import sys
from pathlib import Path

import graphs  # noqa: F401  (registers the agent and baseline graphs with agentic_rag.runner)
from agentic_rag.configuration import Settings, SettingsError
from agentic_rag.datasets.crag import DataError
from agentic_rag.datasets.prepare.benchmarks import benchmark_dataset
from agentic_rag.eval.compare import compare, copy_run_files, to_markdown, write_plots
from agentic_rag.eval.refusals import reader_refusals
from agentic_rag.eval.rejudge import rejudge_run, restore_run
from agentic_rag.eval.runner import run_eval

ROOT = Path(__file__).resolve().parents[1]

SHARED = ROOT.parent / "shared" / "data"


def dataset_path(name: str, work: Path) -> str:
    try:
        return benchmark_dataset(name, work, SHARED)
    except DataError as exc:
        raise SystemExit(str(exc)) from None


def seed_criteria(b: dict, a: dict) -> dict:
    """The design's acceptance criteria, each with the two figures and whether it holds."""
    def holds(x):
        return bool(x)

    ratio = a["tokens_per_q"] / b["tokens_per_q"] if b["tokens_per_q"] else None
    return {
        "tokens_per_q <= 1.2x baseline": {"baseline": b["tokens_per_q"], "agent": a["tokens_per_q"],
                                           "holds": holds(ratio is not None and ratio <= 1.2)},
        "overlap >= baseline": {"baseline": b.get("overlap_mean"), "agent": a.get("overlap_mean"),
                                "holds": holds((a.get("overlap_mean") or 0) >= (b.get("overlap_mean") or 0))},
        "f1_short >= baseline": {"baseline": b["f1_short"], "agent": a["f1_short"], "holds": a["f1_short"] >= b["f1_short"]},
        "fewer wrong-on-answerable": {"baseline": b.get("wrong_on_answerable"), "agent": a.get("wrong_on_answerable"),
                                      "holds": holds((a.get("wrong_on_answerable") or 0) < (b.get("wrong_on_answerable") or 0))},
        "idk_with_citations == 0": {"baseline": b.get("idk_with_citations"), "agent": a.get("idk_with_citations"),
                                    "holds": a.get("idk_with_citations") == 0},
    }


# each run of a split: its folder's name -> (the system, the settings it changes)
RUNS = {"baseline": ("baseline", {}), "agent": ("agent", {}), "agent_chain_check": ("agent", {"CHAIN_CHECK": True})}


def _frontier_figures(paired: dict) -> dict | None:
    """A pair's kept frontier (eval/frontier.kept_frontier) without its curve: the run's point, the ceiling
    with every draft answered, and the AUC of P(right)."""
    f = paired.get("kept_frontier")
    return {k: f[k] for k in ("cut", "as_run", "every_draft", "auc")} if f else None


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--datasets", nargs="+", default=["crag_example", "rgb40"])
    ap.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "agent_vs_baseline")
    ap.add_argument("--preset", default=None, help="settings preset of both systems (default: the defaults; "
                    "`--preset fast --out benchmarks/agent_vs_baseline/fast` for the 0.5B figures)")
    ap.add_argument("--override", nargs="*", default=[], metavar="KEY=VALUE")
    ap.add_argument("--systems", nargs="+", choices=tuple(RUNS), default=["baseline", "agent"],
                    help="the runs to make again; the others are read from their existing run folders. "
                         "agent_chain_check (the agent with CHAIN_CHECK on) is paired with the agent in "
                         "comparison_chain_check.md, wherever its folder holds a finished run")
    ap.add_argument("--rejudge-only", action="store_true", help="re-score the existing runs with the current judge "
                    "(a run not under ARTIFACTS_DIR is restored from its committed rows first)")
    ap.add_argument("--resume", action="store_true", help="continue the runs a kill stopped (same settings), instead "
                    "of starting them again: the long splits (hotpot_test) take more than one sitting")
    args = ap.parse_args()
    try:
        settings = Settings.load(preset=args.preset, overrides=args.override)
    except SettingsError as exc:
        raise SystemExit(f"settings error: {exc}") from None
    runs_root = Path(settings.paths.ARTIFACTS_DIR) / "runs" / ("agent_vs_baseline" + (f"_{args.preset}" if args.preset else ""))
    # datasets not re-run this time keep their last figures
    overview_path = args.out / "overview.json"
    overview = json.loads(overview_path.read_text()) if overview_path.is_file() else {}
    for name in args.datasets:
        run_dirs = {}
        for label, (system, changes) in RUNS.items():
            run_dir = runs_root / name / label
            optional = label == "agent_chain_check" and label not in args.systems
            if optional and not (run_dir / "summary.json").is_file() and not (
                    args.rejudge_only and (args.out / name / f"{label}_results.jsonl.gz").is_file()):
                continue
            if args.rejudge_only:
                if not (run_dir / "results.jsonl").is_file():  # a clean checkout: the committed run's rows
                    if optional and not (args.out / name / f"{label}_results.jsonl.gz").is_file():
                        continue
                    restore_run(args.out / name, label, run_dir)
                rejudge_run(run_dir)
            elif label not in args.systems:
                if not (run_dir / "summary.json").is_file():
                    raise SystemExit(f"{run_dir} holds no finished {label} run to pair with: run it too (--systems)")
            else:
                res = run_eval(dataset_path(name, runs_root), system, settings.replace(**changes) if changes else settings,
                               run_dir, resume=args.resume, overwrite=not args.resume)
                print(json.dumps(res["summary"]), file=sys.stderr)
            run_dirs[label] = run_dir
        # the chain-check run too, where there is one: its right answers kept from the baseline, per question type
        result = compare(list(run_dirs.values()))
        dest = args.out / name
        dest.mkdir(parents=True, exist_ok=True)
        (dest / "comparison.md").write_text(to_markdown(result, f"Agent vs baseline on {name}", write_plots(result, dest)))
        for label, run_dir in run_dirs.items():
            copy_run_files(run_dir, dest, label)
            # every row, so the judge's rules can be re-applied later without the model (--rejudge-only
            # reads the run folder; gunzip this into one to re-judge a committed run)
            (dest / f"{label}_results.jsonl.gz").write_bytes(
                gzip.compress((run_dir / "results.jsonl").read_bytes(), compresslevel=9, mtime=0))
        b, a = (json.loads((run_dirs[label] / "summary.json").read_text()) for label in ("baseline", "agent"))
        overview[name] = {
            "questions": a["n"],
            "hallucination_baseline": b["hallucination"],
            "hallucination_agent": a["hallucination"],
            "hallucinated_questions_baseline": round(b["hallucination"] * b["n"]),
            "hallucinated_questions_agent": round(a["hallucination"] * a["n"]),
            "tokens_per_q_baseline": b["tokens_per_q"],
            "tokens_per_q_agent": a["tokens_per_q"],
            "token_ratio": round(a["tokens_per_q"] / b["tokens_per_q"], 3) if b["tokens_per_q"] else None,
            "score_baseline": b["score"],
            "score_agent": a["score"],
            "paired": result["paired"][0]["score_difference"],
            # of the baseline's right answers, the share the agent also gets right (not refused, not wrong)
            "right_answers_kept": result["paired"][0]["right_answers_kept"],
            "baseline_right_answers": result["paired"][0]["right_answers_of_base"],
            "reader_refusals": reader_refusals(result["runs"][1]["rows"]),
            # the same drafts at every cut of P(right): how many right answers the cut could keep at most
            "kept_frontier": _frontier_figures(result["paired"][0]),
            "seed_criteria": seed_criteria(b, a),
        }
        if "agent_chain_check" in run_dirs:
            chained = compare([run_dirs["agent"], run_dirs["agent_chain_check"]])
            (dest / "comparison_chain_check.md").write_text(to_markdown(chained, f"CHAIN_CHECK on against off on {name}"))
            on = json.loads((run_dirs["agent_chain_check"] / "summary.json").read_text())
            overview[name]["chain_check"] = {
                "score": on["score"], "paired_vs_agent": chained["paired"][0]["score_difference"],
                "tokens_per_q": on["tokens_per_q"], "token_ratio": round(on["tokens_per_q"] / b["tokens_per_q"], 3)
                if b["tokens_per_q"] else None,
                "right_answers_kept": result["paired"][1]["right_answers_kept"],
                "kept_frontier": _frontier_figures(result["paired"][1])}
    overview_path.write_text(json.dumps(overview, indent=2) + "\n")
    print(json.dumps(overview, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
