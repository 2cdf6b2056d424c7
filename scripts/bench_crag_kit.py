"""Run the official CRAG starter kit's own prediction loop with this package's UserModel, and time it.

The kit (facebookresearch/CRAG) is a folder given as an argument; nothing of it is copied here. The
script runs from that folder (the kit loads its tokenizer from a relative path), imports its
``local_evaluation.py`` and calls its ``generate_predictions``: the kit's own batching over its
bundled ``example_data/dev_data.jsonl.bz2`` (10 questions). Each ``batch_generate_answer`` call is
timed against the kit's limit, batch size x the per-query seconds (the kit itself times nothing).

Not run: the kit's ``evaluate_predictions``, whose judge is an OpenAI model (and which fails on the
kit's own bugs, see docs/crag-kit.md). Answers are scored with this project's rule judge instead, and each
is measured with the kit's trimming tokenizer to show the kit's 75-token trim leaves it whole.
``local_evaluation.py`` imports ``auto_gptq`` without using it; when that GPU package is absent an
empty module stands in for it, in this process only.

With --compare-unconstrained, every question that ended before its deadline is answered again
outside the kit with no deadline (default WALL_TIME_S), to check the deadline left its answer as is.

Writes benchmarks/crag_kit.json (one entry per --label, merged with the entries already there) and
benchmarks/crag_kit.md.

Usage: python scripts/bench_crag_kit.py KIT_DIR [--label after] [--system agent] [-o KEY=VALUE ...]
       [--per-query-s S] (the limit to time against when the installed adapter has no such setting)
       [--compare-unconstrained]
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
import types
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DATASET = "example_data/dev_data.jsonl.bz2"


def snapshot(folder: Path) -> dict[str, tuple[int, int]]:
    return {str(p.relative_to(folder)): (p.stat().st_size, p.stat().st_mtime_ns) for p in folder.rglob("*") if p.is_file()}


def import_kit(kit: Path):
    """The kit's local_evaluation module, imported from its own folder."""
    sys.dont_write_bytecode = True  # leave the kit folder as it was
    sys.path.insert(0, str(kit))
    os.chdir(kit)
    try:
        import auto_gptq  # noqa: F401
    except ImportError:
        sys.modules["auto_gptq"] = types.SimpleNamespace(AutoGPTQForCausalLM=None, BaseQuantizeConfig=None)
    import local_evaluation

    return local_evaluation


class TimedModel:
    """The participant model as the kit sees it, with each batch call timed."""

    def __init__(self, model, per_query_s: float, counter: list[int]):
        self.model, self.per_query_s, self.counter = model, per_query_s, counter
        self.batches: list[dict] = []
        self.rows: list[dict] = []

    def get_batch_size(self) -> int:
        return self.model.get_batch_size()

    def batch_generate_answer(self, batch: dict) -> list[str]:
        n = len(batch["query"])
        calls_before = self.counter[0]
        t0 = time.monotonic()
        answers = self.model.batch_generate_answer(batch)
        wall = time.monotonic() - t0
        rows = getattr(self.model, "last_batch", None)
        if rows is None:  # an adapter without per-question rows: count the questions it started
            started = self.counter[0] - calls_before
            rows = [{"interaction_id": batch["interaction_id"][i], "status": "?"} for i in range(n)]
        else:
            started = sum(r["status"] != "not_started" for r in rows)
        statuses = Counter(r["status"] for r in rows)
        limit = n * self.per_query_s
        self.batches.append({
            "questions": n, "wall_s": round(wall, 2), "limit_s": limit, "within_limit": wall <= limit,
            "started": started, "answered": sum(a.strip().lower() != "i don't know" for a in answers),
            "statuses": dict(statuses),
        })
        self.rows.extend(rows)
        return answers


