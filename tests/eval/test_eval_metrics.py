"""Run summaries, the calibration choice rule and the rule judge, on hand-made rows."""

import pytest

from agentic_rag.eval.calibrate import choose, parse_values
from agentic_rag.eval.judge import judge
from agentic_rag.eval.metrics import summarize, wilson_interval
from testkit import REPO


def row(gold, status, judgement, f1=0.0, citations=(), tokens_saved=0, calls=1):
    return {"gold": gold, "status": status, "judgement": judgement, "judge_rule": "abstained" if status != "ok" else "exact",
            "em": 0.0, "f1": f1, "tokens": {"total": 100}, "llm_calls": calls, "latency_ms": 10.0,
            "citations": list(citations), "tokens_saved": tokens_saved, "signals": {}}


def test_abstention_metrics():
    rows = [
        row("paris", "ok", "accurate", f1=1.0),
        row("paris", "refuse", "missing"),
        {**row("i don't know", "refuse", "missing", tokens_saved=500, calls=0), "reason": "ABSTAIN_LOW_RETRIEVAL_SCORE"},
        # refused by an LLM-graded tier 1: two grading calls, no generator call
        {**row("i don't know", "refuse", "missing", tokens_saved=400, calls=2), "reason": "ABSTAIN_LOW_RETRIEVAL_SCORE",
         "tokens": {"total": 300, "detail": {"grade": {"calls": 2, "total_tokens": 300}}}},
        row("i don't know", "ok", "incorrect"),
        row("i don't know", "refuse", "missing", citations=[{"n": 1}]),
    ]
    s = summarize(rows)
    assert (s["answerable"], s["unanswerable"]) == (2, 4)
    assert s["refusal_rate_unanswerable"] == 0.75 and s["false_acceptance_rate"] == 0.25
    assert s["false_refusal_rate"] == 0.5 and s["accuracy_answerable"] == 0.5
    assert s["hallucination"] == round(1 / 6, 4) and s["score"] == 0.0
    assert s["idk_with_citations"] == 1
    assert s["refused_before_generation"] == 2 and s["refused_before_generation_with_llm_call"] == 1
    assert s["refused_before_generation_with_generator_call"] == 0


def test_each_question_type_has_its_refusal_and_false_refusal_rates():
    typed = lambda kind, *a: {**row(*a), "question_type": kind}  # noqa: E731
    s = summarize([typed("bridge", "paris", "ok", "accurate", 1.0), typed("bridge", "paris", "refuse", "missing"),
                   typed("bridge", "i don't know", "refuse", "missing"), typed("comparison", "yes", "ok", "accurate", 1.0),
                   typed("comparison", "i don't know", "ok", "incorrect")])
    bridge, comparison = s["by_question_type"]["bridge"], s["by_question_type"]["comparison"]
    assert (bridge["false_refusal_rate"], bridge["refusal_rate_unanswerable"]) == (0.5, 1.0)
    assert (comparison["false_refusal_rate"], comparison["refusal_rate_unanswerable"]) == (0.0, 0.0)
    only_answerable = summarize([typed("simple", "paris", "ok", "accurate", 1.0)])["by_question_type"]["simple"]
    assert only_answerable["refusal_rate_unanswerable"] is None and only_answerable["false_refusal_rate"] == 0.0


def test_answers_to_negatives_that_match_the_real_answer_are_counted_apart_and_stay_incorrect():
    from agentic_rag.eval.rows import matches_world_answer

    world = {"world_answer": "Tampa, Florida", "world_alternatives": ["Tampa"]}
    leaked = {**row("i don't know", "ok", "incorrect"), **world,
              "prediction": "Super Bowl LV was played in Tampa, Florida [1].", "short_answer": "Tampa, Florida"}
    wrong = {**row("i don't know", "ok", "incorrect"), **world,
             "prediction": "It was played in Glendale, Arizona [1].", "short_answer": "Glendale, Arizona"}
    refused = {**row("i don't know", "refuse", "missing"), **world, "prediction": "I don't know.", "short_answer": ""}
    assert [matches_world_answer(r) for r in (leaked, wrong, refused)] == [True, False, False]
    rows = [{**r, "matches_world_answer": matches_world_answer(r)} for r in (leaked, wrong, refused)]
    s = summarize(rows)
    assert s["answered_with_world_answer"] == 1 and s["hallucination"] == round(2 / 3, 4)
    assert summarize([row("i don't know", "ok", "incorrect")])["answered_with_world_answer"] is None


