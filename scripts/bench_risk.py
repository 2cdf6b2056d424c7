"""A stated risk kept on the test splits: benchmarks/risk/ (README.md, risk.json, one plot per split).

The thresholds are calibrated on development drafts only: the decision fit's own run, each draft with the
P(right) its cross-validation gave it out of fold (``train decision --risk``'s folder: run/, drafts.jsonl,
decision.json). On each committed test split (squad200, rgb40, hotpot_test) the decision's P(right) is
replayed on the agent's drafts (their signals are in the rows; ``frontier.p_right_of``) and, at each risk,
every draft at or above the threshold counts as answered: the wrong share among them, with its 95%
Clopper-Pearson interval, whether the promise held, and the coverage against the hindsight best on that
split at the same risk (``risk_control.oracle_coverage``). Three more checks:
- within a family: calibrated on HotpotQA's development drafts alone (100 questions and their twins),
  tested on hotpot_test;
- the shift warning: fired on consecutive chunks of ``CHUNK`` test questions, against a calibration set that
  holds the chunk's family and one that does not (SQuAD and NQ alone for HotpotQA; the whole set for RGB);
- the promise where the warning fires.

Usage: python scripts/bench_risk.py --calibration OUT [--out benchmarks/risk]
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path

from agentic_rag.baug.fitted import load_decision
from agentic_rag.eval.frontier import fitted_last, p_right_of
from agentic_rag.eval.markdown import markdown_table
from agentic_rag.eval.plots import finish_axes, pyplot
from agentic_rag.eval.rejudge import restore_run
from agentic_rag.eval.results import read_results
from agentic_rag.eval.risk_control import (
    Draft,
    RiskCalibrationError,
    calibrate,
    drafts_of,
    fitted_drafts,
    oracle_coverage,
    question_types,
    realized,
    shift,
)
from agentic_rag.eval.rows import family_of

ROOT = Path(__file__).resolve().parents[1]
COMMITTED = ROOT / "benchmarks" / "agent_vs_baseline"
SPLITS = ("squad200", "rgb40", "hotpot_test")
RISKS = (0.1, 0.2, 0.3)
DELTA = 0.1
CHUNK = 50  # test questions per shift test


def test_rows(name: str, work: Path) -> list[dict]:
    return read_results(restore_run(COMMITTED / name, "agent", work / name) / "results.jsonl")


def replayed(rows: list[dict], decision) -> list[Draft]:
    """The split's drafts under ``decision``: a draft the fitted decision decided gets its P from the row's
    signals; one refused by rule before it (or never written) stays refused."""
    p = {str(r["id"]): p_right_of(decision, r) for r in rows if fitted_last(r)}
    return drafts_of(rows, p, cut=float("inf"))


def levels_for(drafts: list[Draft]) -> dict[str, dict | str]:
    out: dict[str, dict | str] = {}
    for alpha in RISKS:
        try:
            out[f"{alpha:g}"] = calibrate(drafts, alpha, DELTA)
        except RiskCalibrationError as exc:
            out[f"{alpha:g}"] = str(exc)
    return out


def promise_rows(levels: dict, tests: dict[str, list[Draft]]) -> list[dict]:
    rows = []
    for name, drafts in tests.items():
        for key, level in levels.items():
            if isinstance(level, str):
                rows.append({"split": name, "alpha": float(key), "calibrated": False, "why": level})
                continue
            got = realized(drafts, level["threshold"], float(key))
            oracle = oracle_coverage(drafts, got["risk"])
            rows.append({"split": name, "calibrated": True, **got, "calibration_coverage": level["coverage"],
                         "oracle_coverage": oracle, "coverage_vs_oracle": round(got["coverage"] / oracle, 3) if oracle else None})
    return rows


def shift_rates(rows_by_split: dict[str, list[dict]], decision, cal_p: list[float], cal_types: set[str]) -> dict[str, dict]:
    out = {}
    for name, rows in rows_by_split.items():
        fired = []
        for i in range(0, max(len(rows) - CHUNK, 0) + 1, CHUNK):  # a split shorter than a chunk is one chunk
            chunk = rows[i:i + CHUNK]
            p = [p_right_of(decision, r) for r in chunk if fitted_last(r)]
            fired.append(shift(p, cal_p, question_types(chunk), cal_types)["fires"])
        out[name] = {"chunks": len(fired), "fired": sum(fired), "rate": round(sum(fired) / len(fired), 3) if fired else None}
    return out


SPLIT_FAMILY = {"squad200": "squad", "rgb40": "rgb", "hotpot_test": "hotpotqa"}


def shift_families(families: set[str]) -> dict[str, set[str]]:
    """The families each shift check's calibration set holds."""
    return {"calibrated_on_every_family": families, "calibrated_without_hotpotqa": families - {"hotpotqa"}}


