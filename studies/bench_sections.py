"""Sections of benchmarks/README.md (``scripts/bench_report.py``) that live in the package so that a test can
render them from the JSON a benchmark script wrote: agent vs baseline, the probe's training, the cross-encoder's."""

from __future__ import annotations

import json
from pathlib import Path


def _ci(p: dict) -> str:
    return f"{p['diff']} ({p['ci95_low']} to {p['ci95_high']})"


def _share(kept: float | None) -> str:
    """Right answers kept, as a percentage ("-" where the baseline had none to keep)."""
    return "-" if kept is None else f"{kept:.0%}"


def agent_section(o: dict, tag: str = "") -> list[str]:
    folder = f"agent_vs_baseline/{tag}/" if tag else "agent_vs_baseline/"
    option = f" --preset {tag} --out benchmarks/agent_vs_baseline/{tag}" if tag else ""
    out = [
        f"## Agent vs baseline, {GENERATORS.get(tag, tag)} (`scripts/bench_agent_vs_baseline.py{option}`)",
        "",
        "Same packaged model, prompt, retrieval and context budget; per-question tables in",
        f"`{folder}<dataset>/comparison.md`. RGB40: 20 questions, each as answerable (positive snippets",
        "plus 2 noise) and negative-rejection (noise only, gold \"i don't know\"); rgb_negative100: 100 negatives. "
        "Kept: the baseline's right answers the agent also gets right. Reader: refusals by the answerability reader "
        "(`ABSTAIN_NOT_ANSWERABLE`) of answerable (drafts right) and unanswerable questions (\"-\": not counted then).",
        "",
        "| dataset | questions | hallucinated (baseline) | hallucinated (agent) | tokens/Q baseline | tokens/Q agent | ratio "
        "| CRAG score baseline | CRAG score agent | score diff (95% CI) | kept | reader: answerable (right) / unanswerable |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for name, v in o.items():
        p, r = v["paired"], v.get("reader_refusals")
        kept = f"{_share(v['right_answers_kept'])} of {v['baseline_right_answers']}" if v.get("baseline_right_answers") else "-"
        reader = f"{r['answerable']} ({r['answerable_draft_right']}) / {r['unanswerable']}" if r else "-"
        out.append(f"| {name} | {v['questions']} | {v['hallucinated_questions_baseline']} | {v['hallucinated_questions_agent']} | "
                   f"{v['tokens_per_q_baseline']} | {v['tokens_per_q_agent']} | {v['token_ratio']} | {v['score_baseline']} | "
                   f"{v['score_agent']} | {_ci(p)} | {kept} | {reader} |")
    chained = [(name, v["chain_check"]) for name, v in o.items() if v.get("chain_check")]
    out += ["", f"With `CHAIN_CHECK` on (`--systems ... agent_chain_check`), paired with the agent (by question type: "
            f"`{folder}<dataset>/comparison_chain_check.md`):", "", "| dataset | CRAG score | diff vs the agent (95% CI) | "
            "tokens/Q | ratio to baseline | kept |", "|---|---|---|---|---|---|"] if chained else []
    out += [f"| {name} | {c['score']} | {_ci(c['paired_vs_agent'])} | {c['tokens_per_q']} | {c['token_ratio']} | "
            f"{_share(c['right_answers_kept'])} |" for name, c in chained]
    out += ["", "Acceptance criteria of the design, per dataset:", "",
            "| dataset | criterion | baseline | agent | holds |", "|---|---|---|---|---|"]
    for name, v in o.items():
        for crit, c in v.get("seed_criteria", {}).items():
            out.append(f"| {name} | {crit} | {c['baseline']} | {c['agent']} | {'yes' if c['holds'] else 'no'} |")
    ok = all(
        v["hallucinated_questions_agent"] < v["hallucinated_questions_baseline"] and v["token_ratio"] <= 1.2 for v in o.values()
    )
    out += ["", "Issue criterion (fewer hallucinated questions at <= 1.2x tokens/Q, on every dataset): "
            f"{'holds' if ok else 'does not hold'}.", ""]
    return out


GENERATORS = {"": "the default generator (Qwen2.5-Coder-1.5B)",
              "fast": "preset fast (Qwen2.5-Coder-0.5B, `--preset fast`)",
              "qwen-1.5b": "the 1.5B generator, before it became the default (`--preset qwen-1.5b`)"}


_SCORED = ("squad200", "rgb40")  # evaluation files `agentic-rag train probe-score` is run on


def _by_source(report: dict) -> str:
    return ", ".join(f"{k} {v}" for k, v in (report.get("auc_by_source") or {}).items())


def probe_section(t: dict, bench: Path) -> list[str]:
    out = [
        "## Answerability probe (the older `collect` job, then `fit`: `benchmarks/probe/history.md`)",
        "",
        f"Logistic regression on the 0.5B generator's last-prompt-token state at layer {t['chosen_layer']}, trained on "
        f"{t['n']} agent prompts ({', '.join(f'{k} {v}' for k, v in t['by_source'].items())}; {t['answerable']} answerable), "
        f"article-grouped 5-fold CV AUC {t['layer_auc'][str(t['chosen_layer'])]}. Out-of-fold refusal rates by threshold "
        "(the shipped `ANSWERABILITY_MIN` comes from the dev sweep in `calibration/ANSWERABILITY_MIN`):",
        "",
        "| threshold | " + " | ".join(k for k in t["out_of_fold"][0] if k != "threshold") + " |",
        "|---|" + "---|" * (len(t["out_of_fold"][0]) - 1),
    ]
    for row in t["out_of_fold"]:
        out.append("| " + " | ".join(str(v) for v in row.values()) + " |")
    out += ["", "![ROC](probe/roc.png)", ""]
    if t.get("learning_curve"):
        out += ["Learning curve (article-grouped CV AUC when each training fold keeps a fraction of its rows): "
                + ", ".join(f"{k} -> {v}" for k, v in t["learning_curve"].items()) + "."]
    others = sorted(bench.glob("probe/*/training.json"))
    if others:
        out += ["", "The same prompts read by other local models (`collect --preset qwen-1.5b` or `--model DIR`, "
                "then `fit`; `train probe-score` applies each fitted probe, unchanged, to the benchmarks' own agent prompts; the "
                "1.5B probe ships with that generator):", "",
                "| states of | training rows | layer | CV AUC | CV AUC by source | " + " | ".join(f"AUC on {d}" for d in _SCORED)
                + " |", "|---|---|---|---|---|" + "---|" * len(_SCORED)]
        for name, path in [("packaged 0.5B", bench / "probe" / "training.json")] + [(p.parent.name, p) for p in others]:
            o = json.loads(path.read_text())
            scores = [json.loads(f.read_text()) if (f := path.parent / f"score_{d}.json").is_file() else {} for d in _SCORED]
            out.append(f"| {name} | {o['n']} | {o['chosen_layer']} | {o['layer_auc'][str(o['chosen_layer'])]} | "
                       f"{_by_source(o)} | " + " | ".join(f"{sc.get('auc')} ({sc.get('scored')} q)" if sc else "-"
                                                        for sc in scores) + " |")
    if t.get("auc_needed_for_targets"):
        out += ["", "Refusing >= 70% of unanswerable questions at <= 15% false refusals needs an ROC through that point: "
                f"under an equal-variance binormal model, AUC >= {t['auc_needed_for_targets']}."]
    return out + [""]


_CROSS_SCORED = ("squad200", "hotpot_test", "rgb40")  # evaluation files `agentic-rag train reader-score` is run on


def cross_reader_section(t: dict, bench: Path) -> list[str]:
    """The cross-encoder reader: CV AUC per configuration (every ``training*.json``), learning curve, test AUCs."""
    runs = [t] + [json.loads(f.read_text()) for f in sorted(bench.glob("reader_cross/training_*.json"))]
    sources = list(t["configurations"][next(iter(t["configurations"]))]["auc"])
    out = ["## The cross-encoder reader (`agentic-rag train pairs`, `reader`, `reader-score`)", "",
           f"The packaged MiniLM fine-tuned on {t['pairs']} (question, the agent prompt's sources) pairs "
           f"({', '.join(f'{k} {v}' for k, v in t['by_source'].items())}; {t['answerable']} answerable), "
           f"{t['settings']['epochs']} epochs. Question- or article-grouped 5-fold cross-validated AUC (answerable vs not), "
           f"per configuration and source; the shipped reader is the top {t['reader']['top_layers']} layers at lr "
           f"{t['settings']['lr']}:", "",
           "| configuration | " + " | ".join(sources) + " | CV time (s) |", "|---|" + "---|" * (len(sources) + 1)]
    for run in runs:
        for name, row in run["configurations"].items():
            out.append(f"| {name}, lr {run['settings']['lr']} | " + " | ".join(str(row["auc"].get(k)) for k in sources)
                       + f" | {row['s']} |")
    for run in runs:
        if run.get("learning_curve"):
            curve = {**run["learning_curve"], "1.0": run["configurations"].get(f"top {run['reader']['top_layers']} layers", {})
                     .get("auc", {}).get("all")}
            out += ["", f"Learning curve (top {run['reader']['top_layers']} layers, lr {run['settings']['lr']}; CV AUC when "
                    "each training fold keeps a share of its rows): " + ", ".join(f"{k} -> {v}" for k, v in curve.items()) + "."]
    out.append("")
    scores = {d: json.loads(f.read_text()) for d in _CROSS_SCORED if (f := bench / "reader_cross" / f"score_{d}.json").is_file()}
    if scores:
        names = list(next(iter(scores.values()))["readers"])
        out += ["Each reader on the evaluated splits' agent prompts (nothing fitted or chosen on them; the probe is the "
                "default 1.5B's):", "",
                "| split | questions | " + " | ".join(f"AUC {n}" for n in names) + " | cross-encoder ms/question |",
                "|---|---|" + "---|" * (len(names) + 1)]
        for d, sc in scores.items():
            out.append(f"| {d} | {sc['n']} | " + " | ".join(str(sc["readers"].get(n, {}).get("auc", "-")) for n in names)
                       + f" | {sc['cross_ms_per_question']} |")
    return out + [""]