def test_calibration_rule_respects_the_false_refusal_cap():
    rows = [
        {"value": 0.2, "score": 0.1, "refusal_rate_unanswerable": 0.5, "false_refusal_rate": 0.05},
        {"value": 0.4, "score": 0.3, "refusal_rate_unanswerable": 0.8, "false_refusal_rate": 0.10},
        {"value": 0.6, "score": 0.4, "refusal_rate_unanswerable": 0.95, "false_refusal_rate": 0.40},
    ]
    assert choose(rows, 0.3, 0.15)["value"] == 0.4
    assert choose(rows, 0.3, 0.5)["value"] == 0.6
    assert choose(rows, 0.3, 0.01)["value"] == 0.2  # nothing meets the cap: the lowest false refusal wins
    assert parse_values("RETRIEVAL_MIN_SCORE", "0.1, 0.2") == [0.1, 0.2]


def test_judge_rules():
    assert judge("Paris is the capital.", "Paris", "paris", [], False, question="").label == "accurate"
    assert judge("I don't know.", "", "paris", [], True, question="").rule == "abstained"
    assert judge("It is Lyon.", "Lyon", "i don't know", [], False, question="").label == "incorrect"
    assert judge("The premise is false: he never won.", "", "invalid question", [], False, question="").label == "accurate"
    assert judge("about 3,696 feet", "3,696 feet", "3696", [], False, question="").rule in {"numeric", "contains"}
    assert judge("Berlin", "Berlin", "paris", ["Berlin"], False, question="").rule == "alias"


@pytest.mark.parametrize("prediction, gold", [
    ("Lionel Andr\u00e9s Messi Cuccittini", "Lionel Messi"),
    ("The award went to Lionel Andres Messi Cuccittini [1].", "lionel messi"),
    ("It was John Quincy Adams.", "John Adams"),
    ("Wolfgang Amadeus Theophilus Mozart", "wolfgang mozart"),
    ("Johann Wolfgang von Goethe", "Johann Goethe"),  # a lower-case particle inside the name
    ("Pablo Diego Ruiz Picasso painted it.", "Pablo Picasso"),
])
def test_a_full_name_that_extends_the_gold_name_is_accurate(prediction, gold):
    j = judge(prediction, prediction, gold, [], False, question="")
    assert (j.label, j.rule) == ("accurate", "full_name")


@pytest.mark.parametrize("prediction, gold", [
    ("William Jefferson Clinton", "Bill Clinton"),  # a gold word is missing
    ("John Adams and Will Smith met.", "John Smith"),  # the words are in two names
    ("John went home and Smith stayed.", "John Smith"),  # far apart in a sentence
    ("John Paul George Ringo Smith Jones", "John Smith"),  # too many added words
    ("Smith John Paul", "John Smith"),  # out of order
    ("George H. W. Bush", "George W. Bush"),  # an added initial: another person
    ("Lionel Scaloni", "Lionel"),  # a one-word gold
    ("New York 1999 Yankees Stadium", "New York Stadium"),  # digits break the name
    ("the manchester united football club", "manchester club"),  # not capitalised: not a name
])
def test_the_full_name_rule_refuses_near_misses(prediction, gold):
    assert judge(prediction, prediction, gold, [], False, question="").rule != "full_name"


