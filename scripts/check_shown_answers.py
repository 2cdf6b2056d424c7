"""Check every answer committed under benchmarks/ for words left dangling by stripped text
("She wrote and.", "means."): prints the count per file and each one found; exits 1 if any.

Usage: python scripts/check_shown_answers.py [ROOT]   (default: the repository's benchmarks/)
"""

from __future__ import annotations

import sys
from pathlib import Path

from studies.shown import dangling_report

ROOT = Path(__file__).resolve().parents[1] / "benchmarks"


def main(argv: list[str]) -> int:
    root = Path(argv[0]) if argv else ROOT
    report = dangling_report(root)
    for name, count in report["files"].items():
        hanging = sum(d["file"] == name for d in report["dangling"])
        print(f"{name}: {count} answers, {hanging} with a dangling word")
    for d in report["dangling"]:
        print(f"  {d['file']}: {', '.join(d['dangling'])}: {d['answer']}")
    print(f"{len(report['dangling'])} of {report['answers']} committed answers have a dangling word")
    return 1 if report["dangling"] else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
