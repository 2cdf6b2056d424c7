"""Replay the final check of a finished run at other thresholds, per reading, without calling a model.

Why: ``VERIFIER_MIN`` is one cut on one reading. To ask whether *any* cut on *any* reading the run
recorded could meet the refusal and false-refusal targets together, each answered or final-check-refused
draft is re-decided from its stored readings; questions decided before the final check keep their
outcome. The replay is exact for the final check (it is the last decision on a draft and reads nothing
else), so its curves are the operating frontier of the readings this machine's models give.
"""

from __future__ import annotations

from pathlib import Path
from statistics import fmean
from typing import Any, Callable

from agentic_rag.baug.verifier import COMBINE_PARTS
from agentic_rag.eval.rows import gold_groups, gold_is_idk, is_refusal

# each reading the replay can cut: the single readings, and the means VERIFIER_COMBINE offers
READINGS: dict[str, tuple[str, ...]] = {
    "answerability": ("answerability",),
    "quote_answerability": ("quote_answerability",),
    "support_verdict": ("support_verdict",),
    **{mode: parts for mode, parts in COMBINE_PARTS.items() if len(parts) > 1},
}


def reading_of(row: dict[str, Any], reading: str) -> float | None:
    """The mean of the row's stored readings that ``reading`` names; None when the draft never reached
    the final check or none of them was taken."""
    signals = row.get("signals") or {}
    if "verified_score" not in signals:
        return None
    parts = [signals[p] for p in READINGS[reading] if signals.get(p) is not None]
    return fmean(parts) if parts else None


Groups = tuple[list[dict[str, Any]], list[dict[str, Any]]]  # (answerable, unanswerable), as eval.rows.gold_groups


def _rates(groups: Groups, refused: Callable[[dict[str, Any]], bool]) -> dict[str, float | None]:
    def rate(group: list[dict[str, Any]]) -> float | None:
        return round(sum(map(refused, group)) / len(group), 4) if group else None

    answerable, unanswerable = groups
    return {"refusal_unanswerable": rate(unanswerable), "false_refusal": rate(answerable)}


def replay(rows: list[dict[str, Any]], reading: str, threshold: float) -> dict[str, float | None]:
    """Refusal on unanswerable and false refusal on answerable questions had the final check cut
    ``reading`` at ``threshold``."""
    def refused(row: dict[str, Any]) -> bool:
        value = reading_of(row, reading)
        return is_refusal(row) if value is None else value < threshold

    return _rates(gold_groups(rows), refused)


def frontier(rows: list[dict[str, Any]], thresholds: list[float]) -> dict[str, list[dict[str, float | None]]]:
    return {name: [{"threshold": t, **replay(rows, name, t)} for t in thresholds] for name in READINGS}


def cut_curve(rows: list[dict[str, Any]], score: Callable[[dict[str, Any]], float | None], cut: float,
              thresholds: list[float]) -> list[dict[str, float | None]]:
    """Refusal on unanswerable and false refusal on answerable questions had the decision cut ``score``
    at each of ``thresholds`` instead of at ``cut``. A question keeps its outcome where it has no score
    (decided before any draft was scored) or where the run refused it although its score cleared
    ``cut`` (another layer refused it)."""
    def refused_at(t: float) -> Callable[[dict[str, Any]], bool]:
        return lambda row: refused_at_cut(row, score(row), cut, t)

    groups = gold_groups(rows)
    return [{"threshold": t, **_rates(groups, refused_at(t))} for t in thresholds]


def refused_at_cut(row: dict[str, Any], value: float | None, cut: float, threshold: float) -> bool:
    """Whether a question would be refused had the decision cut its score ``value`` at ``threshold``
    instead of ``cut``: as the run decided it where it has no score, or where another layer refused it
    although its score cleared ``cut``."""
    if value is None or (is_refusal(row) and value > cut):
        return is_refusal(row)
    return value <= threshold


def p_right_by_question(run_dir: str | Path) -> dict[str, float]:
    """The P(right) the fitted decision gave each question's last judged draft, from the run's telemetry
    (none for a question decided before any draft was judged, or a run under the threshold policy). A run
    folder restored from its committed files has no telemetry: there the P is replayed from each row's
    last signals with the decision file the run recorded, where that file is still the same."""
    from agentic_rag.telemetry import json_number, read_rows

    last: dict[str, float] = {}
    for rec in read_rows(Path(run_dir) / "telemetry.jsonl"):  # none when the run wrote no telemetry
        if (value := json_number(rec.get("p_right"))) is not None and rec.get("question_id") is not None:
            last[str(rec["question_id"])] = float(value)  # a damaged line's value is not read as a probability
    return last or replayed_p_right(run_dir)


def replayed_p_right(run_dir: str | Path) -> dict[str, float]:
    """Each judged draft's P(right) from the run's rows: the one its last decide event kept, else computed
    again from its last signals by the decision the run's config.json names, when the file there still
    has the SHA-256 the run recorded (another decision would give other figures). Only drafts the fitted
    decision itself decided have a P: its last decision is ``STOP_FITTED`` or a refusal it explains (a
    hedge or a failed input check is refused by rule before the decision is read)."""
    from agentic_rag.eval.results import read_results

    decision = _recorded_decision(Path(run_dir))
    out: dict[str, float] = {}
    for row in read_results(Path(run_dir) / "results.jsonl"):
        if (kept := last_decision(row).get("p_right")) is not None:
            out[str(row["id"])] = float(kept)
        elif decision is not None and fitted_last(row):
            out[str(row["id"])] = p_right_of(decision, row)
    return out