def test_compare_writes_plots_and_a_paired_interval(tmp_path):
    import json

    from agentic_rag.eval.compare import compare, to_markdown, write_plots
    from agentic_rag.eval.plots import risk_coverage

    def run(name, judgements):
        d = tmp_path / name
        d.mkdir()
        rows = []
        for i, j in enumerate(judgements):
            r = row("x", "ok" if j != "missing" else "refuse", j, f1=float(j == "accurate"))
            r.update(id=str(i), query=f"q{i}", prediction="p", reason="R", score={"accurate": 1, "missing": 0, "incorrect": -1}[j],
                     signals={"overlap_est": 0.5 + 0.05 * i, "faith_est": 1.0, "answer_relevance": 0.9})
            rows.append(r)
        (d / "results.jsonl").write_text("\n".join(json.dumps(r) for r in rows))
        (d / "summary.json").write_text(json.dumps({"system": name, **summarize(rows)}))
        return d

    a = run("baseline", ["incorrect", "incorrect", "accurate", "incorrect"])
    b = run("agent", ["missing", "missing", "accurate", "incorrect"])
    result = compare([a, b])
    p = result["paired"][0]
    assert p["score_difference"]["diff"] == 0.5 and p["changes"]["wrong_to_missing"] == 2
    assert p["score_difference"]["ci95_low"] <= 0.5 <= p["score_difference"]["ci95_high"]
    plots = write_plots(result, tmp_path / "out")
    assert all(x.is_file() and x.stat().st_size > 1000 for x in plots)
    assert "risk_coverage.png" in to_markdown(result, plots=plots)
    pts = risk_coverage(result["runs"][1]["rows"])
    assert [round(c, 2) for c, _ in pts] == [0.25, 0.5]  # two answered of four
    from typer.testing import CliRunner

    from agentic_rag.cli import app

    shown = CliRunner().invoke(app, ["compare", str(a), str(b)])
    text = " ".join(shown.output.split())
    assert shown.exit_code == 0 and "{" not in text  # words, not a printed Python dict
    assert "CRAG score difference 0.5 (paired bootstrap 95% CI" in text and "wrong to missing: 2" in text


def test_compare_lists_the_right_answers_lost_and_the_question_types(tmp_path):
    import json

    from agentic_rag.eval.compare import compare, to_markdown

    def run(name, judgements):
        d = tmp_path / name
        d.mkdir()
        rows = [{**row("x", "ok" if j != "missing" else "refuse", j), "id": str(i), "query": f"question {i}",
                 "prediction": f"{name} answer {i}", "reason": "R", "question_type": "bridge" if i < 2 else "comparison",
                 "score": {"accurate": 1, "missing": 0, "incorrect": -1}[j]} for i, j in enumerate(judgements)]
        (d / "results.jsonl").write_text("\n".join(json.dumps(r) for r in rows))
        (d / "summary.json").write_text(json.dumps({"system": name, **summarize(rows)}))
        return d

    result = compare([run("baseline", ["accurate", "accurate", "accurate", "incorrect"]),
                      run("agent", ["accurate", "missing", "incorrect", "missing"])])
    p = result["paired"][0]
    assert p["right_answers_lost"] == ["1", "2"] and p["right_answers_kept"] == round(1 / 3, 4) and p["right_answers_of_base"] == 3
    text = to_markdown(result)
    lost = text.split("## Right answers lost")[1].split("## Per question")[0]
    assert "question 1" in lost and "question 2" in lost and "question 0" not in lost and "question 3" not in lost
    assert "agent answer 2" in lost and "baseline answer 1" in lost
    assert "## By question type" in text and "| comparison | agent |" in text
    # the same figures paired within each type: the multi-hop targets are read per bridge and comparison
    bridge, comparison = p["by_question_type"]["bridge"], p["by_question_type"]["comparison"]
    assert (bridge["questions"], bridge["right_answers_of_base"], bridge["right_answers_lost"]) == (2, 2, ["1"])
    assert bridge["score_difference"]["diff"] == -0.5 and comparison["score_difference"]["diff"] == -0.5
    assert comparison["right_answers_kept"] == 0.0 and comparison["right_answers_lost"] == ["2"]
    assert "| bridge | 2 | -0.500 (" in text and "| 1 of 2 |" in text and "| comparison | 2 | -0.500 (" in text and "| 0 of 1 |" in text
    assert result["runs"][1]["summary"]["by_question_type"]["bridge"]["tokens_per_q"] == 100.0


