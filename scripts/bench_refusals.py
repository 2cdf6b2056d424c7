"""Per reason code, how many answerable and unanswerable questions a run refused.

Reads finished run folders (``results.jsonl`` and ``config.json``), prints one table per run and
writes benchmarks/refusals/<name>.json and .md. Use dev-split runs only: the table is for choosing
which check to change, and choosing on a test split would tune on the test.

Usage: python scripts/bench_refusals.py RUN_DIR [RUN_DIR ...] [--name NAME] [--by domain] [--note TEXT]
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from agentic_rag.eval.markdown import md_escape
from agentic_rag.eval.refusals import ANSWERED_IDK, missing_report, refusal_table, refusals_by_reason
from agentic_rag.eval.results import read_results
from agentic_rag.eval.rows import gold_groups, is_refusal

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "benchmarks" / "refusals"


def run_entry(run: Path, by: str | None) -> dict:
    """The table of one run folder, with its totals and the configuration that produced it."""
    rows = read_results(run / "results.jsonl")
    if not rows:
        raise SystemExit(f"{run}: no results.jsonl rows (is it a run folder?)")
    config = json.loads((run / "config.json").read_text()) if (run / "config.json").is_file() else {}

    def totals(rs: list[dict]) -> dict:
        answerable, unanswerable = gold_groups(rs)
        return {"n": len(rs), "answerable": len(answerable), "unanswerable": len(unanswerable),
                "refused_answerable": sum(is_refusal(r) for r in answerable),
                "refused_unanswerable": sum(is_refusal(r) for r in unanswerable)}

    missing = missing_report(rows)
    entry = {
        "run": run.name, "system": config.get("system"), "dataset": config.get("dataset"),
        "dataset_sha256": config.get("dataset_sha256"), "model": (config.get("model") or {}).get("model"),
        **totals(rows), "by_reason": refusals_by_reason(rows),
        # a refusal's `missing` must name entities, periods and units, never filler ("other", "between")
        # (None: rows written before results kept `missing`)
        "refusals_with_missing": missing["refusals_naming_pieces"] if any("missing" in r for r in rows) else None,
        "filler_in_missing": missing["stop_words_only"],
    }
    if by:
        groups: dict[str, list[dict]] = {}
        for r in rows:
            groups.setdefault(str(r.get(by, "")), []).append(r)
        entry[f"by_{by}"] = {g: {**totals(rs), "by_reason": refusals_by_reason(rs)} for g, rs in sorted(groups.items())}
    return entry


def markdown(entry: dict, by: str | None) -> list[str]:
    def head(t: dict) -> str:
        return (f"{t['n']} questions: refused {t['refused_answerable']} of {t['answerable']} answerable, "
                f"{t['refused_unanswerable']} of {t['unanswerable']} unanswerable.")

    lines = [f"## {entry['run']}", "",
             f"System `{entry['system']}`, model `{entry['model']}`, dataset `{entry['dataset']}` "
             f"(sha256 {str(entry['dataset_sha256'])[:12]}). " + head(entry), ""]
    lines += refusal_table(entry["by_reason"])
    if entry.get("refusals_with_missing") is not None:
        lines += ["", f"`missing` of the refusals: {entry['refusals_with_missing']} refusals name missing pieces; "
                  f"pieces made only of stop words: {len(entry['filler_in_missing'])}"
                  + (" (" + ", ".join(f"{f['piece']!r} in {f['id']}" for f in entry["filler_in_missing"][:10]) + ")"
                     if entry["filler_in_missing"] else "") + "."]
    for g, sub in (entry.get(f"by_{by}") or {}).items():
        lines += ["", f"### {by} = {md_escape(g)}", "", head(sub), ""] + refusal_table(sub["by_reason"])
    return lines + [""]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("runs", type=Path, nargs="+", help="run folders (from `agentic-rag eval --out DIR`)")
    ap.add_argument("--name", default=None, help="output file stem under benchmarks/refusals/ (default: the first run's folder name)")
    ap.add_argument("--by", default=None, help="also split each table by this result field (e.g. domain)")
    ap.add_argument("--out", type=Path, default=OUT)
    ap.add_argument("--note", default="", help="a paragraph under the title (how the runs were made)")
    args = ap.parse_args()
    entries = [run_entry(r, args.by) for r in args.runs]
    name = args.name or args.runs[0].name
    lines = ["# Refusals by reason code", "",
             "Per reason code: refusals of answerable and of unanswerable questions (false-premise questions in "
             "neither), their ratio, the share of all answerable questions the code refused, and of the refused "
             "answerable questions that had a draft, how many drafts the judge finds right (an answer lost) or wrong "
             "(a hallucination avoided). "
             f"`{ANSWERED_IDK}` is an answer that only says it does not know. Generated by `scripts/bench_refusals.py`.", ""]
    lines += [args.note, ""] if args.note else []
    for e in entries:
        lines += markdown(e, args.by)
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / f"{name}.json").write_text(json.dumps(entries, indent=1) + "\n")
    (args.out / f"{name}.md").write_text("\n".join(lines))
    print("\n".join(lines))
    print(f"written {args.out / name}.json and .md")
    return 0


if __name__ == "__main__":
    sys.exit(main())
