"""The judge reads what an answer claims: the option a choice answer picks, a yes/no answer's polarity, a
denied name, a stated false premise; the short answer is the same claim. The answers are the ones the
committed runs and a new user's CRAG question produced (issue 67), and the hand-labelled audit
(benchmarks/judge_agreement/labels.jsonl) holds the judge to its agreement."""

from __future__ import annotations

import json
from collections import defaultdict

import pytest

from agentic_rag.claims import choice_options, chosen_option, polarity
from agentic_rag.eval.judge import judge, question_form
from agentic_rag.eval.rows import usable_gold
from agentic_rag.generator.short_answer import short_answer
from testkit import REPO

LABELS = REPO / "benchmarks" / "judge_agreement" / "labels.jsonl"

# (question, answer naming both options with the gold in the losing place, gold, the option it picks)
WRONG_PICKS = [
    ("Who is older, Jed Hoyer or John William Henry II?", "Jed Hoyer is older than John William Henry II.",
     "John William Henry II", "Jed Hoyer"),
    ("Whiich genus has more species, Dracula or Pistacia?", "The genus Pistacia has more species than the genus Dracula.",
     "Dracula", "Pistacia"),
    ("Which film director is younger, Robert Z. Leonard or Sinclair Hill?", "Robert Z. Leonard is younger than Sinclair Hill.",
     "Sinclair Hill", "Robert Z. Leonard"),
    ("Who is older, Ferdi Taygan or Mahesh Bhupathi?", "Mahesh Bhupathi is older than Ferdi Taygan.", "Ferdi Taygan",
     "Mahesh Bhupathi"),
    ("Which opera has more acts, Parsifal or Manon by Massenet?", "Manon by Massenet has more acts than Parsifal.", "Parsifal",
     "Manon by Massenet"),
    ("Which film is newer, The Apple Dumpling Gang or Heavyweights?", "The Apple Dumpling Gang is newer than Heavyweights.",
     "Heavyweights", "Apple Dumpling Gang"),
    ("which company distribute more dividends this year, muj or  tcbio?",
     "Based on the information provided, TCBIO distributes more dividends this year compared to Muj.", "muj", "tcbio"),
]


@pytest.mark.parametrize("question, answer, gold, picked", WRONG_PICKS)
def test_an_answer_that_names_both_options_and_picks_the_other_is_incorrect(question, answer, gold, picked):
    j = judge(answer, short_answer(question, answer), gold, [], False, question=question)
    assert (j.label, j.rule) == ("incorrect", "choice_other")
    assert short_answer(question, answer).lower() == picked.lower()  # the span that answers, never "information"


def test_the_same_answers_with_the_gold_picked_are_accurate_however_the_gold_is_written():
    cases = [
        ("Who is older, Ferdi Taygan or Mahesh Bhupathi?", "Ferdi Taygan is older than Mahesh Bhupathi.", "Ferdi Taygan"),
        ("Who has won more awards, Dan Schneider or Helen Hunt?", "Helen Hunt has won more awards than Dan Schneider.",
         "Helen Elizabeth Hunt"),
        ("Did Franki Valli sing with Hellogoodbye or The Four Seasons?",
         "Franki Valli did not sing with Hellogoodbye; she sang with The Four Seasons.", "The Four Seasons"),
        ("Who is older, Ferdi Taygan or Mahesh Bhupathi?", "Mahesh Bhupathi is not older than Ferdi Taygan.", "Ferdi Taygan"),
        ("Who is older, Ferdi Taygan or Mahesh Bhupathi?",
         "Taygan was born in 1954 and Bhupathi in 1974. Therefore, Ferdi Taygan is older.", "Ferdi Taygan"),
        ("which company has a higher return on assets, visa or mastercard?", "Visa has the higher return on assets.",
         "as of the current financial data, visa has a higher return on assets than mastercard, with 23.63%"),
    ]
    for question, answer, gold in cases:
        j = judge(answer, answer, gold, [], False, question=question)
        assert (j.label, j.rule) == ("accurate", "choice"), answer


def test_an_answer_that_picks_no_option_is_incorrect_and_says_so():
    question = "Which games, Strange Synergy or Qwirkle,  is a card game published by Steve Jackson Games?"
    answer = "Both Strange Synergy and Qwirkle are card games published by Steve Jackson Games."
    j = judge(answer, answer, "Strange Synergy", [], False, question=question)
    assert (j.label, j.rule) == ("incorrect", "choice_open")


