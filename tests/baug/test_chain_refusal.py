"""What the decision and the refusal do with a multi-hop draft's chain: a missing hop searched once then
refused, the next hop's search, and a refusal that tells the hops found and names one, missing or left
unconfirmed (baug/policy.py, baug/chain.py, generator/finalize.py); the chains themselves are tested in
test_chain.py."""

from __future__ import annotations

from agentic_rag.baug.chain import answer_claims, evidence_chain, hops_found, missing_hop, next_hop_query, unconfirmed_hop
from agentic_rag.baug.policy import Flags, decide
from agentic_rag.configuration import Settings
from agentic_rag.generator.finalize import build_record
from testkit.chains import BRIDGE_Q, COMPARE_Q, FILM, MORTON, OTHER, PERSON, RICHARDSON, chain_passages, hop_plan_of


def _signals(chain):
    return {"overlap_est": 1.0, "faith_est": 1.0, "answer_relevance": 0.9, "anchor_coverage": 1.0, "tokens_left": 4000,
            "answerability": 0.9, "chain": chain, "hops_found": hops_found(chain), "missing_anchors": []}


def test_the_decision_searches_for_a_missing_hop_once_then_refuses_only_with_the_chain_check_on():
    plan = hop_plan_of(BRIDGE_Q)
    chain = evidence_chain(plan, answer_claims("Chief of Protocol", BRIDGE_Q), chain_passages(PERSON, OTHER))
    flags = Flags(has_evidence=True, has_draft=True, kind="other")
    thresholds = {"GATE_POLICY": "thresholds"}
    off = decide(_signals(chain), flags, Settings.load(overrides=thresholds))
    on = Settings.load(overrides={**thresholds, "CHAIN_CHECK": True})
    assert off.reason not in ("ABSTAIN_MISSING_HOP", "RETRIEVE_MISSING_HOP")
    assert decide(_signals(chain), flags, on).reason == "RETRIEVE_MISSING_HOP"
    searched = Flags(has_evidence=True, has_draft=True, kind="other", one_shot_done=True)
    assert decide(_signals(chain), searched, on).reason == "ABSTAIN_MISSING_HOP"
    # a comparison the pages contradict is refused at once: no search finds what the pages already say
    wrong = evidence_chain(hop_plan_of(COMPARE_Q), [], chain_passages(MORTON, RICHARDSON), answer="Annie Morton is older.")
    assert decide(_signals(wrong), flags, on).reason == "ABSTAIN_MISSING_HOP"
    whole = evidence_chain(plan, answer_claims("Chief of Protocol", BRIDGE_Q), chain_passages(FILM, PERSON))
    assert decide(_signals(whole), flags, on).reason == "STOP_OVERLAP_OK"


def test_the_next_hop_is_searched_from_what_the_hop_before_it_found():
    """Hop 1 found Shirley Temple on the film's page: hop 2's search is her name and what that page did
    not say; a missing link is searched from the question's names; a missing item by its name."""
    plan = hop_plan_of(BRIDGE_Q)
    no_person = evidence_chain(plan, answer_claims("Chief of Protocol", BRIDGE_Q), chain_passages(FILM, OTHER))
    query = next_hop_query(no_person, BRIDGE_Q)
    assert query.startswith("Shirley Temple") and "government" in query and "position" in query
    assert "kiss" not in query.lower()  # the film's page said that
    assert next_hop_query(evidence_chain(hop_plan_of(COMPARE_Q), [], chain_passages(MORTON)), COMPARE_Q).startswith("Terry Richardson")
    assert next_hop_query(evidence_chain(plan, answer_claims("Chief of Protocol", BRIDGE_Q),
                                         chain_passages(FILM, PERSON)), BRIDGE_Q) == ""


def test_a_refusal_on_a_missing_hop_says_which_hops_were_found_and_names_the_missing_one():
    plan = hop_plan_of(BRIDGE_Q)
    chain = evidence_chain(plan, answer_claims("Chief of Protocol", BRIDGE_Q), chain_passages(FILM, OTHER))
    assert chain[0]["found"] and not chain[1]["found"]
    settings = Settings.load(overrides={"CHAIN_CHECK": True})
    state = {"question": BRIDGE_Q, "draft": "Shirley Temple was Chief of Protocol.", "signals": _signals(chain),
             "decision": {"action": "ABSTAIN", "reason": "ABSTAIN_MISSING_HOP"}}
    record = build_record(state, "agent", settings, {}, 1)
    assert record.status == "refuse" and record.abstention_layer == "not_grounded"
    assert record.missing == [missing_hop(chain)] and "about Shirley Temple states the answer" in record.missing[0]
    assert "needs 2 steps" in record.explanation and "hop 1" in record.explanation
    assert record.chain == chain