def p_right_of(decision, row: dict[str, Any]) -> float:
    """The P(right) ``decision`` gives a row's last draft, from its signals (the verified model where the
    verifier's verdict is among them): another decision replayed on a run's drafts."""
    from agentic_rag.baug.fitted import VERIFIER_FEATURE

    signals = row.get("signals") or {}
    model = decision.verified if signals.get(VERIFIER_FEATURE) is not None and decision.verified else decision.base
    return round(model.probability(signals), 4)


def _recorded_decision(run_dir: Path):
    """The decision file a run's config.json names, if it is still the file the run read (same SHA-256): the
    path it recorded, else the shipped file of that name, else one a later refit replaced
    (``fitted.PREVIOUS_DECISIONS_DIR``), so committed runs keep their P(right) after a refit."""
    import hashlib
    import json

    from agentic_rag.baug.fitted import DECISIONS_DIR, PREVIOUS_DECISIONS_DIR, load_decision

    try:
        named = json.loads((run_dir / "config.json").read_text()).get("decision") or {}
        path = Path(str(named["path"]))
        stem = path.name.removesuffix(".json")
        candidates = [path, DECISIONS_DIR / path.name, *sorted(PREVIOUS_DECISIONS_DIR.glob(f"{stem}.*.json"))]
        for candidate in candidates:
            if candidate.is_file() and hashlib.sha256(candidate.read_bytes()).hexdigest() == named.get("sha256"):
                return load_decision(candidate)
        return None
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return None


def last_decision(row: dict[str, Any]) -> dict[str, Any]:
    decided = [e.get("decision") or {} for e in row.get("events") or () if e.get("node") == "decide"]
    return decided[-1] if decided else {}


def fitted_last(row: dict[str, Any]) -> bool:
    """Whether the row's last decision was the fitted decision's (see ``replayed_p_right``)."""
    from agentic_rag.baug.fitted import FITTED_EXPLANATION_OPENS, STOP_FITTED_REASON

    last = last_decision(row)
    return last.get("reason") == STOP_FITTED_REASON or str(last.get("explanation", "")).startswith(FITTED_EXPLANATION_OPENS)


def kept_frontier(base: dict[str, dict[str, Any]], other: dict[str, dict[str, Any]], ids: list[str],
                  p_right: dict[str, float], cut: float) -> dict[str, Any] | None:
    """What the fitted decision's cut trades, on the questions ``ids`` of two runs: the right answers of
    ``base`` that ``other`` keeps against the unanswerable questions ``other`` answers, had it cut P(right)
    at every value instead of at ``cut``.

    Each question keeps the last draft and P(right) the run wrote: a draft refused at ``cut`` and answered
    at a lower one is scored as its draft would have been judged (``withheld_right_answer``), and a lower
    cut cannot show what an answer in an earlier round would have saved, so the curve is the trade of the
    run's own drafts, not an operating point. The AUC is P(right)'s, between the drafts that keep a right
    answer of ``base`` and those of the unanswerable questions; the ceiling is ``kept`` with every draft
    answered. None where no question has a P(right) (a run under the threshold policy) or nothing to keep."""
    from agentic_rag.eval.metrics import auc
    from agentic_rag.eval.refusals import draft_right

    right = [i for i in ids if base[i]["judgement"] == "accurate"]
    unanswerable = [i for i in ids if gold_is_idk(other[i])]
    if not right or not unanswerable or not any(i in p_right for i in ids):
        return None

    keeps = {i: draft_right(other[i]) for i in right}

    def at(t: float) -> dict[str, float]:
        answered = {i: not refused_at_cut(other[i], p_right.get(i), cut, t) for i in [*right, *unanswerable]}
        return {"threshold": round(t, 4),
                "right_answers_kept": round(sum(answered[i] and keeps[i] for i in right) / len(right), 4),
                "unanswerable_answered": round(sum(answered[i] for i in unanswerable) / len(unanswerable), 4)}

    scored = [(1, p_right[i]) for i in right if keeps[i] and i in p_right] + \
             [(0, p_right[i]) for i in unanswerable if i in p_right]
    area = auc([y for y, _ in scored], [s for _, s in scored])
    return {"cut": round(cut, 4), "right_of_base": len(right), "unanswerable": len(unanswerable),
            "auc": None if area != area else round(area, 3),  # NaN: one side has no scored draft
            "as_run": at(cut), "every_draft": at(-1.0), "by_tenth": [at(k / 10) for k in range(1, 10)],
            "curve": [at(t) for t in [-1.0, *sorted({p_right[i] for i in ids if i in p_right}), 1.0]]}


def operating_bounds(refusal: list[float | None], false_refusal: list[float | None], max_false_refusal: float,
                     min_refusal: float) -> dict[str, float | None]:
    """Over the points of one curve: the most it refuses while false refusal stays at or under the cap,
    and the least false refusal at which its refusal reaches the target (None where no point does)."""
    pairs = [(r, f) for r, f in zip(refusal, false_refusal) if r is not None and f is not None]
    within = [r for r, f in pairs if f <= max_false_refusal]
    reach = [f for r, f in pairs if r >= min_refusal]
    return {"best_refusal_within_cap": max(within) if within else None,
            "false_refusal_to_reach_target": min(reach) if reach else None}
