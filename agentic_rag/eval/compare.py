"""Side-by-side comparison of runs over the same questions.

For two or more run folders (each with ``results.jsonl`` and ``summary.json``) it builds the summary
table, the per-question table (answer, action and reason code, judgement, tokens, latency) and a
paired bootstrap confidence interval on the CRAG score difference of each run against the first.
"""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

from agentic_rag.errors import replace_file
from agentic_rag.eval.markdown import cut, markdown_table, md_escape
from agentic_rag.eval.metrics import BREAKDOWN_FIGURES, metric_label
from agentic_rag.eval.results import read_object, read_results
from agentic_rag.eval.rows import usable_gold
from agentic_rag.telemetry import json_number

SUMMARY_KEYS = (
    "n", "accuracy", "hallucination", "missing", "score", "em_short", "f1_short",
    "accuracy_answerable", "refusal_rate_unanswerable", "false_refusal_rate", "wrong_on_answerable",
    "idk_with_citations", "overlap_mean", "faith_mean",
    "tokens_per_q", "llm_calls_per_q", "latency_p50_ms", "latency_p95_ms",
)
BOOTSTRAP_SAMPLES = 2000


def load_run(run_dir: str | Path) -> dict[str, Any]:
    d = Path(run_dir)
    results = d / "results.jsonl"
    if not results.is_file():
        raise FileNotFoundError(f"{d} has no results.jsonl: not a run folder")
    rows = read_results(results)
    summary = read_object(d / "summary.json")
    return {"dir": str(d), "name": summary.get("system", d.name), "rows": rows, "summary": summary}


RUN_FILES = ("summary.json", "config.json", "report.md", "risk_coverage.png")


def copy_run_files(run_dir: Path, dest: Path, prefix: str) -> None:
    """Copy a run's small files (not its results) under ``prefix_``; a report's plot link follows."""
    for name in RUN_FILES:
        src = Path(run_dir) / name
        if not src.is_file():
            continue
        target = Path(dest) / f"{prefix}_{name}"
        if src.suffix == ".md":
            replace_file(target, src.read_text().replace("(risk_coverage.png)", f"({prefix}_risk_coverage.png)"))
        else:
            replace_file(target, src.read_bytes())


def paired_bootstrap(a: list[int], b: list[int], samples: int = BOOTSTRAP_SAMPLES, seed: int = 0) -> dict[str, float]:
    """95% CI of mean(b) - mean(a) over questions resampled with replacement (same resample for both)."""
    rng = random.Random(seed)
    n = len(a)
    diffs = []
    for _ in range(samples):
        idx = [rng.randrange(n) for _ in range(n)]
        diffs.append(sum(b[i] - a[i] for i in idx) / n)
    diffs.sort()
    return {
        "diff": round(sum(y - x for x, y in zip(a, b)) / n, 4),
        "ci95_low": round(diffs[int(0.025 * samples)], 4),
        "ci95_high": round(diffs[int(0.975 * samples) - 1], 4),
    }


def paired_ids(*runs_rows: list[dict[str, Any]]) -> list[str]:
    """The questions two or more runs are compared on, in the first run's order: those every run
    answered, less those whose gold cannot score an answer (out of the metrics, so out of the pairing)."""
    by_run = [{r["id"]: r for r in rows} for rows in runs_rows]
    return [r["id"] for r in runs_rows[0] if all(r["id"] in m for m in by_run) and usable_gold(r.get("gold"))]


def compare(run_dirs: list[str | Path]) -> dict[str, Any]:
    runs = [load_run(d) for d in run_dirs]
    for key in (lambda r: Path(r["dir"]).name, lambda r: r["dir"]):  # runs of one system: told apart by their folders
        if len({r["name"] for r in runs}) < len(runs):
            for r in runs:
                r["name"] = key(r)
    base = runs[0]
    by_run = [{r["id"]: r for r in run["rows"]} for run in runs]
    common = paired_ids(*(run["rows"] for run in runs))
    stats = []
    for run, rows in zip(runs[1:], by_run[1:]):
        flips = {
            "answered_to_abstained": sum(by_run[0][i]["status"] == "ok" and rows[i]["status"] != "ok" for i in common),
            "abstained_to_answered": sum(by_run[0][i]["status"] != "ok" and rows[i]["status"] == "ok" for i in common),
            "wrong_to_right": sum(by_run[0][i]["judgement"] == "incorrect" and rows[i]["judgement"] == "accurate" for i in common),
            "right_to_wrong": sum(by_run[0][i]["judgement"] == "accurate" and rows[i]["judgement"] == "incorrect" for i in common),
            "wrong_to_missing": sum(by_run[0][i]["judgement"] == "incorrect" and rows[i]["judgement"] == "missing" for i in common),
            "right_to_missing": sum(by_run[0][i]["judgement"] == "accurate" and rows[i]["judgement"] == "missing" for i in common),
        }
        kinds = {}  # the same figures per question type (HotpotQA: bridge, comparison), where the rows have one
        for i in common:
            if kind := by_run[0][i].get("question_type"):
                kinds.setdefault(str(kind), []).append(i)
        stats.append({"run": run["name"], "vs": base["name"], **_paired(common, by_run[0], rows), "changes": flips,
                      "by_question_type": {k: _paired(ids, by_run[0], rows) for k, ids in sorted(kinds.items())},
                      "kept_frontier": _kept_frontier(run, common, by_run[0], rows)})
    return {"runs": runs, "common_ids": common, "paired": stats}


