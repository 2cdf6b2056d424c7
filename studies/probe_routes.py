"""One answerability reader for every question, or a reader per hop plan: single-passage questions read by a
reader fitted on single-passage rows, bridge and comparison questions by one fitted on multi-hop rows. Mixing
HotpotQA's rows into one reader raised hotpot_test's AUC and left squad200's a little below the probe before it
(benchmarks/probe/learning_curve.md); routing by the plan is what the agent could do at run time (the plan is
known before the answer prompt is read), routing by the row's source is not, and is shown as the bound.

The choice is read out of fold on the training views (folds by article, as the probe is fitted); the test
splits' views report it. scripts/study_probe.py routes writes benchmarks/probe/routes.{json,md}.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from agentic_rag.eval.metrics import auc
from agentic_rag.training.fitting import grouped_folds
from agentic_rag.training.probe_report import auc_difference
from studies.probe_curve import READERS, auc_interval, reader_p


def routed_p(train: dict[str, np.ndarray], train_route: np.ndarray, rows: np.ndarray, views: dict[str, np.ndarray],
             route: np.ndarray, members: tuple[str, ...], layer: int) -> np.ndarray:
    """P(answerable) of every row of ``views``, each read by the reader fitted on the training ``rows`` of
    its own route label."""
    out = np.zeros(len(views["y"]))
    for label in np.unique(route):
        fit_rows = rows[train_route[rows] == label]
        if not len(fit_rows):
            raise ValueError(f"no training row is routed to {str(label)!r}")
        out[route == label] = reader_p(train, views, train["y"], members, layer, [fit_rows])[route == label]
    return out


def out_of_fold(train: dict[str, np.ndarray], route: np.ndarray, members: tuple[str, ...], layer: int,
                folds: int = 5) -> np.ndarray:
    """Each training row's P from the routed readers fitted on the other folds (folds split by article)."""
    out = np.zeros(len(train["y"]))
    for fit_rows, held in grouped_folds(train["y"], [str(g) for g in train["groups"]], folds):
        held_views = {k: train[k][held] for k in (*members, "y")} | {k: train[k] for k in ("layers",) if k in train}
        out[held] = routed_p(train, route, fit_rows, held_views, route[held], members, layer)
    return out


def route_report(train: dict[str, np.ndarray], train_routes: dict[str, np.ndarray],
                 evals: dict[str, dict[str, np.ndarray]], eval_routes: dict[str, dict[str, np.ndarray]],
                 layer: int = 18) -> dict[str, Any]:
    """Per routing (the first is the one reader the others are set against): out-of-fold AUC on the training
    rows, by source, and AUC on each test split with the paired difference to the first routing.
    A routing missing from ``eval_routes`` (by source: unknown at run time) is read out of fold only."""
    members = READERS["last@{layer} + question@{layer}"]
    sources = train["sources"].astype(str)
    y = train["y"]
    everything = np.arange(len(y))
    base_name = next(iter(train_routes))
    report: dict[str, Any] = {"layer": layer, "reader": [f"{m}@{layer}" for m in members], "train_rows": int(len(y)),
                              "rows_by_source": {s: int((sources == s).sum()) for s in np.unique(sources)},
                              "routings": {}}
    oof: dict[str, np.ndarray] = {}
    for name, route in train_routes.items():
        oof[name] = p = out_of_fold(train, route, members, layer)
        entry: dict[str, Any] = {"routes": {str(k): int((route == k).sum()) for k in np.unique(route)},
                                 "out_of_fold": {"all": round(auc(y, p), 4)}}
        for s in np.unique(sources):
            m = sources == s
            if 0 < y[m].sum() < m.sum():
                entry["out_of_fold"][s] = round(auc(y[m], p[m]), 4)
                if name != base_name:
                    entry.setdefault("out_of_fold_vs_one", {})[s] = auc_difference(y[m], oof[base_name][m], p[m])
        if name != base_name:
            entry.setdefault("out_of_fold_vs_one", {})["all"] = auc_difference(y, oof[base_name], p)
        report["routings"][name] = entry
    for split, views in evals.items():
        base = None
        for name, route in train_routes.items():
            if name not in eval_routes.get(split, {}):
                continue
            p = routed_p(train, route, everything, views, eval_routes[split][name], members, layer)
            point = {"auc": round(auc(views["y"], p), 4), "ci95": auc_interval(views["y"], p)}
            if base is None:
                base = p
            else:
                point["vs_one"] = auc_difference(views["y"], base, p)
            report["routings"][name].setdefault("test", {})[split] = point
    return report


def plan_routes(train: dict[str, np.ndarray], evals: dict[str, dict[str, np.ndarray]],
                questions: dict[str, str]) -> tuple[dict[str, np.ndarray], dict[str, dict[str, np.ndarray]]]:
    """The routings compared (one reader; a reader per hop plan; per source, training rows only), from each view
    row's question (``questions``: id -> text) read as the agent's anchor step reads it."""
    from studies.chain_report import question_plan

    def plans(ids: np.ndarray) -> np.ndarray:
        if missing := [str(i) for i in ids if str(i) not in questions]:
            raise ValueError(f"no question in the draws or splits named for {len(missing)} of {len(ids)} views (first: "
                             f"{missing[0]}): the draw sizes must be those the views were collected with")
        return np.array(["multi-hop" if question_plan(questions[str(i)])[0].multi_hop else "single" for i in ids])

    one, by_plan = "one reader", "a reader per hop plan"
    hotpot = np.char.startswith(train["sources"].astype(str), "hotpotqa")
    train_routes = {one: np.full(len(train["y"]), "all"), by_plan: plans(train["ids"]),
                    "a reader per source (not known at run time)": np.where(hotpot, "hotpotqa", "other")}
    return train_routes, {name: {one: np.full(len(v["y"]), "all"), by_plan: plans(v["ids"])} for name, v in evals.items()}


def routes_heading(report: dict[str, Any]) -> str:
    return (f"# One answerability reader, or one per hop plan\n\nThe reader `{' + '.join(report['reader'])}` (as shipped) "
            f"fitted once on all {report['train_rows']} training views, or once per route; out of fold on the training "
            "views (5 folds by article), and fitted on all of them and read on each test split's views.")


def routes_table(report: dict[str, Any]) -> str:
    """The report as markdown: a row per routing; out of fold per source, then each test split."""
    sources = [s for s in report["rows_by_source"] if any(s in r["out_of_fold"] for r in report["routings"].values())]
    splits = list(dict.fromkeys(s for r in report["routings"].values() for s in r.get("test", {})))

    def cell(point: dict[str, Any] | float | None, diff: dict[str, float] | None) -> str:
        if point is None:
            return "-"
        text = f"{point:.3f}" if isinstance(point, float) else f"{point['auc']:.3f}"
        return text + (f", {diff['diff']:+.3f} ({diff['ci95_low']:+.3f} to {diff['ci95_high']:+.3f})" if diff else "")

    head = ["reader", "rows per route", "out of fold: all"] + [f"out of fold: {s}" for s in sources] + [
        f"{s} (test)" for s in splits]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for name, r in report["routings"].items():
        vs = r.get("out_of_fold_vs_one", {})
        cells = [name, ", ".join(f"{k}: {v}" for k, v in r["routes"].items()), cell(r["out_of_fold"]["all"], vs.get("all"))]
        cells += [cell(r["out_of_fold"].get(s), vs.get(s)) for s in sources]
        cells += [cell(r.get("test", {}).get(s), r.get("test", {}).get(s, {}).get("vs_one")) for s in splits]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n\nEach difference is against the first row, paired, with its 95% bootstrap interval.\n"