def run(args) -> dict:
    kit = Path(args.kit).resolve()
    if not (kit / "local_evaluation.py").is_file() or not (kit / DATASET).is_file():
        raise SystemExit(f"error: {kit} is not the CRAG starter kit (no local_evaluation.py or {DATASET})")
    import agentic_rag.crag_adapter as adapter
    from agentic_rag.configuration import Settings
    from agentic_rag.eval.judge import judge

    le = import_kit(kit)
    before = snapshot(kit)
    counter = [0]
    real_answer = adapter.answer

    def counted(*a, **k):
        counter[0] += 1
        return real_answer(*a, **k)

    adapter.answer = counted
    settings = Settings.load(overrides=list(args.override))
    per_query = args.per_query_s or settings.crag.CRAG_SECONDS_PER_QUERY
    load0 = os.getloadavg()
    t0 = time.monotonic()
    model = adapter.UserModel(system=args.system, settings=settings)
    init_s = time.monotonic() - t0
    timed = TimedModel(model, per_query, counter)
    t1 = time.monotonic()
    queries, golds, predictions = le.generate_predictions(DATASET, timed)
    total_s = time.monotonic() - t1
    after = snapshot(kit)
    changed = sorted(k for k in after if before.get(k) != after[k])

    questions = []
    for q, gold, pred, row in zip(queries, golds, predictions, timed.rows):
        refused = pred.strip().lower() == "i don't know"
        verdict = judge(pred, pred, str(gold), [], refused, question=q)
        questions.append({
            "interaction_id": row["interaction_id"], "query": q, "gold": gold, "prediction": pred,
            "status": row["status"], "seconds": row.get("seconds"), "budget_s": row.get("budget_s"),
            "kit_tokens": len(le.tokenizer.encode(pred)) - 1, "rule_judge": verdict.label,
        })
    if args.compare_unconstrained:
        compare_unconstrained(kit, model, questions)
    labels = Counter(q["rule_judge"] for q in questions)
    return {
        "adapter": args.adapter_note or "this branch's agentic_rag.crag_adapter",
        "system": args.system,
        "per_query_s": per_query,
        "overrides": list(args.override),
        "init_s": round(init_s, 2),
        "predict_s": round(total_s, 2),
        "batches": timed.batches,
        "all_within_limit": all(b["within_limit"] for b in timed.batches),
        "questions_started": sum(b["started"] for b in timed.batches),
        "questions_answered": sum(b["answered"] for b in timed.batches),
        "rule_judge": {"accurate": labels["accurate"], "missing": labels["missing"], "incorrect": labels["incorrect"],
                       "score": round((labels["accurate"] - labels["incorrect"]) / max(len(questions), 1), 3)},
        "answers_cut_by_kit_trim": sum(q["kit_tokens"] > 75 for q in questions),
        "same_as_unconstrained": {"compared": sum("same_as_unconstrained" in q for q in questions),
                                  "same": sum(q.get("same_as_unconstrained", False) for q in questions)},
        "files_written_in_kit": changed,
        "artifacts_dir": str(getattr(model, "settings", settings).paths.ARTIFACTS_DIR),
        "load_average_1m": {"start": round(load0[0], 2), "end": round(os.getloadavg()[0], 2)},
        "cpus": os.cpu_count(),
        "questions": questions,
    }


def compare_unconstrained(kit: Path, model, questions: list[dict]) -> None:
    """Answer again, with no deadline, each question the adapter finished in time; store whether the
    kit-facing answer is the same."""
    from agentic_rag.crag_adapter import CRAG_IDK
    from agentic_rag.datasets.crag import iter_records
    from agentic_rag.runner import answer

    records = {r.interaction_id: r for r in iter_records(kit / DATASET)}
    settings = model.settings.replace(WALL_TIME_S=type(model.settings).flat_fields()["WALL_TIME_S"].default)
    for q in questions:
        if q["status"] not in ("answered", "refused"):
            continue
        result = answer(model.system, settings, record=records[q["interaction_id"]])
        free = model.trim(result.answer) if result.status == "ok" and result.answer.strip() else CRAG_IDK
        q["unconstrained"] = free
        q["same_as_unconstrained"] = free == q["prediction"]


