"""Evidence layouts as a test axis: does the decision answer a draft the evidence supports whatever the page looks like?

Reads an agent run of `hotpot_dev_layouts` (or the first questions of it: each question with its unanswerable twin
in every layout, `prepare hotpotqa --layout`, ids suffixed `@layout`). Per question: its draft is "right in every
layout" when the judge reads every layout's draft as right, shown or withheld (`refusals.withheld_right_answer`);
such a draft should be answered in every layout. Reported: how many are, the spread of the decision's P(right)
across a question's layouts (largest minus smallest), and per layout the answerable questions answered right and
the twins answered.

Usage: python scripts/bench_layouts.py --run RUN [--out benchmarks/layouts]
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from studies.layouts import measure, to_markdown

ROOT = Path(__file__).resolve().parents[1]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--run", type=Path, required=True, help="an agent run folder of hotpot_dev_layouts")
    parser.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "layouts")
    args = parser.parse_args()
    if not (args.run / "results.jsonl").is_file():
        raise SystemExit(f"{args.run} is not a run folder (no results.jsonl): give an agent run of hotpot_dev_layouts")
    report = measure(args.run)
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "layouts.json").write_text(json.dumps(report, indent=1) + "\n")
    (args.out / "README.md").write_text(to_markdown(report))
    print(to_markdown(report))
    return 0


if __name__ == "__main__":
    sys.exit(main())
