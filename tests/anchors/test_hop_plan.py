"""The hop plan: which questions need their answer found in steps, and what each step names (anchors/hops.py),
read from the question's shape with no model call."""

from __future__ import annotations

import pytest

from studies.chain_report import question_plan

BRIDGE_Q = "What government position was held by the woman who portrayed Corliss Archer in the film Kiss and Tell?"
COMPARE_Q = "Who is older, Annie Morton or Terry Richardson?"


def _plan(question: str):
    return question_plan(question)[0]  # as the agent's anchor step plans it


@pytest.mark.parametrize("question, shape", [
    (BRIDGE_Q, "bridge"),
    ("2014 S/S is the debut album of a South Korean boy group that was formed by who?", "bridge"),
    ("What screenwriter with credits for \"Evolution\" co-wrote a film starring Nicolas Cage and Téa Leoni?", "bridge"),
    ("Which Formula One World Champion had a teammate named Richie Ginther?", "bridge"),
    ("Who was a grandson of Aurelia Plath and was a fisheries biologist?", "bridge"),
    (COMPARE_Q, "comparison"),
    ("Are the Laleli Mosque and Esma Sultan Mansion located in the same neighborhood?", "comparison"),
    ("What profession does Kazuyuki Fujita and Gilbert Yvel have in common?", "comparison"),
    ("What Hindi thriller directed by Deepak Shivdasani features choreography by Phulwa Khamkar?", "bridge"),
    ("A Japanese manga series based on a high school student Ichitaka Seto is written by someone born in what year?",
     "bridge"),
    ("In which city is the ambassador of the Rabat-Salé-Kénitra administrative region to China based?", "bridge"),
    ("How many copies of Roald Dahl's variation on a popular anecdote sold?", "bridge"),  # a work by its possessive
    ("What type of sprite did Milada Šubrtová portray in Antonín Dvořák's reknowned opera?", "bridge"),
    ("Which Kentucky Writers Hall of Fame author has had works published by Dim Gray Bar Press?", "bridge"),
    ("Salisbury Woodland Gardens links a zoo with a park designed and built under the watchful eye of who?", "bridge"),
    ("What was the Roud Folk Song Index of the nursery rhyme inspiring What Are Little Girls Made Of?", "bridge"),
    ("Valuair was acquired in 2005 by a low-cost airline based where?", "bridge"),
    ("For what type of work is the production company for The Year Without a Santa Claus best known?", "bridge"),
    ("Which was published more frequently, Popular Science or Girlfriends?", "comparison"),  # options and a measure
    ("What natives were displaced by British takeover in Georgia?", "single"),  # a passive verb, not a description
    ("What film was written and directed by Joby Harold?", "single"),  # a passive verb's second half
    ("What muffler repair shop owner inspired Andrey Zvyagintsev's film Leviathan?", "single"),  # the work is named
    ("What is Normandy's main export?", "single"),  # an attribute, not a work or a role
    ("What is a fundamentalist interpretation of Islam called?", "single"),  # asks its name
    ("Hayden is a singer-songwriter from Canada, but where does Buck-Tick hail from?", "single"),  # no relative clause
    ("In what country is Normandy located?", "single"),
    # a role asked for itself is one lookup; asked about, a bridge
    ("Who is the CEO of Tesla in 2021?", "single"),
    ("Who is the director of the Assassin's Creed movie?", "single"),
    ("Who was Margaret's husband?", "single"),
    ("Where was the CEO of Tesla born?", "bridge"),
    ("Who is the father of the director of Big Stone Gap?", "bridge"),
    ("What was the father of Kasper Schmeichel voted to be by the IFFHS in 1992?", "bridge"),
    ("Who was the captain of the only battleship to provide gunfire support during the Vietnam War?", "bridge"),
    ("When did Beyonce start becoming popular?", "single"),
])
def test_the_plan_reads_the_question_shape_without_a_model(question, shape):
    plan = _plan(question)
    assert plan.shape == shape, plan
    assert plan.multi_hop == (shape != "single")
    if shape == "comparison":
        assert len(plan.items) == 2 and len(plan.hops) == 2


