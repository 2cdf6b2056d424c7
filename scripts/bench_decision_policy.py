"""The fitted decision against the threshold policy, on held-out test splits (issue: one calibrated decision).

For each dataset, runs the agent once more with ``GATE_POLICY=fitted`` (the decision file fitted on a
dev split) and reads the threshold policy's agent run and the baseline run that
``scripts/bench_agent_vs_baseline.py`` left under ``artifacts/runs/agent_vs_baseline[_PRESET]/<dataset>/``
(same model, same questions). Reports, per dataset:

- mean risk over the coverage both policies reach, each ranking its own answers by its own confidence
  (the thresholds by support x faithfulness x relevance, the fitted decision by its P(right));
- the CRAG score at each policy's operating point, with the paired 95% bootstrap interval of the
  difference;
- refusal on unanswerable and false refusal on answerable questions;
- tokens per question against the baseline's;
- the fitted P(right) cut at every value instead of the decision's own cut: the most it could refuse
  within the false-refusal target and the false refusal its refusal target would cost. The cut is
  chosen on the test questions themselves, so these are bounds on what any cut of that P could reach,
  not operating points.

Writes benchmarks/decision/policy_<TAG>.json, policy_<TAG>.md, policy_<TAG>_<dataset>.png (risk-coverage)
and policy_<TAG>_<dataset>_refusal.png (refusal against false refusal).

Usage: python scripts/bench_decision_policy.py --decision-file FILE [--datasets squad200 rgb40]
       [--preset NAME] [--tag TAG] [--reuse]
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import graphs  # noqa: F401  (registers the agent and baseline graphs with agentic_rag.runner)
from agentic_rag.baug.fitted import cut_for
from agentic_rag.configuration import Settings, SettingsError
from agentic_rag.eval.compare import paired_bootstrap, paired_ids
from agentic_rag.eval.frontier import cut_curve, operating_bounds, p_right_by_question
from agentic_rag.eval.markdown import markdown_table
from agentic_rag.eval.metrics import auc, run_summary
from agentic_rag.eval.plots import (
    common_coverage,
    confidence_of,
    mean_risk,
    plot_refusal_tradeoff,
    plot_risk_coverage,
    risk_coverage,
)
from agentic_rag.eval.results import read_results
from agentic_rag.eval.rows import gold_groups
from agentic_rag.eval.runner import run_eval
from agentic_rag.training.probe_report import required_auc

ROOT = Path(__file__).resolve().parents[1]
# the decision issue's refusal targets on SQuAD 2.0: refuse >= 75% of unanswerable at <= 12% false refusal
MAX_FALSE_REFUSAL, MIN_REFUSAL = 0.12, 0.75


def with_p_right(rows: list[dict], run_dir: Path) -> list[dict]:
    """The fitted run's rows, each with the P(right) its last round's telemetry gave (None where the
    decision was made before any draft was judged)."""
    last = p_right_by_question(run_dir)
    return [{**r, "p_right": last.get(r["id"])} for r in rows]


def p_right(row: dict) -> float:
    """How the fitted decision ranks its own answers: its P(right)."""
    return row["p_right"] if row.get("p_right") is not None else 0.0


def measure(name: str, runs: dict[str, Path]) -> dict:
    read = {k: read_results(d / "results.jsonl") for k, d in runs.items()}
    read["fitted"] = with_p_right(read["fitted"], runs["fitted"])
    rows = {k: {r["id"]: r for r in v} for k, v in read.items()}
    ids = paired_ids(*read.values())  # answered by all three, gold usable: as eval.compare pairs runs
    if not ids:
        raise SystemExit(f"{name}: the three runs share no question")
    pick = {k: [rows[k][i] for i in ids] for k in rows}
    curves = {"thresholds": risk_coverage(pick["thresholds"], confidence_of), "fitted": risk_coverage(pick["fitted"], p_right)}
    upto = common_coverage(list(curves.values()))
    summaries = {k: run_summary(k, pick[k], 0) for k in pick}
    base_tokens = summaries["baseline"]["tokens_per_q"]
    out = {"questions": len(ids), "common_coverage": upto, "policies": {}}
    for policy in ("thresholds", "fitted"):
        s = summaries[policy]
        out["policies"][policy] = {
            "mean_risk": mean_risk(curves[policy], upto) if upto is not None else None,
            "coverage": curves[policy][-1][0] if curves[policy] else 0.0,
            "score": s["score"], "hallucination": s["hallucination"],
            "refusal_unanswerable": s["refusal_rate_unanswerable"], "false_refusal": s["false_refusal_rate"],
            "tokens_per_q": s["tokens_per_q"],
            "token_ratio": round(s["tokens_per_q"] / base_tokens, 3) if base_tokens else None,
        }
    out["baseline"] = {"score": summaries["baseline"]["score"], "tokens_per_q": base_tokens}
    out["score_difference"] = paired_bootstrap([r["score"] for r in pick["thresholds"]], [r["score"] for r in pick["fitted"]])
    out["flipped"] = [{"id": i, "thresholds": f"{rows['thresholds'][i]['reason']} {rows['thresholds'][i]['judgement']}",
                       "fitted": f"{rows['fitted'][i]['reason']} {rows['fitted'][i]['judgement']}"}
                      for i in ids if rows["thresholds"][i]["judgement"] != rows["fitted"][i]["judgement"]]
    cut = cut_for(json.loads((runs["fitted"] / "config.json").read_text())["settings"]["WRONG_ANSWER_COST"])
    curve = cut_curve(pick["fitted"], lambda r: r["p_right"], cut,
                      [-1.0] + sorted({r["p_right"] for r in pick["fitted"] if r["p_right"] is not None}))
    answerable, unanswerable = gold_groups(pick["fitted"])
    scored = [(1, r["p_right"]) for r in answerable if r["p_right"] is not None] + \
             [(0, r["p_right"]) for r in unanswerable if r["p_right"] is not None]
    out["every_cut"] = {"cut": cut, **operating_bounds([c["refusal_unanswerable"] for c in curve],
                                                       [c["false_refusal"] for c in curve], MAX_FALSE_REFUSAL, MIN_REFUSAL),
                        "auc_answerable_vs_unanswerable": round(auc([y for y, _ in scored], [p for _, p in scored]), 3),
                        "auc_needed": required_auc(MIN_REFUSAL, MAX_FALSE_REFUSAL)}
    out["rows_thresholds"], out["rows_fitted"] = pick["thresholds"], pick["fitted"]  # for the plots, not the report
    out["curve_fitted"] = curve
    return out


def to_markdown(report: dict) -> str:
    lines = [f"# The fitted decision against the thresholds ({report['tag']})", "",
             (f"Decision file: `{report['decision_file']}`. Each policy ranks its own answers by its own confidence; "
              "mean risk is over the coverage both reach (lower is better). Score difference: fitted minus "
              "thresholds, paired 95% bootstrap interval."), ""]
    lines += markdown_table(
        ["dataset", "policy", "mean risk", "coverage", "score", "hallucination", "refusal (unanswerable)",
         "false refusal", "tokens/q", "x baseline"],
        [[name, policy, p["mean_risk"], f"{p['coverage']:.2f}", f"{p['score']:+.3f}", f"{p['hallucination']:.3f}",
          p["refusal_unanswerable"], p["false_refusal"], f"{p['tokens_per_q']:.0f}", p["token_ratio"]]
         for name, d in report["datasets"].items() for policy, p in d["policies"].items()])
    lines.append("")
    lines += markdown_table(
        ["dataset", "questions", "common coverage", "score difference (95% interval)", "judgements flipped"],
        [[name, d["questions"], d["common_coverage"],
          f"{sd['diff']:+.3f} ({sd['ci95_low']:+.3f} to {sd['ci95_high']:+.3f})", len(d["flipped"])]
         for name, d in report["datasets"].items() for sd in [d["score_difference"]]])
    lines += ["", (f"The fitted P(right) cut at every value instead of its own cut (chosen on these questions, so a bound, "
                   f"not an operating point): the most it refuses of the unanswerable questions while false refusal stays "
                   f"at or under {MAX_FALSE_REFUSAL}, and the false refusal at which it refuses {MIN_REFUSAL} of them; "
                   "the AUC of P(right), answerable vs unanswerable questions, beside the AUC an equal-variance binormal "
                   "score needs to reach both targets."), ""]
    lines += markdown_table(
        ["dataset", "cut", f"best refusal, false refusal <= {MAX_FALSE_REFUSAL}", f"false refusal at refusal >= {MIN_REFUSAL}",
         "AUC of P(right)", "AUC needed"],
        [[name, c["cut"], c["best_refusal_within_cap"], c["false_refusal_to_reach_target"],
          c["auc_answerable_vs_unanswerable"], c["auc_needed"]]
         for name, d in report["datasets"].items() for c in [d["every_cut"]]])
    return "\n".join(lines) + "\n"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--decision-file", type=Path, required=True)
    ap.add_argument("--datasets", nargs="+", default=["squad200", "rgb40"])
    ap.add_argument("--preset", default=None)
    ap.add_argument("--tag", default=None, help="name of the output files (default: the decision file's stem)")
    ap.add_argument("--reuse", action="store_true", help="re-read the fitted runs already finished, running only the missing ones")
    ap.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "decision")
    args = ap.parse_args()
    if not args.decision_file.is_file():
        raise SystemExit(f"no decision file at {args.decision_file} (agentic-rag train decision writes one)")
    try:
        settings = Settings.load(preset=args.preset, overrides=["GATE_POLICY=fitted", f"DECISION_FILE={args.decision_file}"])
    except SettingsError as exc:
        raise SystemExit(f"settings error: {exc}") from None
    artifacts = Path(settings.paths.ARTIFACTS_DIR) / "runs"
    runs_root = artifacts / ("agent_vs_baseline" + (f"_{args.preset}" if args.preset else ""))
    tag = args.tag or args.decision_file.stem
    report = {"tag": tag, "decision_file": str(args.decision_file), "preset": args.preset, "datasets": {}}
    args.out.mkdir(parents=True, exist_ok=True)
    for name in args.datasets:
        runs = {"thresholds": runs_root / name / "agent", "baseline": runs_root / name / "baseline",
                "fitted": artifacts / f"decision_policy_{tag}" / name / "agent"}
        for k in ("thresholds", "baseline"):
            if not (runs[k] / "results.jsonl").is_file():
                raise SystemExit(f"{runs[k]}: no results.jsonl (run scripts/bench_agent_vs_baseline.py "
                                 f"--datasets {name}{' --preset ' + args.preset if args.preset else ''} first)")
        if not (args.reuse and (runs["fitted"] / "telemetry.jsonl").is_file()):
            dataset = json.loads((runs["thresholds"] / "config.json").read_text())["dataset"]
            run_eval(dataset, "agent", settings, runs["fitted"], overwrite=True)
        result = measure(name, runs)
        plot_risk_coverage([{"name": "thresholds", "rows": result.pop("rows_thresholds"), "score": confidence_of},
                            {"name": "fitted", "rows": result.pop("rows_fitted"), "score": p_right}],
                           args.out / f"policy_{tag}_{name}.png", f"Risk-coverage on {name}: fitted vs thresholds")
        curve = result.pop("curve_fitted")
        plot_refusal_tradeoff({"fitted P(right)": curve},
                              {policy: (p["false_refusal"], p["refusal_unanswerable"]) for policy, p in result["policies"].items()},
                              (MAX_FALSE_REFUSAL, MIN_REFUSAL), args.out / f"policy_{tag}_{name}_refusal.png",
                              f"Refusal on {name}: the fitted P cut at every value")
        report["datasets"][name] = result
        print(json.dumps({name: {k: v for k, v in result.items() if k != "flipped"}}), file=sys.stderr)
    (args.out / f"policy_{tag}.json").write_text(json.dumps(report, indent=2) + "\n")
    (args.out / f"policy_{tag}.md").write_text(to_markdown(report))
    print(to_markdown(report))
    return 0


if __name__ == "__main__":
    sys.exit(main())