def test_compare_shows_what_the_fitted_cut_trades_between_right_answers_kept_and_twins_answered(tmp_path):
    """A run under the fitted decision (P(right) in its telemetry) paired with the baseline: every cut of
    P(right) replayed on the run's own drafts, a withheld draft scored as it would have been judged, a
    question refused before any draft or by another layer never moving."""
    import json

    from agentic_rag.eval.compare import compare, to_markdown, write_plots

    def folder(name, rows, p_right=None):
        d = tmp_path / name
        d.mkdir()
        rows = [{**r, "id": str(i), "query": f"question {i}", "prediction": r.get("draft") or "p", "reason": "R",
                 "score": {"accurate": 1, "missing": 0, "incorrect": -1}[r["judgement"]]} for i, r in enumerate(rows)]
        (d / "results.jsonl").write_text("\n".join(json.dumps(r) for r in rows))
        (d / "summary.json").write_text(json.dumps({"system": name, **summarize(rows)}))
        if p_right is not None:
            (d / "config.json").write_text(json.dumps({"settings": {"WRONG_ANSWER_COST": 1.0}}))
            telemetry = [{"question_id": str(i), "round": k, "p_right": p * k / 2} for i, p in p_right.items() for k in (1, 2)]
            (d / "telemetry.jsonl").write_text("\n".join(json.dumps(t) for t in telemetry))
        return d

    def drafted(gold, status, judgement, draft):
        return {**row(gold, status, judgement), "draft": draft}

    base = folder("baseline", [row("paris", "ok", "accurate"), row("rome", "ok", "accurate"), row("oslo", "ok", "accurate"),
                               row("lima", "ok", "accurate"), row("i don't know", "ok", "incorrect"),
                               row("i don't know", "ok", "incorrect")])
    agent = [drafted("paris", "ok", "accurate", "Paris."),  # kept, P 0.9
             drafted("rome", "refuse", "missing", "It is Rome."),  # a right draft withheld at P 0.4
             drafted("oslo", "refuse", "missing", "It is Bergen."),  # a wrong draft withheld at P 0.3
             row("lima", "refuse", "missing"),  # refused before any draft: never moves
             drafted("i don't know", "refuse", "missing", "It is Nice."),  # a twin's draft withheld at P 0.2
             drafted("i don't know", "refuse", "missing", "It is Pisa.")]  # cleared the cut, refused by another layer
    with_p = folder("agent", agent, {0: 0.9, 1: 0.4, 2: 0.3, 4: 0.2, 5: 0.7})
    result = compare([base, with_p])
    f = result["paired"][0]["kept_frontier"]
    assert (f["cut"], f["right_of_base"], f["unanswerable"]) == (0.5, 4, 2)
    assert f["as_run"] == {"threshold": 0.5, "right_answers_kept": 0.25, "unanswerable_answered": 0.0}
    assert f["every_draft"] == {"threshold": -1.0, "right_answers_kept": 0.5, "unanswerable_answered": 0.5}  # the ceiling
    at = {c["threshold"]: (c["right_answers_kept"], c["unanswerable_answered"]) for c in f["by_tenth"]}
    assert at[0.1] == (0.5, 0.5) and at[0.3] == (0.5, 0.0) and at[0.4] == (0.25, 0.0) and at[0.9] == (0.0, 0.0)
    # the drafts that keep a right answer (0.9, 0.4) against the twins' (0.2, and 0.7 refused by another layer)
    assert f["auc"] == 0.75
    text = to_markdown(result, plots=write_plots(result, tmp_path / "out"))
    section = text.split("## agent: right answers of baseline kept against unanswerable questions answered")[1]
    assert "P(right) > 0.5" in section and "| as run (0.5) | 0.25 | 0.0 |" in section
    assert "| every draft answered | 0.5 | 0.5 |" in section and "AUC 0.75" in section
    assert "kept_frontier.png" in text and (tmp_path / "out" / "kept_frontier.png").read_bytes()[:4] == b"\x89PNG"
    # a run under the threshold policy has no P(right): no section, no plot
    plain = compare([base, folder("thresholds", agent)])
    assert plain["paired"][0]["kept_frontier"] is None and "by the cut of P(right)" not in to_markdown(plain)
    # a damaged telemetry line is passed over, a damaged config.json shows no trade; the rows are still compared
    with (with_p / "telemetry.jsonl").open("a") as telemetry:
        telemetry.write("\n" + json.dumps({"question_id": "1", "round": 3, "p_right": "high"}) + "\n" + json.dumps({"p_right": 0.3}))
    assert compare([base, with_p])["paired"][0]["kept_frontier"] == f
    (with_p / "config.json").write_text(json.dumps({"settings": {"WRONG_ANSWER_COST": "one"}}))
    damaged = compare([base, with_p])["paired"][0]
    assert damaged["kept_frontier"] is None and damaged["right_answers_kept"] == 0.25


