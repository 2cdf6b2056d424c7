"""The layouts report (studies/layouts.py): a draft right in every layout should be answered in every layout."""

from __future__ import annotations

import json

from studies.layouts import layout_of, measure

LAYOUTS = ("", "@support_only", "@snippets")


def _row(question: str, variant: str, layout: str, *, shown: bool, right: bool, p: float) -> tuple[dict, dict]:
    gold = "i don't know" if variant == "unanswerable" else "Paris"
    draft = "Paris is the capital." if right else "Lyon is the capital."
    row = {"id": f"hotpotqa-{question}-{variant}{layout}", "query": "What is the capital of France?", "gold": gold,
           "alternatives": [], "draft": draft, "prediction": draft if shown else "I don't know.",
           "status": "ok" if shown else "refuse", "judge_rule": "contains" if shown else "abstained",
           "judgement": ("accurate" if right else "incorrect") if shown else "missing"}
    return row, {"question_id": row["id"], "p_right": p}


def test_a_draft_right_everywhere_but_refused_in_one_layout_counts_against_the_decision(tmp_path):
    made = [_row("q1", "answerable", lay, shown=lay != "@snippets", right=True, p=0.9 if lay != "@snippets" else 0.3)
            for lay in LAYOUTS]
    made += [_row("q2", "answerable", lay, shown=True, right=lay != "", p=0.6) for lay in LAYOUTS]  # wrong once
    made += [_row("q1", "unanswerable", lay, shown=lay == "", right=False, p=0.2) for lay in LAYOUTS]
    (tmp_path / "results.jsonl").write_text("".join(json.dumps(r) + "\n" for r, _ in made))
    (tmp_path / "telemetry.jsonl").write_text("".join(json.dumps(t) + "\n" for _, t in made))
    report = measure(tmp_path)
    assert report["questions"] == 2 and report["layouts"] == ["distractors", "snippets", "support_only"]
    assert report["right_in_every_layout"] == 1 and report["answered_in_every_layout"] == 0  # q1, refused in snippets
    assert report["p_right_spread"]["max"] == 0.6
    assert report["per_layout"]["snippets"] == {"answerable": 2, "draft_right": 2, "answered_right": 1,
                                                "twins": 1, "twins_answered": 0}
    assert report["per_layout"]["distractors"]["twins_answered"] == 1
    assert layout_of("hotpotqa-abc-unanswerable@long_page") == ("hotpotqa-abc", "long_page")
