"""The abstention targets, measured: SQuAD 2.0 test sample (200) and RGB negative rejection (100).

Reads the finished runs (agent and baseline, same model and settings) and writes
benchmarks/abstention.json (the default generator) or benchmarks/abstention_<TAG>.json (another
generator, e.g. ``--tag qwen-1.5b`` for runs made with ``--preset qwen-1.5b``) with each target, both
systems' figures and whether it holds:
refusal on unanswerable >= 70%, false refusal on answerable <= 15%, hallucination at most half the
baseline's, and every refusal before generation made without an LLM call.

Usage: python scripts/bench_abstention.py [--squad RUNS_DIR] [--rgb RUNS_DIR] [--tag TAG]
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np

from agentic_rag.eval.compare import copy_run_files
from agentic_rag.eval.metrics import wilson_interval
from agentic_rag.eval.refusals import missing_report
from agentic_rag.eval.results import read_results

ROOT = Path(__file__).resolve().parents[1]


def load(run_dir: Path) -> dict:
    path = run_dir / "summary.json"
    if not path.is_file():
        raise SystemExit(f"{run_dir}: no summary.json (run scripts/bench_agent_vs_baseline.py "
                         "--datasets squad200 rgb_negative100 first, or give --squad/--rgb run folders)")
    return json.loads(path.read_text())


def targets(agent: dict, base: dict) -> dict:
    """Each target with the agent's figure, its 95% interval over the questions it is measured on
    (sampling noise of the split: a miss inside it is not yet a measured miss, nor a pass a pass)."""
    unanswerable = agent.get("unanswerable") or agent["n"]
    out = {
        "refusal_rate_unanswerable >= 0.70": {
            "agent": agent["refusal_rate_unanswerable"],
            "interval_95": wilson_interval(agent["refusal_rate_unanswerable"] or 0.0, unanswerable),
            "holds": (agent["refusal_rate_unanswerable"] or 0) >= 0.70},
        "hallucination <= baseline / 2": {"agent": agent["hallucination"], "baseline": base["hallucination"],
                                          "interval_95": wilson_interval(agent["hallucination"], agent["n"]),
                                          "holds": agent["hallucination"] <= base["hallucination"] / 2},
        "refused before generation without an LLM call": {
            "refused_before_generation": agent["refused_before_generation"],
            "with_llm_call": agent["refused_before_generation_with_llm_call"],
            "with_generator_call": agent["refused_before_generation_with_generator_call"],
            "holds": agent["refused_before_generation_with_generator_call"] == 0},
    }
    if agent.get("answerable"):
        out["false_refusal_rate <= 0.15"] = {
            "agent": agent["false_refusal_rate"],
            "interval_95": wilson_interval(agent["false_refusal_rate"], agent["answerable"]),
            "holds": agent["false_refusal_rate"] <= 0.15}
    return out


def probe_auc(run_dir: Path) -> dict:
    """How well the answerability probe separated answerable from unanswerable questions in a run
    (questions that reached the generator; AUC is undefined when only one kind is present)."""
    from agentic_rag.datasets.crag import IDK
    from agentic_rag.eval.metrics import auc

    rows = [r for r in read_results(run_dir / "results.jsonl") if (r.get("signals") or {}).get("answerability") is not None]
    y = np.array([int(r["gold"] != IDK) for r in rows])
    s = np.array([r["signals"]["answerability"] for r in rows])
    value = auc(y, s)  # NaN when only one kind is present
    return {"scored": len(rows), "auc": None if np.isnan(value) else round(value, 3),
            "median_unanswerable": round(float(np.median(s[y == 0])), 3) if (y == 0).any() else None}


def leaked_negatives(run_dir: Path) -> dict | None:
    """RGB chose its negative snippets by *not containing the answer string*; some still state the
    answer in other words ("Tampa Bay, Florida" for "Tampa, Florida"), and answering those is not
    hallucinating. A property of the data, not of any system: a negative counts as leaked when every
    content word of the real answer (or of one of its alternatives) occurs in its snippets. The
    target is still measured on all of them; this says how much of the miss such questions explain."""
    from agentic_rag.datasets.crag import iter_records
    from agentic_rag.eval.rows import is_refusal
    from agentic_rag.text import tokenize

    rows = read_results(run_dir / "results.jsonl")
    if not any(r.get("world_answer") for r in rows):
        return None
    config = json.loads((run_dir / "config.json").read_text())
    leaked = set()
    for rec in iter_records(ROOT / config["dataset"]):
        answers = [getattr(rec, "world_answer", None) or ""] + list(getattr(rec, "world_alternatives", None) or [])
        words = set(tokenize(" ".join(f"{r.page_snippet} {r.page_result}" for r in rec.search_results)))
        if any((needed := set(tokenize(a))) and needed <= words for a in answers):
            leaked.add(rec.interaction_id)
    clean = [r for r in rows if r["id"] not in leaked]
    refused = sum(map(is_refusal, clean))
    return {"leaked": len(rows) - len(clean), "clean": len(clean),
            "refusal_rate_clean": round(refused / len(clean), 3) if clean else None,
            "interval_95": wilson_interval(refused / len(clean), len(clean)) if clean else None}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--squad", type=Path, default=ROOT / "artifacts" / "runs" / "agent_vs_baseline" / "squad200")
    ap.add_argument("--rgb", type=Path, default=ROOT / "artifacts" / "runs" / "agent_vs_baseline" / "rgb_negative100")
    ap.add_argument("--tag", default="", help="generator tag of the runs (empty: the default generator)")
    args = ap.parse_args()
    runs_dest = ROOT / "benchmarks" / "abstention" / args.tag if args.tag else ROOT / "benchmarks" / "abstention"
    report = {}
    for name, runs in (("squad2_test200", args.squad), ("rgb_negative100", args.rgb)):
        agent, base = load(runs / "agent"), load(runs / "baseline")
        keys = ("n", "accuracy", "hallucination", "missing", "score", "accuracy_answerable", "refusal_rate_unanswerable",
                "false_refusal_rate", "false_acceptance_rate", "idk_with_citations", "answered_with_world_answer",
                "tokens_per_q")
        report[name] = {"agent": {k: agent.get(k) for k in keys}, "baseline": {k: base.get(k) for k in keys},
                        "targets": targets(agent, base), "probe": probe_auc(runs / "agent")}
        report[name]["missing"] = missing_report(read_results(runs / "agent" / "results.jsonl"))
        leaks = leaked_negatives(runs / "agent")
        if leaks:
            report[name]["leaked_negatives"] = leaks
        dest = runs_dest / name
        dest.mkdir(parents=True, exist_ok=True)
        for system in ("agent", "baseline"):
            copy_run_files(runs / system, dest, system)
    out = ROOT / "benchmarks" / (f"abstention_{args.tag}.json" if args.tag else "abstention.json")
    out.write_text(json.dumps(report, indent=2) + "\n")
    print(json.dumps(report, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