def test_abstain_r1_names_match_the_definitions():
    rows = [row("a", "ok", "accurate", f1=1.0), row("a", "refuse", "missing"), row("i don't know", "refuse", "missing"),
            row("i don't know", "ok", "incorrect")]
    s = summarize(rows)
    assert (s["a_acc"], s["a_fu"], s["u_ref"]) == (0.5, 0.5, 0.5)
    assert s["a_fu"] == s["false_refusal_rate"] and s["u_ref"] == s["refusal_rate_unanswerable"]


def test_wilson_interval_brackets_the_rate_and_narrows_with_more_questions():
    lo, hi = wilson_interval(0.67, 100)
    assert (lo, hi) == (0.573, 0.754)  # the SQuAD test refusal: 0.70 lies inside, so the miss is within noise
    assert lo < 0.67 < hi
    wide, narrow = wilson_interval(0.16, 100), wilson_interval(0.16, 1000)
    assert narrow[0] > wide[0] and narrow[1] < wide[1]
    # no refusal in 10 questions still allows a true rate up to z^2 / (n + z^2)
    assert wilson_interval(0.0, 10) == [0.0, round(1.96**2 / (10 + 1.96**2), 3)]
    assert wilson_interval(1.0, 10)[1] == 1.0
    assert wilson_interval(0.5, 0) is None


def test_targets_plot_has_a_row_per_rate_target_and_each_generators_own_bar(tmp_path, monkeypatch):
    from agentic_rag.eval import plots

    def report(refusal, halluc, baseline):
        return {"squad": {"targets": {
            "refusal_rate_unanswerable >= 0.70": {"agent": refusal, "interval_95": wilson_interval(refusal, 100)},
            "hallucination <= baseline / 2": {"agent": halluc, "baseline": baseline, "interval_95": wilson_interval(halluc, 200)},
            "refused before generation without an LLM call": {"refused_before_generation": 2, "with_llm_call": 0},
        }}}

    plt = plots.pyplot()
    drawn = []  # (x, middle y) of every vertical target bar
    subplots = plt.subplots

    def spying_subplots(*args, **kwargs):
        fig, ax = subplots(*args, **kwargs)
        plot = ax.plot

        def spy(*a, **kw):
            if kw.get("color") == "black":
                drawn.append((a[0][0], round(sum(a[1]) / 2, 3)))
            return plot(*a, **kw)

        ax.plot = spy
        return fig, ax

    monkeypatch.setattr(plt, "subplots", spying_subplots)
    path = plots.plot_targets([("0.5B", report(0.56, 0.34, 0.725)), ("1.5B", report(0.65, 0.23, 0.59))], tmp_path / "t.png")
    assert path.read_bytes()[:4] == b"\x89PNG"
    # two rows (the count target has no interval), a target bar per generator beside its own point:
    # refusal at 0.70 for both, hallucination at each one's baseline halved
    assert sorted(drawn) == sorted([(0.70, -0.075), (0.70, 0.075), (0.3625, 0.925), (0.295, 1.075)])