def test_a_comparison_measures_what_it_compares():
    assert _plan(COMPARE_Q).measure == "date"
    assert _plan(COMPARE_Q).items == ("Annie Morton", "Terry Richardson")
    # the question's opening auxiliary is no part of the first item's name
    assert _plan("Were Scott Derrickson and Ed Wood of the same nationality?").items == ("Scott Derrickson", "Ed Wood")
    assert _plan("Which airport is busier, Palm Springs International Airport or Trenton-Mercer Airport?").measure == "amount"
    # the options a question lists are whole names, lower-case joining words and all
    assert _plan("Which band, Letters to Cleo or Screaming Trees, had more members?").items == ("Letters to Cleo",
                                                                                              "Screaming Trees")
    # a title that opens with a function word keeps it ("For Against" is a band; "Against" is not)
    assert _plan("Are Local H and For Against both from the United States?").items == ("Local H", "For Against")
    assert _plan("Which band is from Nebraska, Local H or For Against?").items == ("Local H", "For Against")
    assert _plan("Which is a type of dog, the Havanese or the Lhasa Apso?").items == ("Havanese", "Lhasa Apso")


@pytest.mark.parametrize("question, items, wins", [
    ("What profession did Alan Crosland and Kurt Voss both hold?", ("Alan Crosland", "Kurt Voss"), ""),
    ("Both Dieffenbachia and Carlina belong to what group of plants?", ("Dieffenbachia", "Carlina"), ""),
    ("Which American writer wrote both The Ganymede Takeover (1967) and The Man in the High Castle (1962)?",
     ("Ganymede Takeover", "Man in the High Castle"), ""),
    ("What is the birthday of the oldest among Vicente García and Ximena Sariñana?", ("Vicente García", "Ximena Sariñana"),
     "least"),
])
def test_what_two_named_things_share_is_a_comparison_of_any_question_kind(question, items, wins):
    """A wh-question about what two names both are, or the one of them that is oldest: a hop per item
    (neither "Both" nor a title's year is an item)."""
    plan = _plan(question)
    assert (plan.shape, plan.items, plan.wins) == ("comparison", items, wins), plan


@pytest.mark.parametrize("question, items, measure", [
    ("What nationality were social anthropologists Alfred Gell and Edmund Leach?", ("Alfred Gell", "Edmund Leach"), "shared"),
    ("What occupation was shared by David Yates and Pietro Germi?", ("David Yates", "Pietro Germi"), "shared"),
    ("What profession did Alan Crosland and Kurt Voss both hold?", ("Alan Crosland", "Kurt Voss"), "shared"),
    # a yes/no question and an "A or B" question answer with an item or a yes: no shared answer to state
    ("Were Scott Derrickson and Ed Wood of the same nationality?", ("Scott Derrickson", "Ed Wood"), "fact"),
    ("What is the birthday of the oldest among Vicente García and Ximena Sariñana?", ("Vicente García", "Ximena Sariñana"),
     "date"),
])
def test_what_two_names_side_by_side_are_is_asked_of_each(question, items, measure):
    """Two names joined by "and" that the question asks of together ("were", "shared by") are compared
    items; a wh-question about them asks what both are, so each item's hop must state the answer."""
    plan = _plan(question)
    assert (plan.shape, plan.items, plan.measure) == ("comparison", items, measure), plan


def test_a_question_name_is_read_without_its_question_mark_or_a_lower_case_word_before_it():
    """A title quoted at the question's end keeps no "?" a page would not show, and "the Knocking" is a name only
    from its capital on; a capitalised first word of a title stays ("One Big Hapa Family")."""
    q = 'What was the name of the fanzine that interviewed the Sex Pistols bassist when he was in the band "The Flowers of Romance?"'
    assert "The Flowers of Romance" in _plan(q).names
    q = "Were the documentaries One Big Hapa Family and A Film Unfinished directed by the same person?"
    assert "One Big Hapa Family" in _plan(q).items
    assert _plan("which writer has the highest number of skill Langston Hughes or Ian McEwan").items == ("Langston Hughes",
                                                                                                      "Ian McEwan")