def _kept_frontier(run: dict[str, Any], ids: list[str], base: dict[str, dict[str, Any]],
                   rows: dict[str, dict[str, Any]]) -> dict[str, Any] | None:
    """The trade a fitted decision's cut makes (eval/frontier.kept_frontier), for a run that has one."""
    from agentic_rag.baug.fitted import cut_for
    from agentic_rag.eval.frontier import kept_frontier, p_right_by_question

    p_right = p_right_by_question(run["dir"])
    if not p_right:
        return None
    settings = read_object(Path(run["dir"]) / "config.json").get("settings")
    cost = json_number(settings.get("WRONG_ANSWER_COST")) if isinstance(settings, dict) else None
    if cost is None:
        return None  # a damaged or foreign config.json: the rows are still compared, the trade is not shown
    return kept_frontier(base, rows, ids, p_right, cut_for(float(cost)))


def _paired(ids: list[str], base: dict[str, dict[str, Any]], other: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """On the questions ``ids``: the paired score difference and the base's right answers the other run keeps."""
    right = [i for i in ids if base[i]["judgement"] == "accurate"]
    lost = [i for i in right if other[i]["judgement"] != "accurate"]  # answered wrong or refused
    return {"questions": len(ids),
            "score_difference": paired_bootstrap([base[i]["score"] for i in ids], [other[i]["score"] for i in ids]) if ids else {},
            "right_answers_kept": round(1 - len(lost) / len(right), 4) if right else None,
            "right_answers_of_base": len(right), "right_answers_lost": lost}


def write_plots(result: dict[str, Any], out_dir: Path) -> list[Path]:
    from agentic_rag.eval.plots import plot_kept_frontier, plot_pareto, plot_risk_coverage

    out_dir.mkdir(parents=True, exist_ok=True)
    frontiers = {f"{p['run']} vs {p['vs']}": p["kept_frontier"] for p in result["paired"] if p.get("kept_frontier")}
    return [plot_pareto(result["runs"], out_dir / "pareto_overlap_tokens.png"),
            plot_risk_coverage(result["runs"], out_dir / "risk_coverage.png"),
            *([plot_kept_frontier(frontiers, out_dir / "kept_frontier.png")] if frontiers else [])]


def paired_sentence(p: dict[str, Any], bold: bool = False) -> str:
    """One pair of runs in words, the same in the report and the terminal (run names escaped in the report)."""
    sd = p["score_difference"]
    pair = f"{md_escape(p['run'])} vs {md_escape(p['vs'])}" if bold else f"{p['run']} vs {p['vs']}"
    kept = p.get("right_answers_kept")
    return (f"{f'**{pair}**' if bold else pair} on {p['questions']} questions: CRAG score difference "
            f"{sd.get('diff')} (paired bootstrap 95% CI {sd.get('ci95_low')} to {sd.get('ci95_high')}); "
            + ", ".join(f"{k.replace('_', ' ')}: {v}" for k, v in p["changes"].items())
            + (f"; right answers of {p['vs']} kept: {kept}" if kept is not None else "") + ".")


ANSWER_CHARS, QUERY_CHARS, GOLD_CHARS = 90, 70, 40  # characters of each text shown per cell of the per-question table


def _frontier_lines(p: dict[str, Any]) -> list[str]:
    f = p["kept_frontier"]
    run, vs = md_escape(p["run"]), md_escape(p["vs"])

    def row(label: str, at: dict[str, float]) -> list[Any]:
        return [label, at["right_answers_kept"], at["unanswerable_answered"]]

    return [f"## {run}: right answers of {vs} kept against unanswerable questions answered, by the cut of P(right)", "",
            f"{run}'s fitted decision answers when P(right) > {f['cut']} (`WRONG_ANSWER_COST`). The same drafts cut at "
            f"other values: each of the {f['right_of_base']} right answers of {vs} and the {f['unanswerable']} unanswerable "
            "questions keeps the last draft and P(right) the run wrote, so this is the trade of these drafts, not an "
            "operating point. With every draft answered, the share kept is at its ceiling (the drafts that are right); "
            f"P(right) tells the drafts that keep a right answer from those of unanswerable questions at AUC {f['auc']}.", "",
            *markdown_table(["P(right) cut", f"right answers of {vs} kept", "unanswerable answered"],
                            [row(f"as run ({f['cut']})", f["as_run"]), row("every draft answered", f["every_draft"]),
                             *(row(f"{at['threshold']:g}", at) for at in f["by_tenth"])])]


def to_markdown(result: dict[str, Any], title: str = "Comparison", plots: list[Path] | None = None) -> str:
    """comparison.md: the summary table, the paired differences and the per-question table; every text that
    comes from a run folder or its dataset (run names, questions, golds, answers, reasons) escaped."""
    runs = result["runs"]
    lines = [f"# {md_escape(title)}", ""]
    for plot in plots or []:
        lines += [f"![{plot.stem}]({plot.name})", ""]
    lines += markdown_table(["metric", *(r["name"] for r in runs), "meaning"],
                            [[key, *(r["summary"].get(key, "") for r in runs), metric_label(key)] for key in SUMMARY_KEYS])
    for p in result["paired"]:
        lines += ["", paired_sentence(p, bold=True)]
    typed = [r for r in runs if r["summary"].get("by_question_type")]
    if typed:
        lines += ["", "## By question type", ""]
        lines += markdown_table(["question type", "run", *BREAKDOWN_FIGURES[1:]], [
            [kind, r["name"], *(r["summary"]["by_question_type"].get(kind, {}).get(f, "") for f in BREAKDOWN_FIGURES[1:])]
            for kind in dict.fromkeys(k for r in typed for k in r["summary"]["by_question_type"]) for r in typed])
    for p in [p for p in result["paired"] if p.get("by_question_type")]:
        lines += ["", f"{md_escape(p['run'])} vs {md_escape(p['vs'])}, paired, by question type:", ""]
        lines += markdown_table(["question type", "questions", "CRAG score difference (95% CI)", f"right answers of {p['vs']} kept"], [
            [kind, q["questions"], f"{q['score_difference']['diff']:+.3f} ({q['score_difference']['ci95_low']:+.3f} to "
             f"{q['score_difference']['ci95_high']:+.3f})",
             f"{q['right_answers_of_base'] - len(q['right_answers_lost'])} of {q['right_answers_of_base']}"]
            for kind, q in p["by_question_type"].items()])
    for p in [p for p in result["paired"] if p.get("kept_frontier")]:
        lines += ["", *_frontier_lines(p)]
    maps = [{row["id"]: row for row in r["rows"]} for r in runs]
    for p, m in zip(result["paired"], maps[1:]):
        if p.get("right_answers_lost"):
            lines += ["", f"## Right answers lost: {md_escape(p['vs'])} right, {md_escape(p['run'])} wrong or refused", ""]
            lines += markdown_table(["question", "type", "gold", f"{p['vs']}: answer", f"{p['run']}: answer", "reason"], [
                [cut(maps[0][i]["query"], QUERY_CHARS), maps[0][i].get("question_type", ""), cut(maps[0][i]["gold"], GOLD_CHARS),
                 cut(maps[0][i]["prediction"], ANSWER_CHARS), cut(m[i]["prediction"], ANSWER_CHARS), m[i].get("reason", "")]
                for i in p["right_answers_lost"]])
    lines += ["", "## Per question", ""]
    header = ["question", "gold"]
    for r in runs:
        header += [f"{r['name']}: {col}" for col in ("answer", "reason", "judge", "tokens", "ms")]
    table = []
    for qid in result["common_ids"]:
        first = maps[0][qid]
        cells = [cut(first["query"], QUERY_CHARS), cut(first["gold"], GOLD_CHARS)]
        for m in maps:
            row = m[qid]
            cells += [cut(row["prediction"], ANSWER_CHARS), row.get("reason", ""), row["judgement"],
                      row["tokens"].get("total", 0), f"{row['latency_ms']:.0f}"]
        table.append(cells)
    lines += markdown_table(header, table)
    return "\n".join(lines) + "\n"
