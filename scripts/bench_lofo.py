"""The decision measured where it was not fitted: leave-one-family-out on a fit's drafts (benchmarks/decision/lofo.md).

For each family of the development drafts (``train decision``'s drafts.jsonl) in turn, the decision is fitted
on the other families and read on it (``training/transfer.leave_one_family_out``): with every signal, without each
signal group named below (a signal that reads a family's layout shows as the worst family's loss), and with each
candidate signal of ``training/candidate_signals.py`` beside the decision's own. A candidate ships when it raises the
worst left-out family's score and lowers its false refusal without the pooled score falling below the interval of
every signal's (issue 70); the table says which does.

Usage: python scripts/bench_lofo.py --drafts OUT/drafts.jsonl [--run RUN ...] [--samples SAMPLES.jsonl]
       [--out benchmarks/decision]
(the drafts' own run is the ``run`` folder ``train decision`` writes beside them; samples: scripts/sample_drafts.py)
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from pathlib import Path

import numpy as np

from agentic_rag.baug.fitted import cut_for
from agentic_rag.eval.results import read_results
from agentic_rag.llm.logprobs import LOGPROB_SIGNALS
from agentic_rag.training.candidate_signals import CANDIDATES, candidate_readings, read_samples
from agentic_rag.training.decision import draft_records
from agentic_rag.training.transfer import BEST_CUT_REFUSAL, leave_one_family_out, reader_refit

ROOT = Path(__file__).resolve().parents[1]
BASE = "every signal"
REFIT = "the reader refitted without the family"
# each configuration: the signals it leaves out
CONFIGURATIONS = {
    BASE: (),
    "without the answerability reader": ("answerability",),
    "without the token log-probabilities": tuple(LOGPROB_SIGNALS),
    "the code's signals alone": ("answerability", *LOGPROB_SIGNALS),
}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--drafts", type=Path, required=True, help="a fit's drafts.jsonl")
    parser.add_argument("--run", type=Path, nargs="*", default=[],
                        help="agent run folders (thresholds policy, development questions) of more families: their drafts join")
    parser.add_argument("--samples", type=Path, help="sampled drafts (scripts/sample_drafts.py): adds self-consistency")
    parser.add_argument("--states", type=Path,
                        help="the drafts' answer-prompt states (scripts/sample_drafts.py --states): adds the reader refitted per fold")
    parser.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "decision")
    args = parser.parse_args()
    own_run = args.drafts.parent / "run"
    for path, what in ((args.drafts, "--drafts takes the drafts.jsonl `train decision` writes"),
                       (own_run / "results.jsonl", "the drafts' own run, which `train decision` writes beside them"),
                       *((run / "results.jsonl", "--run takes agent runs of development questions") for run in args.run),
                       *(((args.samples, "--samples takes the file scripts/sample_drafts.py writes"),) if args.samples else ()),
                       *(((args.states, "--states takes the file scripts/sample_drafts.py --states writes"),) if args.states else ())):
        if not path.is_file():
            raise SystemExit(f"{path} does not exist: {what}")
    records = [json.loads(line) for line in args.drafts.read_text().splitlines() if line.strip()]
    rows = read_results(own_run / "results.jsonl")
    for run in args.run:
        more = read_results(run / "results.jsonl")
        records += draft_records(more)
        rows += more
    samples = read_samples(args.samples) if args.samples else {}
    readings = candidate_readings(rows, {k: v["samples"] for k, v in samples.items() if v.get("samples")})
    for rec in records:
        rec.update(readings.get(rec["id"], {}))
    candidates = [name for name in CANDIDATES if any(rec.get(name) is not None for rec in records)]
    configurations = {**{name: (drop, (), None) for name, drop in CONFIGURATIONS.items()},
                      **{f"{BASE} + {name}": ((), (name,), None) for name in candidates}}
    if args.states:
        refit = reader_refit(dict(np.load(args.states, allow_pickle=False)))
        configurations[f"{BASE}, {REFIT}"] = ((), (), refit)
        configurations.update({f"{BASE}, {REFIT}, + {name}": ((), (name,), refit) for name in candidates})
    results = {name: leave_one_family_out(records, cut_for(1.0), drop, extra, refit)
               for name, (drop, extra, refit) in configurations.items()}
    for name, res in results.items():
        res["ships"] = ships(res, results[BASE]) if name != BASE and name not in CONFIGURATIONS else None
    report = {"drafts": source_of(args), "results": results, "sampling_cost": sampling_cost(samples)}
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "lofo.json").write_text(json.dumps(report, indent=1) + "\n")
    (args.out / "lofo.md").write_text(to_markdown(report, len(records)))
    print(to_markdown(report, len(records)))
    return 0


def source_of(args: argparse.Namespace) -> str:
    return " ".join([f"--drafts {args.drafts}", *([f"--run {' '.join(map(str, args.run))}"] if args.run else []),
                     *([f"--samples {args.samples}"] if args.samples else []), *([f"--states {args.states}"] if args.states else [])])


def ships(result: dict, base: dict) -> bool:
    """The rule of issue 70: the worst family's score rises, its false refusal falls, and the pooled score stays
    within the interval of every signal's."""
    return (result["worst_score"] > base["worst_score"] and result["worst_false_refusal"] < base["worst_false_refusal"]
            and result["pooled_score"]["score"] >= base["pooled_score"]["ci95"][0])


