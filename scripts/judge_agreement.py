"""Agreement of the rule judge with hand labels (benchmarks/judge_agreement/labels.jsonl).

``python scripts/judge_agreement.py sample`` draws the audit's stratified sample from the committed runs
into audit_sample.jsonl, without hand labels; a person reads each row and adds ``hand_label`` and
``note``, and the labelled rows are appended to labels.jsonl. ``python scripts/judge_agreement.py``
(``report``) then writes the agreement.

Each line holds a question, its gold answers, a system's answer and the label a person gave it after
reading it (accurate / incorrect / missing). The script re-judges every answer with the current rules
and writes the agreement table, each matching rule's false-positive and false-negative rate measured
alone (``agentic_rag.eval.judge.rule_rates``), and the disagreements to benchmarks/judge_agreement/README.md.
A row whose gold cannot score an answer (``eval.rows.usable_gold``: empty, "nan") is counted and left out.
"""

from __future__ import annotations

import argparse
import gzip
import json
import random
import sys
from collections import Counter, defaultdict
from pathlib import Path

from agentic_rag.eval.judge import judge, question_form, rule_rates
from agentic_rag.eval.markdown import md_escape
from agentic_rag.eval.results import read_results_text
from agentic_rag.eval.rows import is_refusal, usable_gold

ROOT = Path(__file__).resolve().parents[1]
HERE = ROOT / "benchmarks" / "judge_agreement"
RUNS = ROOT / "benchmarks" / "agent_vs_baseline"
# rows to draw per audit type (the issue asks for at least 60 choices and 40 yes/no, 300 in all)
QUOTAS = {"choice": 90, "yes_no": 60, "bridge": 70, "simple": 60, "crag": 16, "unanswerable": 50}


def audit_type(question: str, gold: str, dataset: str) -> str:
    """The judge's reading of what the gold asks for, with an open answer named by its family: a
    HotpotQA bridge, a single-passage SQuAD or RGB question, a CRAG question of any type."""
    form = question_form(question, gold)
    if form != "open":
        return form
    family = dataset.removeprefix("fast/")
    return "crag" if family.startswith("crag") else "bridge" if family.startswith("hotpot") else "simple"


def answered_rows() -> list[dict]:
    """Every answered row of the committed agent and baseline runs, as a labelling row: what a person
    reads (question, gold, answer) and the judgement the committed run holds."""
    out = []
    for path in sorted(RUNS.glob("**/*_results.jsonl.gz")):
        system = path.name.removesuffix("_results.jsonl.gz")
        if system not in ("agent", "baseline"):
            continue  # the CHAIN_CHECK runs repeat the agent's drafts
        dataset = path.parent.relative_to(RUNS).as_posix()
        for row in read_results_text(gzip.decompress(path.read_bytes()).decode("utf-8")):
            if is_refusal(row):
                continue  # a refusal is missing by construction: nothing for a person to read
            out.append({"dataset": dataset, "system": system, "id": row["id"], "query": row["query"],
                        "gold": str(row["gold"]), "alternatives": list(row.get("alternatives") or []),
                        "prediction": row["prediction"] or "", "short_answer": row.get("short_answer") or "",
                        "judge_at_labelling": row["judgement"], "rule_at_labelling": row["judge_rule"]})
    return out