def test_frontier_replays_only_the_final_check_from_stored_readings():
    from agentic_rag.eval.frontier import frontier, reading_of, replay

    def drafted(gold, status, p, q, v):
        readings = {"answerability": p, "quote_answerability": q, "support_verdict": v}
        return {**row(gold, status, "accurate" if status == "ok" else "missing"),
                "signals": {**readings, "verified_score": round((p + q + v) / 3, 4)}}

    right = drafted("paris", "ok", 0.8, 0.4, 0.6)
    early = row("paris", "refuse", "missing")  # refused before the final check: no readings, stays refused
    wrong = drafted("i don't know", "ok", 0.3, 0.3, 0.3)
    withheld = drafted("i don't know", "refuse", 0.45, 0.45, 0.45)  # refused by the final check at 0.5
    rows = [right, early, wrong, withheld]
    assert reading_of(early, "answerability") is None and reading_of(right, "mean_with_probes") == 0.6
    assert replay(rows, "answerability", 0.5) == {"refusal_unanswerable": 1.0, "false_refusal": 0.5}
    assert replay(rows, "quote_answerability", 0.5) == {"refusal_unanswerable": 1.0, "false_refusal": 1.0}
    # a lower cut lets the withheld draft and the wrong one through; the early refusal never moves
    assert replay(rows, "mean_with_probes", 0.2) == {"refusal_unanswerable": 0.0, "false_refusal": 0.5}
    curves = frontier(rows, [0.0, 1.0])
    assert curves["probes"][0] == {"threshold": 0.0, "refusal_unanswerable": 0.0, "false_refusal": 0.5}
    assert curves["probes"][1] == {"threshold": 1.0, "refusal_unanswerable": 1.0, "false_refusal": 1.0}


def test_cut_curve_recuts_one_score_and_keeps_what_other_layers_decided(tmp_path):
    from agentic_rag.eval.frontier import cut_curve, operating_bounds
    from agentic_rag.eval.plots import plot_refusal_tradeoff

    def scored(gold, status, p):
        return {**row(gold, status, "accurate" if status == "ok" else "missing"), "p": p}

    rows = [scored("paris", "ok", 0.9), scored("paris", "refuse", 0.4),  # answered; withheld by the 0.5 cut
            scored("i don't know", "ok", 0.6), scored("i don't know", "refuse", 0.2),
            scored("i don't know", "refuse", None),  # refused before any draft was scored: never moves
            scored("i don't know", "refuse", 0.7)]  # cleared the cut, refused by another layer: never moves
    curve = cut_curve(rows, lambda r: r["p"], 0.5, [-1.0, 0.2, 0.5, 0.6, 0.9])
    assert curve[2] == {"threshold": 0.5, "refusal_unanswerable": 0.75, "false_refusal": 0.5}  # the run itself
    assert [(c["refusal_unanswerable"], c["false_refusal"]) for c in curve] == [
        (0.5, 0.0), (0.75, 0.0), (0.75, 0.5), (1.0, 0.5), (1.0, 1.0)]
    bounds = operating_bounds([c["refusal_unanswerable"] for c in curve], [c["false_refusal"] for c in curve], 0.12, 0.9)
    assert bounds == {"best_refusal_within_cap": 0.75, "false_refusal_to_reach_target": 0.5}
    assert operating_bounds([0.5], [0.3], 0.12, 0.9) == {"best_refusal_within_cap": None, "false_refusal_to_reach_target": None}
    path = plot_refusal_tradeoff({"p": curve}, {"as run": (0.5, 0.75)}, (0.12, 0.9), tmp_path / "r.png", "t")
    assert path.read_bytes()[:4] == b"\x89PNG"