def pooled_shift(shift_report: dict[str, dict], families: set[str]) -> dict[str, dict]:
    """The warning's rate over every chunk of a family left out of its calibration set, and of a family in it."""
    held = shift_families(families)
    out = {"left_out": {"warned": 0, "chunks": 0}, "calibrated": {"warned": 0, "chunks": 0}}
    for which, rates in shift_report.items():
        for split, r in rates.items():
            side = out["calibrated" if SPLIT_FAMILY[split] in held[which] else "left_out"]
            side["warned"] += r["fired"]
            side["chunks"] += r["chunks"]
    for side in out.values():
        side["rate"] = round(side["warned"] / side["chunks"], 3) if side["chunks"] else None
    return out


def plot(name: str, drafts: list[Draft], marks: list[dict], path: Path) -> None:
    plt = pyplot()
    fig, ax = plt.subplots(figsize=(5.5, 3.8))
    scored = sorted((d for d in drafts if d.p is not None), key=lambda d: -d.p)
    wrong, xs, ys = 0, [], []
    for k, d in enumerate(scored, start=1):
        wrong += not d.right
        xs.append(k / len(drafts))
        ys.append(wrong / k)
    ax.plot(xs, ys, lw=1.2, label="every threshold on P(right)")
    for m in marks:
        low, high = m["interval_95"] or (m["risk"], m["risk"])
        ax.errorbar([m["coverage"]], [m["risk"]], yerr=[[m["risk"] - low], [high - m["risk"]]], fmt="o", capsize=3,
                    label=f"RISK={m['alpha']:g}: {'held' if m['held'] else 'broken'}")
        ax.axhline(m["alpha"], lw=0.6, ls=":", color="grey")
    ax.set_xlim(0, 1)
    ax.legend(fontsize=7)
    finish_axes(plt, fig, ax, path, f"{name}: risk at the calibrated thresholds", "coverage (fraction of questions answered)",
                "wrong share of answered")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calibration", type=Path, required=True, help="train decision's folder (run/, drafts.jsonl, decision.json)")
    parser.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "risk")
    args = parser.parse_args()
    decision = load_decision(args.calibration / "decision.json")
    cal_rows = read_results(args.calibration / "run" / "results.jsonl")
    records = [json.loads(line) for line in (args.calibration / "drafts.jsonl").read_text().splitlines()]
    if not records or "p_oof" not in records[0]:
        raise SystemExit(f"{args.calibration}/drafts.jsonl has no out-of-fold P: fit again with `train decision --run ...`")

    def calibration(keep) -> tuple[list[Draft], list[dict]]:
        rows = [r for r in cal_rows if keep(family_of(str(r["id"])))]
        recs = [r for r in records if keep(family_of(str(r["id"])))]
        return fitted_drafts(rows, recs, [r["p_oof"] for r in recs]), rows

    work = Path(tempfile.mkdtemp(prefix="bench_risk_"))
    rows_by_split = {name: test_rows(name, work) for name in SPLITS}
    tests = {name: replayed(rows, decision) for name, rows in rows_by_split.items()}
    every, every_rows = calibration(lambda fam: True)
    hotpot, _ = calibration(lambda fam: fam == "hotpotqa")
    no_hotpot, no_hotpot_rows = calibration(lambda fam: fam != "hotpotqa")
    main_levels = levels_for(every)
    report = {
        "calibration": {"folder": str(args.calibration.relative_to(ROOT) if args.calibration.is_relative_to(ROOT) else args.calibration),
                        "questions": len(every), "families": sorted({family_of(str(r["id"])) for r in cal_rows}),
                        "levels": main_levels, "delta": DELTA},
        "promises": promise_rows(main_levels, tests),
        "within_hotpotqa": {"calibration_questions": len(hotpot), "levels": (lv := levels_for(hotpot)),
                            "promises": promise_rows(lv, {"hotpot_test": tests["hotpot_test"]})},
        "shift": {
            "calibrated_on_every_family": shift_rates(rows_by_split, decision, [d.p for d in every if d.p is not None],
                                                      question_types(every_rows)),
            "calibrated_without_hotpotqa": shift_rates({"hotpot_test": rows_by_split["hotpot_test"], "squad200": rows_by_split["squad200"]},
                                                       decision, [d.p for d in no_hotpot if d.p is not None],
                                                       question_types(no_hotpot_rows)),
        },
    }
    report["shift_pooled"] = pooled_shift(report["shift"], set(report["calibration"]["families"]))
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "risk.json").write_text(json.dumps(report, indent=1) + "\n")
    for name in SPLITS:
        plot(name, tests[name], [p for p in report["promises"] if p["split"] == name and p.get("calibrated")],
             args.out / f"{name}.png")
    (args.out / "README.md").write_text(to_markdown(report))
    print(to_markdown(report))
    return 0