def sampling_cost(samples: dict[str, dict]) -> dict | None:
    """What self-consistency's sampled drafts cost per draft: seconds and tokens (one shared prefill, all rows' replies)."""
    timed = [s for s in samples.values() if s.get("samples")]
    if not timed:
        return None
    return {"drafts": len(timed), "samples_per_draft": len(timed[0]["samples"]),
            "median_seconds": round(statistics.median(s["seconds"] for s in timed), 2),
            "mean_input_tokens": round(statistics.mean(s["tokens"]["input_tokens"] for s in timed), 1),
            "mean_output_tokens": round(statistics.mean(s["tokens"]["output_tokens"] for s in timed), 1)}


def _cell(v) -> str:
    return "" if v is None else str(v)


def to_markdown(report: dict, n: int) -> str:
    results = report["results"]
    lines = ["# Leave-one-family-out", "",
             f"Generated by `python scripts/bench_lofo.py {report['drafts']}` on {n} development drafts: for each family "
             "the decision is fitted on the others' drafts and read on its own, at the cut of CRAG's scoring (P > 0.5). "
             "Over drafts, not questions: a question refused before any draft is not in it. False refusal: answerable "
             "questions' drafts refused; right kept: right drafts answered; score: CRAG's over the family's drafts; best "
             f"cut's false refusal: the least any cut on that P gives while refusing {BEST_CUT_REFUSAL:.0%} of the "
             "unanswerable drafts, chosen on the family itself (hindsight: what the ranking allows, whatever the "
             "calibration). Candidate signals (`+ ...`, agentic_rag/training/candidate_signals.py) are read beside every signal; "
             f"\"{REFIT}\": the answerability reader fitted in each fold on the other families' drafts only (the shipped "
             "reader was trained on SQuAD, NQ and HotpotQA questions, so its reading of those three is not left out).",
             "", "| signals | left-out family | drafts | AUC | false refusal | right kept | refusal of unanswerable | score | "
             "best cut's false refusal |", "|---|---|---|---|---|---|---|---|---|"]
    for name, res in results.items():
        for fam, v in res["families"].items():
            lines.append(f"| {name} | {fam} | {v['drafts']} | {v['auc']} | {v['false_refusal']} | {v['right_kept']} | "
                         f"{_cell(v['refusal_unanswerable'])} | {v['score']} | {_cell(v['best_cut_false_refusal'])} |")
    lines += ["", "| signals | worst family's score | worst false refusal | pooled score (95% CI) | ships |", "|---|---|---|---|---|"]
    for name, res in results.items():
        pooled = res["pooled_score"]
        verdict = "" if res["ships"] is None else "yes" if res["ships"] else "no"
        lines.append(f"| {name} | {res['worst_score']} | {res['worst_false_refusal']} | {pooled['score']} "
                     f"({pooled['ci95'][0]} to {pooled['ci95'][1]}) | {verdict} |")
    if cost := report.get("sampling_cost"):
        lines += ["", f"Self-consistency's cost: {cost['samples_per_draft']} sampled drafts per draft sharing one prefill, "
                  f"median {cost['median_seconds']} s per draft, {cost['mean_input_tokens']} prompt tokens and "
                  f"{cost['mean_output_tokens']} sampled tokens on average ({cost['drafts']} drafts)."]
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    sys.exit(main())