def sample(seed: int, out: Path) -> int:
    """Each audit type's quota, drawn with a fixed seed, the baseline and the agent taking turns, so the
    sample holds both systems' answers to the same kinds of question; a row already labelled is not
    drawn again. Half the rows are marked A (read while rules are written), half B (held out)."""
    labelled = {(r["dataset"], r["system"], r["id"]) for r in map(json.loads, (HERE / "labels.jsonl").read_text().splitlines())}
    strata: dict[str, dict[str, list[dict]]] = defaultdict(lambda: defaultdict(list))
    for row in answered_rows():
        if (row["dataset"].removeprefix("fast/"), row["system"], row["id"]) not in labelled and usable_gold(row["gold"]):
            strata[audit_type(row["query"], row["gold"], row["dataset"])][row["system"]].append(row)
    rng = random.Random(seed)
    drawn = []
    for kind, quota in QUOTAS.items():
        pools = [rng.sample(rows, len(rows)) for _, rows in sorted(strata[kind].items())]
        picked: list[dict] = []
        while len(picked) < quota and any(pools):
            picked += [pool.pop() for pool in pools if pool][: quota - len(picked)]
        drawn += [{**row, "audit_type": kind} for row in picked]
        print(f"{kind}: {len(picked)} of {sum(len(v) for v in strata[kind].values())}", file=sys.stderr)
    rng.shuffle(drawn)
    for i, row in enumerate(drawn):
        row["half"] = "AB"[i % 2]
    out.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in drawn))
    print(f"{len(drawn)} rows -> {out}", file=sys.stderr)
    return 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command")
    draw = sub.add_parser("sample", help="draw the audit sample (no hand labels) into audit_sample.jsonl")
    draw.add_argument("--seed", type=int, default=67)
    draw.add_argument("--out", type=Path, default=HERE / "audit_sample.jsonl")
    llm = sub.add_parser("llm", help="grade every labelled answer with the LLM judge (CRAG's protocol) at --base-url")
    llm.add_argument("--base-url", required=True, help="an OpenAI-compatible endpoint, e.g. agentic-rag serve's")
    llm.add_argument("--model", required=True, help="the model name the endpoint serves")
    llm.add_argument("--name", help="the name its figures are written under (default: the model name)")
    args = parser.parse_args()
    if args.command == "sample":
        return sample(args.seed, args.out)
    if args.command == "llm":
        return llm_agreement(args.base_url, args.model, args.name or args.model)
    return report()


def llm_agreement(base_url: str, model: str, name: str) -> int:
    """Every labelled answer graded by the LLM judge; its verdicts beside the hand labels and the rule
    judge's in llm_<name>.json, which the report reads. Resumes: a verdict already written is kept."""
    from agentic_rag.configuration import Settings
    from agentic_rag.eval.llm_judge import llm_judge

    settings = Settings.load(overrides={"EVAL_JUDGE": "llm", "EVAL_JUDGE_BASE_URL": base_url, "EVAL_JUDGE_MODEL": model})
    out = HERE / f"llm_{name}.json"
    done = json.loads(out.read_text())["verdicts"] if out.is_file() else {}
    rows = [r for r in map(json.loads, (HERE / "labels.jsonl").read_text().splitlines()) if usable_gold(r["gold"])]
    for i, r in enumerate(rows):
        key = f"{r['dataset']}|{r['system']}|{r['id']}"
        if key in done and done[key]["label"] != "unjudged":
            continue
        ruled = judge(r["prediction"], r["short_answer"], r["gold"], r["alternatives"], False, question=r["query"])
        j, _ = llm_judge(r["query"], r["gold"], r["alternatives"], r["prediction"], ruled, settings)
        done[key] = {"label": j.label, "rule": j.rule}
        if i % 20 == 0 or i == len(rows) - 1:
            out.write_text(json.dumps({"model": model, "base_url": base_url, "verdicts": done}, indent=1) + "\n")
            print(f"{i + 1}/{len(rows)}", file=sys.stderr)
    out.write_text(json.dumps({"model": model, "base_url": base_url, "verdicts": done}, indent=1) + "\n")
    return report()


LABELS = ("accurate", "incorrect", "missing")


def _pct(num: int, den: int) -> str:
    return f"{num}/{den} ({num / den:.1%})" if den else "-"