def _refusal_rows():
    def r(gold, status, reason, judge_rule=None, draft=None):
        return {**row(gold, status, "missing" if status != "ok" else "accurate"), "reason": reason,
                **({"judge_rule": judge_rule} if judge_rule else {}), **({"draft": draft} if draft else {})}

    return [
        r("paris", "refuse", "ABSTAIN_NOT_VERIFIED", draft="The capital is Paris."),  # a right answer withheld
        r("paris", "refuse", "ABSTAIN_NOT_VERIFIED", draft="It is Marseille."),  # a wrong one caught
        r("i don't know", "refuse", "ABSTAIN_NOT_VERIFIED"),
        r("i don't know", "refuse", "ABSTAIN_LOW_RETRIEVAL_SCORE"),
        r("i don't know", "refuse", "ABSTAIN_LOW_RETRIEVAL_SCORE"),
        r("invalid question", "refuse", "ABSTAIN_LOW_RETRIEVAL_SCORE"),
        r("lyon", "ok", "STOP_OVERLAP_OK", judge_rule="abstained"),  # the answer itself said it does not know
        r("lyon", "ok", "STOP_OVERLAP_OK"),
        r("i don't know", "ok", "STOP_OVERLAP_OK"),
    ]


def test_refusals_are_counted_per_reason_code_against_the_gold():
    from agentic_rag.eval.refusals import ANSWERED_IDK, refusal_table, refusals_by_reason

    by = refusals_by_reason(_refusal_rows())
    assert list(by) == ["ABSTAIN_LOW_RETRIEVAL_SCORE", "ABSTAIN_NOT_VERIFIED", ANSWERED_IDK]  # most refusals first
    assert by["ABSTAIN_NOT_VERIFIED"] == {"refused": 3, "refused_answerable": 2, "refused_unanswerable": 1,
                                          "refused_false_premise": 0, "answerable_per_unanswerable": 2.0,
                                          "share_of_answerable": 0.5,  # 2 of the 4 answerable questions
                                          "withheld_right": 1, "withheld_wrong": 1}  # their drafts, judged
    assert by["ABSTAIN_LOW_RETRIEVAL_SCORE"]["withheld_right"] == 0  # no draft: refused before generation
    low = by["ABSTAIN_LOW_RETRIEVAL_SCORE"]
    assert (low["refused_answerable"], low["refused_unanswerable"], low["refused_false_premise"]) == (0, 2, 1)
    assert low["answerable_per_unanswerable"] == 0.0
    assert by[ANSWERED_IDK]["refused_answerable"] == 1 and by[ANSWERED_IDK]["answerable_per_unanswerable"] is None
    # the per-code counts add up to the run's refusals of each group
    s = summarize(_refusal_rows())
    assert s["refusals_by_reason"] == by
    assert sum(c["refused_answerable"] for c in by.values()) == round(s["false_refusal_rate"] * s["answerable"])
    assert sum(c["refused_unanswerable"] for c in by.values()) == round(s["refusal_rate_unanswerable"] * s["unanswerable"])
    table = refusal_table(by)
    assert table[2].startswith("| ABSTAIN_LOW_RETRIEVAL_SCORE | 3 | 0 | 2 | 1 | 0.0 | 0.0 |")
    assert table[3] == "| ABSTAIN_NOT_VERIFIED | 3 | 2 | 1 | 0 | 2.0 | 0.5 | 1 / 1 |"
    assert table[-1] == f"| {ANSWERED_IDK} | 1 | 1 | 0 | 0 | - | 0.25 | 0 / 0 |"


def test_the_readers_refusals_are_counted_apart():
    from agentic_rag.eval.refusals import reader_refusals

    rows = [{**r, "reason": "ABSTAIN_NOT_ANSWERABLE" if r["reason"] == "ABSTAIN_NOT_VERIFIED" else r["reason"]}
            for r in _refusal_rows()]
    assert reader_refusals(rows) == {"reason": "ABSTAIN_NOT_ANSWERABLE", "answerable": 2, "answerable_draft_right": 1,
                                     "unanswerable": 1}
    assert reader_refusals(_refusal_rows())["answerable"] == 0  # no refusal of the reader's