def summary_table(data: dict) -> list[str]:
    """One row per run (bench_report.py copies this table from crag_kit.md into benchmarks/README.md)."""
    out = [
        "| run | adapter | per-query s | init s | batch wall s (limit s) | every batch within | started | answered "
        "| accurate / missing / incorrect | same without deadline | files written in the kit | load avg |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for label, r in data["runs"].items():
        walls = ", ".join(f"{b['wall_s']} ({b['limit_s']:g})" for b in r["batches"])
        j = r["rule_judge"]
        cmp = r.get("same_as_unconstrained") or {}
        same = f"{cmp['same']}/{cmp['compared']}" if cmp.get("compared") else "not checked"
        tops = sorted({f.split("/")[0] + ("/" if "/" in f else "") for f in r["files_written_in_kit"]})
        files = f"(in {', '.join(tops)})" if tops else ""
        out.append(
            f"| {label} | {r['adapter']} | {r['per_query_s']:g} | {r['init_s']} | {walls} | "
            f"{'yes' if r['all_within_limit'] else 'no'} | {r['questions_started']}/10 | {r['questions_answered']}/10 | "
            f"{j['accurate']} / {j['missing']} / {j['incorrect']} | {same} | {len(r['files_written_in_kit'])} {files} | "
            f"{r['load_average_1m']['start']}-{r['load_average_1m']['end']} |"
        )
    return out


def markdown(data: dict) -> str:
    out = [
        "# The adapter inside the official CRAG starter kit",
        "",
        "Generated by `scripts/bench_crag_kit.py KIT_DIR --label LABEL` from `crag_kit.json`. The kit's own",
        f"`generate_predictions` batches its 10 example questions ({data['kit']}); each `batch_generate_answer`",
        "call is timed against batch size x the per-query seconds. Answers are scored with this project's rule",
        "judge (the kit's OpenAI judge is not run). The machine is shared: its 1-minute load average is given",
        "for each run, and times scale with it.",
        "",
        *summary_table(data),
    ]
    from agentic_rag.eval.markdown import markdown_table

    for label, r in data["runs"].items():
        out += ["", f"## {label}", ""]
        out += markdown_table(["question", "status", "s (budget)", "kit tokens", "rule judge", "answer"], [
            [q["query"][:60], q["status"], "" if q["seconds"] is None else f"{q['seconds']:.1f} ({q['budget_s']:.1f})",
             q["kit_tokens"], q["rule_judge"], q["prediction"][:160]] for q in r["questions"]])
    return "\n".join(out) + "\n"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("kit", help="folder of the official CRAG starter kit (facebookresearch/CRAG)")
    ap.add_argument("--label", default="after")
    ap.add_argument("--system", default="agent")
    ap.add_argument("-o", "--override", action="append", default=[], metavar="KEY=VALUE")
    ap.add_argument("--per-query-s", type=float, default=None)
    ap.add_argument("--compare-unconstrained", action="store_true")
    ap.add_argument("--kit-ref", default="facebookresearch/CRAG ad15188", help="which kit version the folder holds")
    ap.add_argument("--adapter-note", default="", help="how to describe the adapter under test")
    ap.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "crag_kit")
    args = ap.parse_args()
    result = run(args)
    out_json = args.out.with_suffix(".json")
    data = json.loads(out_json.read_text()) if out_json.is_file() else {"runs": {}}
    data["kit"] = args.kit_ref
    data["runs"][args.label] = result
    out_json.parent.mkdir(parents=True, exist_ok=True)
    out_json.write_text(json.dumps(data, indent=1) + "\n")
    args.out.with_suffix(".md").write_text(markdown(data))
    print(f"{args.label}: batches {[(b['wall_s'], b['limit_s']) for b in result['batches']]}, "
          f"started {result['questions_started']}/10, answered {result['questions_answered']}/10, "
          f"within limit: {result['all_within_limit']}; wrote {out_json}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