def _promise_table(promises: list[dict]) -> list[str]:
    return markdown_table(
        ["split", "risk", "questions", "answered", "coverage", "wrong among answered", "95% interval", "held",
         "hindsight coverage at that risk", "coverage / hindsight"],
        [[p["split"], p["alpha"], p.get("questions", "-"), p.get("answered", "-"), p.get("coverage", "-"), p.get("risk", "-"),
          p.get("interval_95", "-"), ("yes" if p["held"] else "**no**") if p["calibrated"] else "not calibrated: " + p["why"],
          p.get("oracle_coverage", "-"), p.get("coverage_vs_oracle", "-")] for p in promises])


def to_markdown(report: dict) -> str:
    cal = report["calibration"]
    held = [p for p in report["promises"] if p["calibrated"]]
    lines = [
        "# A stated risk on the test splits", "",
        f"Generated by `python scripts/bench_risk.py --calibration {cal['folder']}`. Thresholds on the default decision's "
        f"P(right), calibrated by SGR (delta {cal['delta']}) on {cal['questions']} development questions ({', '.join(cal['families'])}), "
        "each draft's P out of fold; on each test split the decision is replayed on the committed agent run's drafts. "
        f"The promise held in {sum(p['held'] for p in held)} of {len(report['promises'])} split-and-risk pairs.", "",
        "| risk | threshold | calibration coverage | calibration risk | upper bound |", "|---|---|---|---|---|",
    ]
    for key, lv in cal["levels"].items():
        lines.append(f"| {key} | {lv['threshold']} | {lv['coverage']} | {lv['risk']} | {lv['bound']} |" if isinstance(lv, dict)
                     else f"| {key} | not calibrated: {lv} | | | |")
    lines += ["", "## On the test splits", "", *_promise_table(report["promises"]), "",
              "Plots: `squad200.png`, `rgb40.png`, `hotpot_test.png` (each split's risk at every threshold, the calibrated "
              "points with their intervals).", "",
              f"## Within one family: calibrated on {report['within_hotpotqa']['calibration_questions']} HotpotQA development "
              "questions (with their twins), tested on hotpot_test", "", *_promise_table(report["within_hotpotqa"]["promises"]), "",
              f"## The shift warning, on chunks of {CHUNK} test questions", "",
              "| calibration set | split | family in it | chunks | warned | rate |", "|---|---|---|---|---|---|"]
    cal_fams = shift_families(set(cal["families"]))
    for which, rates in report["shift"].items():
        for split, r in rates.items():
            lines.append(f"| {which.replace('_', ' ')} | {split} | {'yes' if SPLIT_FAMILY[split] in cal_fams[which] else 'no'} | "
                         f"{r['chunks']} | {r['fired']} | {r['rate']} |")
    out, inside = report["shift_pooled"]["left_out"], report["shift_pooled"]["calibrated"]
    lines += ["", f"Warned on {out['warned']} of {out['chunks']} chunks of a family left out of calibration "
              f"({out['rate']:.3f}) and on {inside['warned']} of {inside['chunks']} of a family in it ({inside['rate']:.3f})"
              + (f": {out['rate'] / inside['rate']:.1f}x as often." if inside["rate"] else ".")]
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    sys.exit(main())