@pytest.mark.system  # starts a child process
def test_bench_refusals_writes_the_table_of_a_run_folder(tmp_path):
    import json
    import subprocess
    import sys

    run = tmp_path / "dev-run"
    run.mkdir()
    rows = [{**r, "id": str(i), "domain": "squad2" if i % 2 else "nq"} for i, r in enumerate(_refusal_rows())]
    rows[0]["missing"], rows[1]["missing"] = ["the 2019 season", "Bank of America"], ["between", "2019"]
    (run / "results.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    (run / "config.json").write_text(json.dumps({"system": "agent", "dataset": "data/dev.jsonl", "model": {"model": "m"}}))
    script = REPO / "scripts" / "bench_refusals.py"
    done = subprocess.run([sys.executable, str(script), str(run), "--by", "domain", "--out", str(tmp_path / "out")],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    entry = json.loads((tmp_path / "out" / "dev-run.json").read_text())[0]
    assert (entry["answerable"], entry["refused_answerable"], entry["unanswerable"], entry["refused_unanswerable"]) == (4, 3, 4, 3)
    assert entry["by_reason"]["ABSTAIN_NOT_VERIFIED"]["refused_answerable"] == 2
    # a filler word as a missing piece is reported; a name that holds a stop word is not
    assert entry["refusals_with_missing"] == 2 and entry["filler_in_missing"] == [{"id": "1", "piece": "between"}]
    assert set(entry["by_domain"]) == {"nq", "squad2"}
    md = (tmp_path / "out" / "dev-run.md").read_text()
    assert "| ABSTAIN_NOT_VERIFIED | 3 | 2 | 1 | 0 | 2.0 | 0.5 |" in md and "### domain = nq" in md
    missing = subprocess.run([sys.executable, str(script), str(tmp_path / "nothing")], capture_output=True, text=True, timeout=120)
    assert missing.returncode != 0 and "no results.jsonl rows" in missing.stderr and "Traceback" not in missing.stderr


def test_risk_coverage_ranks_by_the_given_score_and_mean_risk_compares_over_common_coverage():
    from agentic_rag.eval.plots import mean_risk, risk_coverage, top_cosine

    def answered(judgement, cosine, kind="retrieve"):
        passages = [{"vector_score": cosine - 0.2}, {"vector_score": cosine}]
        event = {"node": "retrieve", "passages": passages} if kind == "retrieve" else \
            {"node": "worker", "paths": [{"kept": passages[:1]}, {"kept": passages[1:]}]}
        return {"status": "ok", "judgement": judgement, "events": [event], "signals": {}}

    rows = [answered("incorrect", 0.9), answered("accurate", 0.8, kind="worker"), answered("accurate", 0.7),
            {"status": "refuse", "judgement": "missing", "events": []}]
    assert [top_cosine(r) for r in rows] == [0.9, 0.8, 0.7, 0.0]  # a baseline's retrieval or an agent's kept paths
    pts = risk_coverage(rows, top_cosine)
    assert pts == [(0.25, 0.0), (0.5, 0.5), (0.75, 2 / 3)]  # the wrong answer was the most similar one
    assert mean_risk(pts) == round((1.0 + 0.5 + 1 / 3) / 3, 4)
    assert mean_risk(pts, upto=0.5) == 0.75  # only the thresholds a system answering half reaches
    assert mean_risk([], upto=0.5) is None


def test_judge_contains_takes_a_plural_for_its_singular():
    # squad200: "approximately 1015 Kelvin" states the gold "1015 kelvins" and was scored a hallucination
    said = "At temperatures in excess of approximately 1015 Kelvin, both forces appear the same."
    assert judge(said, said, "1015 kelvins", [], refused=False, question="").label == "accurate"
    assert judge("The grass is green.", "", "glas", [], refused=False, question="").label == "incorrect"
    assert judge("It is 1015 kelvins.", "", "1016 kelvins", [], refused=False, question="").label == "incorrect"