def report() -> int:
    """Agreement per audit type, before (as the committed runs were judged) and now, each deciding rule's
    false positives, each matching rule alone, and every disagreement, into README.md."""
    every = [json.loads(line) for line in (HERE / "labels.jsonl").read_text().splitlines() if line.strip()]
    rows = [r for r in every if usable_gold(r["gold"])]
    unusable = [r for r in every if not usable_gold(r["gold"])]
    for r in rows:
        r["now"] = judge(r["prediction"], r["short_answer"], r["gold"], r["alternatives"], False, question=r["query"])
        r.setdefault("audit_type", audit_type(r["query"], r["gold"], r["dataset"]))
        r.setdefault("half", "earlier")  # labelled in an earlier round, before this audit's rules
    by_type: dict[str, list[dict]] = defaultdict(list)
    for r in rows:
        by_type[r["audit_type"]].append(r)
    agree_then = sum(r["judge_at_labelling"] == r["hand_label"] for r in rows)
    agree_now = sum(r["now"].label == r["hand_label"] for r in rows)
    lines = [
        "# Rule judge vs hand labels", "",
        f"{len(rows)} answers from the committed runs, each read and labelled by hand (accurate, incorrect, missing) "
        "without the judge's verdict in view: " + ", ".join(f"{k} {v}" for k, v in Counter(r["dataset"] for r in rows).most_common())
        + ". Generated by `scripts/judge_agreement.py` from `labels.jsonl`; `scripts/judge_agreement.py sample` drew the "
        "stratified audit (`half` A and B) from every committed agent and baseline run's answered rows."
        + (f" Left out: {len(unusable)} whose gold cannot score an answer ("
           + ", ".join(f"{r['dataset']}/{r['system']}/{r['id']} gold {r['gold']!r}" for r in unusable) + ")." if unusable else ""),
        "",
        f"**Agreement now: {_pct(agree_now, len(rows))}. Before (as the committed runs were judged when the rows were "
        f"labelled): {_pct(agree_then, len(rows))}.** The audit's rows were labelled before the claim rules "
        "(`choice`, `yes_no`, `denied`, the stricter `false_premise`, `numeric` with units) were written; those rules were "
        "written reading half A's disagreements only, and half B is the held-out check.",
        "",
        "| audit type | rows | before | now | now, half A | now, half B | now, earlier labels |",
        "|---|---|---|---|---|---|---|",
    ]
    for kind, group in sorted(by_type.items(), key=lambda kv: -len(kv[1])):
        cells = [_pct(sum(r["judge_at_labelling"] == r["hand_label"] for r in group), len(group)),
                 _pct(sum(r["now"].label == r["hand_label"] for r in group), len(group))]
        for half in ("A", "B", "earlier"):
            part = [r for r in group if r["half"] == half]
            cells.append(_pct(sum(r["now"].label == r["hand_label"] for r in part), len(part)))
        lines.append(f"| {kind} | {len(group)} | " + " | ".join(cells) + " |")
    lines += ["", "Hand label against the judge now:", "", "| hand label, judge label -> | " + " | ".join(LABELS) + " |",
              "|---|---|---|---|"]
    pairs = Counter((r["hand_label"], r["now"].label) for r in rows)
    lines += [f"| {h} | " + " | ".join(str(pairs[(h, j)]) for j in LABELS) + " |" for h in LABELS]
    lines += ["", "## The rule that decided", "",
              "Each row's deciding rule now; a rule's false positives are the rows it found accurate that a person did not "
              "(rate over the rows it accepted).", "",
              "| rule | rows decided | agree | accepted | false positives | false-positive rate |", "|---|---|---|---|---|---|"]
    decided: dict[str, list[dict]] = defaultdict(list)
    for r in rows:
        decided[r["now"].rule].append(r)
    for rule, group in sorted(decided.items(), key=lambda kv: -len(kv[1])):
        accepted = [r for r in group if r["now"].label == "accurate"]
        fp = sum(r["hand_label"] != "accurate" for r in accepted)
        lines.append(f"| `{rule}` | {len(group)} | {sum(r['now'].label == r['hand_label'] for r in group)} | {len(accepted)} | "
                     f"{fp} | {round(fp / len(accepted), 3) if accepted else '-'} |")
    lines += ["", "## Each matching rule alone", "",
              "A rule alone, on every row: it accepts a hand-incorrect answer (false positive, rate over the hand-incorrect "
              "rows) or leaves a hand-accurate one unaccepted (false negative, rate over the hand-accurate rows; "
              "the rules complement each other, so the judge's own false negatives are the `all rules` row). The claim "
              "rules run before these and are not in this table.", "",
              "| rule | accepts accurate | false positives | false-positive rate | false negatives | false-negative rate |",
              "|---|---|---|---|---|---|"]
    for r in rule_rates(rows):
        lines.append(f"| `{r['rule']}` | {r['true_positives']} | {r['false_positives']} | {r['false_positive_rate']} | "
                     f"{r['false_negatives']} | {r['false_negative_rate']} |")

    def listed(r: dict, verdict: str) -> str:
        return (f"- {r['audit_type']}, {r['dataset']}/{r['system']}/{md_escape(r['id'])} (half {r['half']}): hand {r['hand_label']}, "
                f"judge {verdict}; gold {md_escape(r['gold'][:60])!s}: {md_escape(r['prediction'][:140])}"
                + (f" ({md_escape(r['note'])})" if r.get("note") else ""))

    lines += ["", "## Disagreements now", ""]
    lines += [listed(r, f"{r['now'].label} (`{r['now'].rule}`)") for r in rows if r["now"].label != r["hand_label"]] or ["none"]
    lines += ["", "## Disagreements before, that the judge now gets right", ""]
    lines += [listed(r, f"{r['judge_at_labelling']} (`{r.get('rule_at_labelling', '?')}`), now `{r['now'].rule}`")
              for r in rows if r["judge_at_labelling"] != r["hand_label"] and r["now"].label == r["hand_label"]] or ["none"]
    lines += llm_sections(rows, by_type)
    (HERE / "README.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines[:20]))
    return 0


def llm_sections(rows: list[dict], by_type: dict[str, list[dict]]) -> list[str]:
    """The LLM judges measured on the same rows (``llm`` subcommand): agreement over the rows each graded,
    per audit type, with the rows it left unjudged counted apart."""
    files = sorted(HERE.glob("llm_*.json"))
    if not files:
        return []
    out = ["", "## LLM judges (`eval --judge llm`, CRAG's protocol)", "",
           "Each labelled answer graded by `agentic_rag/eval/llm_judge.py` against a served model "
           "(`python scripts/judge_agreement.py llm --base-url URL --model NAME`); agreement is over the rows it graded, "
           "the unjudged ones counted apart.", "",
           "| judge | graded | agreement | unjudged | accepts a wrong answer | refuses a right one | "
           + " | ".join(sorted(by_type)) + " |",
           "|---|---|---|---|---|---|" + "---|" * len(by_type)]
    for path in files:
        data = json.loads(path.read_text())
        verdicts = data["verdicts"]

        def verdict(r: dict) -> str | None:
            return (verdicts.get(f"{r['dataset']}|{r['system']}|{r['id']}") or {}).get("label")

        graded = [r for r in rows if verdict(r) not in (None, "unjudged")]
        wrong = [r for r in graded if r["hand_label"] != "accurate"]
        right = [r for r in graded if r["hand_label"] == "accurate"]
        cells = [_pct(sum(verdict(r) == r["hand_label"] for r in graded), len(graded)),
                 str(sum(verdict(r) == "unjudged" for r in rows)),
                 _pct(sum(verdict(r) == "accurate" for r in wrong), len(wrong)),
                 _pct(sum(verdict(r) != "accurate" for r in right), len(right))]
        for kind in sorted(by_type):
            part = [r for r in graded if r["audit_type"] == kind]
            cells.append(_pct(sum(verdict(r) == r["hand_label"] for r in part), len(part)))
        out.append(f"| `{md_escape(data['model'])}` | {len(graded)} | " + " | ".join(cells) + " |")
    return out


if __name__ == "__main__":
    sys.exit(main())