def test_options_are_read_as_the_question_writes_them():
    assert choice_options("Which canal, Miami Canal or Dundee Canal, also supplies hydro-power?") == ("Miami Canal", "Dundee Canal")
    assert choice_options("Is Gasherbrum II or Nuptse closest to the tallest mountain?") == ("Gasherbrum II", "Nuptse")
    assert choice_options("Which of these battles occurred earlier--the Battle of Peleliu or the Battle of Belleau Wood?") == (
        "Battle of Peleliu", "Battle of Belleau Wood")
    assert choice_options("Who was born first Mahbub ul Haq or Ibn Arabi?") == ("Mahbub ul Haq", "Ibn Arabi")
    assert choice_options("Who won the 2018 Wimbledon?") is None
    # an "or" that offers no options: the gold picks neither, so the open-answer rules judge it
    question = "What type of auto racing, performed on clay or dirt surfaced oval tracks, is run for the championship?"
    assert question_form(question, "Dirt track racing") == "open"
    assert chosen_option("Nanda Devi is higher.", ("Nanda Devi", "Broad Peak")) == 0


def test_a_denied_name_is_not_the_answer():
    j = judge("Tiger Woods never won the Masters.", "Tiger Woods", "Tiger Woods", [], False, question="Who won the 1997 Masters?")
    assert (j.label, j.rule) == ("incorrect", "denied")
    j = judge("It was not Tiger Woods, but Nick Faldo.", "", "Tiger Woods", [], False, question="Who won the 1997 Masters?")
    assert j.label == "incorrect"
    j = judge("Tiger Woods won it; Nick Faldo did not.", "", "Tiger Woods", [], False, question="Who won the 1997 Masters?")
    assert (j.label, j.rule) == ("accurate", "contains")


def test_a_yes_no_gold_is_read_from_the_answers_polarity():
    q = "Are Ian Brown and Dee Snider both actors?"
    assert judge("No, Ian Brown and Dee Snider are not both actors.", "", "no", [], False, question=q).rule == "yes_no"
    # the word "no" later on is no answer of no
    j = judge("Yes, Ian Brown is an actor, and no one doubts Dee Snider is.", "", "no", [], False, question=q)
    assert (j.label, j.rule) == ("incorrect", "yes_no_other")
    assert judge("Ian Brown and Dee Snider are not both actors.", "", "no", [], False, question=q).label == "accurate"
    assert judge("Ian Brown is a singer from Warrington.", "", "no", [], False, question=q).rule == "yes_no_open"
    assert polarity("Based on the information provided, yes.") == "yes"
    assert short_answer("Are the directors of Jaws and Casino Royale both American?",
                        "The directors of Jaws and Casino Royale are both American.") == "yes"


def test_a_false_premise_needs_a_statement_that_it_fails():
    q = "what's the name of taylor swift's rap album before she transitioned to pop?"
    for said in ("Taylor Swift never released a rap album.", "There is no such album.", "The premise is false: she did not."):
        assert judge(said, "", "invalid question", [], False, question=q).label == "accurate", said
    for said in ("Her rap album is Folklore; it never charted.", "Her rap album was Red, which she never toured."):
        j = judge(said, "", "invalid question", [], False, question=q)
        assert (j.label, j.rule) == ("incorrect", "false_premise_missed"), said


def test_a_rounded_or_measured_gold_number_is_met_by_the_same_measure():
    assert judge("It is approximately 8 kilometers long.", "", "8 km", [], False, question="How long?").rule == "numeric"
    assert judge("It is 8 miles long.", "", "8 km", [], False, question="How long?").label == "incorrect"
    assert judge("About 3,000 Protestants were killed.", "", "Nearly 3,000", [], False, question="How many?").rule == "numeric"


def test_the_judge_agrees_with_the_hand_labelled_audit():
    """The audit's bar (issue 67): at least 97% overall, 95% on each question type with 40 or more rows, and
    no rule that accepts an answer a person found wrong more than 2% of the times it accepts."""
    rows = [r for r in map(json.loads, LABELS.read_text().splitlines()) if usable_gold(r["gold"])]
    assert len(rows) >= 380
    by_type, by_rule = defaultdict(list), defaultdict(list)
    for r in rows:
        j = judge(r["prediction"], r["short_answer"], r["gold"], r["alternatives"], False, question=r["query"])
        ok = j.label == r["hand_label"]
        by_type[r.get("audit_type", "earlier")].append(ok)
        if j.label == "accurate":
            by_rule[j.rule].append(r["hand_label"] == "accurate")
    overall = sum(sum(v) for v in by_type.values()) / len(rows)
    assert overall >= 0.97
    assert {k: round(sum(v) / len(v), 3) for k, v in by_type.items() if len(v) >= 40 and sum(v) / len(v) < 0.95} == {}
    assert {k: v.count(False) for k, v in by_rule.items() if v.count(False) > 0.02 * len(v)} == {}
    assert len(by_type["choice"]) >= 60 and len(by_type["yes_no"]) >= 40