def test_a_refusal_by_another_check_names_the_missing_hop_too():
    """The reader refuses the draft and a hop is missing as well: the refusal keeps its reason and its own
    account, and names the hop too, whether or not the chain check could refuse on it; a one-passage
    question has no chain and its refusal says nothing of hops."""
    chain = evidence_chain(hop_plan_of(BRIDGE_Q), answer_claims("Chief of Protocol", BRIDGE_Q), chain_passages(FILM, OTHER))
    state = {"question": BRIDGE_Q, "draft": "Shirley Temple was Chief of Protocol.",
             "signals": {**_signals(chain), "answerability": 0.1},
             "decision": {"action": "ABSTAIN", "reason": "ABSTAIN_NOT_ANSWERABLE"}}
    on = build_record(state, "agent", Settings.load(overrides={"CHAIN_CHECK": True}), {}, 1)
    off = build_record(state, "agent", Settings.load(overrides={"CHAIN_CHECK": False}), {}, 1)
    single = build_record({**state, "signals": {**_signals([]), "answerability": 0.1}}, "agent",
                          Settings.load(overrides={"CHAIN_CHECK": True}), {}, 1)
    assert on.reason == off.reason == single.reason == "ABSTAIN_NOT_ANSWERABLE"
    assert on.missing == off.missing == [*single.missing, missing_hop(chain)] and missing_hop(chain) not in single.missing
    assert on.explanation == off.explanation and on.explanation.startswith(single.explanation)
    assert "Missing: no page about Shirley Temple" in on.explanation and "steps" not in single.explanation
    # a fitted decision words a refusal on the chain itself: the hops found are told after its words
    fitted = build_record({**state, "signals": _signals(chain), "decision": {
        "action": "ABSTAIN", "reason": "ABSTAIN_MISSING_HOP", "explanation": "The fitted decision gives 20%."}},
        "agent", Settings.load(), {}, 1)
    assert fitted.explanation.startswith("The fitted decision gives 20%. The answer needs 2 steps")
    assert fitted.missing == [missing_hop(chain)]
    whole = evidence_chain(hop_plan_of(BRIDGE_Q), answer_claims("Chief of Protocol", BRIDGE_Q), chain_passages(FILM, PERSON))
    complete = build_record({**state, "signals": {**_signals(whole), "answerability": 0.1}}, "agent",
                            Settings.load(overrides={"CHAIN_CHECK": True}), {}, 1)
    # every hop is stated: the refusal names the hop whose relation to the question no quote says
    assert complete.missing == [*single.missing, unconfirmed_hop(whole, BRIDGE_Q)]
    assert "all 2 steps" in complete.explanation and "Not confirmed: a page saying government position" in complete.explanation


def test_a_complete_chain_refused_names_the_hop_whose_question_words_no_quote_says():
    """Each hop is found by the names it shares with the question, not by the relation: the words of the
    question's relative clause are the bridge hop's, the rest the answer hop's; a comparison whose pages'
    values were compared has only its last hop left to confirm; a broken chain is named by missing_hop."""
    whole = evidence_chain(hop_plan_of(BRIDGE_Q), answer_claims("Chief of Protocol", BRIDGE_Q), chain_passages(FILM, PERSON))
    named = unconfirmed_hop(whole, BRIDGE_Q)
    assert named == "a page saying government position of Shirley Temple (hop 2)"  # "woman" is hop 1's
    assert "portrayed" not in named and "held" not in named  # a verb is not a thing a page lacks
    # the film's page says "portrayed" and the person's page "government position": nothing unquoted is left
    said = (FILM[0], FILM[1].replace("starring then 17-year-old Shirley Temple as", "in which Shirley Temple portrayed"))
    held = (PERSON[0], PERSON[1].replace("of the United States.", "of the United States, a government position no "
                                         "other woman from the films held."))
    assert unconfirmed_hop(evidence_chain(hop_plan_of(BRIDGE_Q), answer_claims("Chief of Protocol", BRIDGE_Q),
                                          chain_passages(said, held)), BRIDGE_Q).startswith("a page confirming that Chief")
    # the relative clause's noun is unquoted and the asked words are: the bridge hop is named
    described = "What government position was held by the actress who played a teenager in the film Kiss and Tell?"
    chain = evidence_chain(hop_plan_of(described), answer_claims("Chief of Protocol", described), chain_passages(FILM, held))
    assert all(h["found"] for h in chain)
    assert unconfirmed_hop(chain, described) == "a page saying actress teenager of Shirley Temple (hop 1)"
    compared = evidence_chain(hop_plan_of(COMPARE_Q), [], chain_passages(MORTON, RICHARDSON), answer="Terry Richardson is older.")
    assert unconfirmed_hop(compared, COMPARE_Q).startswith("a page confirming that Terry Richardson has the earlier")
    broken = evidence_chain(hop_plan_of(BRIDGE_Q), answer_claims("Chief of Protocol", BRIDGE_Q), chain_passages(FILM, OTHER))
    assert unconfirmed_hop(broken, BRIDGE_Q) == "" and missing_hop(broken)
