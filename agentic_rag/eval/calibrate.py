"""Sweep one threshold on a development set and pick a value by a stated rule.

For each value the system runs over the same questions (greedy decoding plus ``LLM_CACHE_PATH`` make
repeated prompts free), and the sweep reports accuracy on answerable questions, refusal rate on
unanswerable ones, false-refusal rate and the CRAG score. The rule: among values whose false-refusal
rate is at most ``max_false_refusal``, take the highest CRAG score, then the highest refusal rate on
unanswerable questions, then the value closest to the current default. When no value meets the cap,
the cap is what binds: take the lowest false-refusal rate, then the highest CRAG score. Use a development split only;
report the chosen value's figures on a held-out test split.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from agentic_rag.configuration import Settings, parse_overrides
from agentic_rag.errors import replace_file, save_figure
from agentic_rag.eval.resume import RUN_NEUTRAL_SETTINGS
from agentic_rag.eval.runner import run_eval

METRICS = (
    "accuracy_answerable", "refusal_rate_unanswerable", "false_refusal_rate", "hallucination", "score",
    "overlap_mean", "tokens_per_q",
)


def parse_values(param: str, values: str) -> list[Any]:
    return [parse_overrides([f"{param}={v.strip()}"])[param] for v in values.split(",") if v.strip()]


def choose(rows: list[dict[str, Any]], default: Any, max_false_refusal: float) -> dict[str, Any]:
    def fr(r):
        return r["false_refusal_rate"] if r["false_refusal_rate"] is not None else 0.0

    eligible = [r for r in rows if fr(r) <= max_false_refusal]
    if not eligible:
        lowest = min(fr(r) for r in rows)
        eligible = [r for r in rows if fr(r) == lowest]

    def distance(r):
        try:
            return abs(float(r["value"]) - float(default))
        except (TypeError, ValueError):
            return 0.0 if r["value"] == default else 1.0

    return max(eligible, key=lambda r: (r["score"], r["refusal_rate_unanswerable"] or 0.0, -distance(r)))


def fixed_settings(settings: Settings, swept: str) -> dict[str, Any]:
    """The settings a sweep ran under that differ from the defaults (preset and overrides): a chosen
    value holds only together with them, so the sweep file records them."""
    base, now = Settings.load().public_dump(), settings.public_dump()
    return {k: v for k, v in now.items() if k != swept and k not in RUN_NEUTRAL_SETTINGS and base.get(k) != v}


def calibrate(
    dataset: str | Path,
    param: str,
    values: list[Any],
    settings: Settings,
    out_dir: str | Path,
    system: str = "agent",
    n: int | None = None,
    max_false_refusal: float = 0.15,
    extra_config: dict[str, Any] | None = None,
) -> dict[str, Any]:
    out = Path(out_dir)
    name = param.upper()
    if name not in Settings.flat_fields():
        raise ValueError(f"unknown setting {param!r}")
    if settings.paths.LLM_CACHE_PATH is None:
        settings = settings.replace(LLM_CACHE_PATH=str(out / "llm_cache.sqlite"))
    rows, runs = [], []
    for value in values:
        run = run_eval(dataset, system, settings.replace(**{name: value}), out / f"{name}={value}", n=n, resume=True,
                       extra_config=extra_config)
        summary = run["summary"]
        rows.append({"value": value, **{k: summary.get(k) for k in METRICS}})
        runs.append({"name": f"{name}={value}", "summary": summary, "rows": run["rows"]})
    best = choose(rows, settings.value(name), max_false_refusal)
    report = {
        "dataset": str(dataset),
        "system": system,
        "param": name,
        "default": settings.value(name),
        "fixed": fixed_settings(settings, name),
        "rule": f"max CRAG score s.t. false_refusal_rate <= {max_false_refusal} (if none meets it: lowest "
        "false_refusal_rate, then max score); ties: higher refusal on unanswerable",
        "sweep": rows,
        "chosen": best["value"],
    }
    replace_file(out / "sweep.json", json.dumps(report, indent=2, default=str))
    replace_file(out / "sweep.md", to_markdown(report))
    plot_sweep(report, out / "sweep.png")
    from agentic_rag.eval.plots import plot_pareto

    plot_pareto(runs, out / "pareto.png")  # one point per swept value: evidence consistency vs tokens
    return report


def to_markdown(report: dict[str, Any]) -> str:
    lines = [
        f"# Sweep of {report['param']} ({report['system']} on {report['dataset']})",
        "",
        f"Rule: {report['rule']}. Chosen: **{report['chosen']}** (default {report['default']}).",
        "",
        "| value | " + " | ".join(METRICS) + " |",
        "|---|" + "---|" * len(METRICS),
    ]
    for r in report["sweep"]:
        lines.append(f"| {r['value']} | " + " | ".join(str(r[k]) for k in METRICS) + " |")
    return "\n".join(lines) + "\n"


def plot_sweep(report: dict[str, Any], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    xs = [str(r["value"]) for r in report["sweep"]]
    fig, ax = plt.subplots(figsize=(6, 3.5))
    for key, style in (("refusal_rate_unanswerable", "o-"), ("false_refusal_rate", "s--"), ("score", "^-"),
                       ("accuracy_answerable", "d:")):
        ax.plot(xs, [r[key] if r[key] is not None else float("nan") for r in report["sweep"]], style, label=key)
    ax.axvline(xs.index(str(report["chosen"])), color="grey", lw=0.8)
    ax.set_xlabel(report["param"])
    ax.set_ylim(-1.0, 1.0)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=7)
    ax.set_title(f"{report['param']} sweep ({report['system']})", fontsize=9)
    fig.tight_layout()
    save_figure(fig, path, dpi=120)
    plt.close(fig)
