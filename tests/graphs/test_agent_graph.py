"""Routing of the agent graph with a scripted fake model: every route, the fan-out and the caps."""

from __future__ import annotations

import os

import pytest

from agentic_rag.runner import answer
from agentic_rag.state import STATE_KEYS
from testkit.fakes import ScriptedChat, sources_in
from testkit.records import PAGES, QUESTION, QUOTE_2004, QUOTE_2005, record
from testkit.scripted_runs import SNAPSHOTS, run


def test_supported_answer_stops_with_verified_citation(agent_settings):
    result, fake, rows = run(agent_settings, [f'Finding Nemo won. {{cite:76th academy}} "{QUOTE_2004}"'])
    assert result.status == "ok" and result.reason == "STOP_OVERLAP_OK"
    assert len(fake.calls) == 1 and result.llm_calls == 1
    assert result.citations and result.citations[0].verified and result.citations[0].page_name == "Oscars 2004"
    assert "Finding Nemo" in result.answer and "[" not in result.answer
    assert [r["reason"] for r in rows] == ["STOP_OVERLAP_OK"]
    for field in ("anchors_proposed", "anchors_selected", "path_count", "pruned_count", "new_hits_ratio",
                  "anchor_coverage", "overlap_est", "faith_est", "tokens_left", "tokens_used", "stop_reason", "latency_ms"):
        assert field in rows[0]


def test_no_evidence_abstains_without_calling_the_model(agent_settings):
    rec = record("who designed the first jet engine for the luftwaffe?", {"Gardening": PAGES["Gardening"]})
    result, fake, rows = run(agent_settings, ["should never be used"], rec)
    assert result.status == "refuse" and result.reason == "ABSTAIN_NO_EVIDENCE"
    assert fake.calls == [] and result.llm_calls == 0 and result.tokens["total"] == 0
    assert result.citations == [] and "source" in result.explanation


def test_wrong_year_triggers_one_anchor_retrieval_then_abstains(agent_settings):
    # the draft is faithful, but to the 2005 ceremony: the year anchor is missing from the cited text
    wrong = f'The Incredibles won. {{cite:77th academy}} "{QUOTE_2005}"'
    result, fake, rows = run(agent_settings, [wrong])
    reasons = [r["reason"] for r in rows]
    assert reasons[0] == "RETRIEVE_MISSING_ANCHORS"
    assert rows[1]["round"] == 2
    assert result.status == "refuse" and result.reason in {"ABSTAIN_MISSING_ANCHORS", "ABSTAIN_LOW_SUPPORT"}
    assert "2004" in " ".join(result.missing) and "2004" in result.explanation
    assert result.citations == []  # an abstention never carries citations
    assert len(fake.calls) <= 2


def test_period_scope_decides_which_sentences_may_state_the_year(agent_settings):
    # the year is in the sentence before the quoted one: enough for "window", not for "sentence"
    pages = {**PAGES, "Oscars 2004": ("The 76th Academy Awards were held in 2004 at the Kodak Theatre. "
                                      "Finding Nemo won the Oscar for Best Animated Feature. Pixar produced the film.")}
    reply = 'Finding Nemo won. {cite:finding nemo won} "Finding Nemo won the Oscar for Best Animated Feature"'
    near, _, _ = run(agent_settings, [reply], record(pages=pages))
    assert near.status == "ok" and near.reason == "STOP_OVERLAP_OK"
    strict, _, rows = run(agent_settings, [reply], record(pages=pages), PERIOD_SCOPE="sentence")
    assert rows[-2]["reason"] == "RETRIEVE_MISSING_ANCHORS"
    assert strict.status == "refuse" and "2004" in strict.missing
    # a page date beside the quote: enough for "window", not for "content"
    dated = {**PAGES, "Oscars 2004": "Feb 29, 2004 ...\nFinding Nemo won the Oscar for Best Animated Feature."}
    assert run(agent_settings, [reply], record(pages=dated))[0].status == "ok"
    assert run(agent_settings, [reply], record(pages=dated), PERIOD_SCOPE="content")[0].status == "refuse"
    # with the year in the quoted sentence even the strictest scope lets the answer stand
    quoted, _, _ = run(agent_settings, [f'Finding Nemo won. {{cite:76th academy}} "{QUOTE_2004}"'], PERIOD_SCOPE="sentence")
    assert quoted.status == "ok"


def test_no_regeneration_when_the_extra_round_brings_nothing_new(agent_settings):
    # the toy corpus is small: round 1 already holds every passage, so round 2 finds no new hits
    wrong = f'The Incredibles won. {{cite:77th academy}} "{QUOTE_2005}"'
    result, fake, rows = run(agent_settings, [wrong, "a second draft must not be requested"])
    assert [r["reason"] for r in rows][0] == "RETRIEVE_MISSING_ANCHORS"
    assert len(fake.calls) == 1 and result.tokens["detail"]["generation"]["calls"] == 1


def test_supervisor_regenerates_only_on_new_hits(agent_settings):
    from agentic_rag.nodes import Node
    from agentic_rag.supervisor.node import supervise_node
    from graphs.agent import route_after_gate, route_after_supervise

    s = agent_settings
    config = {"configurable": {"settings": s}}
    passage = {"chunk_id": "p:0", "text": QUOTE_2004, "fused_score": 0.9, "path_score": 0.9, "page_name": "A"}
    fresh = {"chunk_id": "p:1", "text": QUOTE_2005, "fused_score": 0.8, "path_score": 0.8, "page_name": "B"}
    base = {"question": QUESTION, "anchors": [], "usage": {}, "held_ids": ["p:0"], "round": 2}
    path1 = {"round": 1, "anchor": None, "passages": [passage]}
    stale = {**base, "paths": [path1, {"round": 2, "anchor": None, "passages": [passage]}]}
    update = supervise_node(stale, config)
    assert update["no_new_hits"] is True
    assert route_after_supervise({**stale, **update}, config) == Node.DISAMBIGUATE
    assert route_after_gate({**stale, **update, "confidence": {"passed": True}}, config) == Node.COLLECT_SIGNALS
    new = {**base, "paths": [path1, {"round": 2, "anchor": None, "passages": [passage, fresh]}]}
    update = supervise_node(new, config)
    assert update["no_new_hits"] is False and update["held_ids"] == ["p:0", "p:1"]
    assert route_after_gate({**new, **update, "confidence": {"passed": True}}, config) == Node.GENERATE
    assert route_after_gate({**new, **update, "confidence": {"passed": False}}, config) == Node.COLLECT_SIGNALS


def test_unsupported_draft_is_reflected_once_then_stops(agent_settings):
    unsupported = "It was Shrek, made by DreamWorks in 2004 {cite:76th academy}."
    revised = f'Finding Nemo won. {{cite:76th academy}} "{QUOTE_2004}"'
    result, fake, rows = run(agent_settings, [unsupported, revised], OVERLAP_TAU=0.99, REFLECT_MIN_OVERLAP=0.0)
    reasons = [r["reason"] for r in rows]
    assert reasons == ["REFLECT_LOW_FAITH", "STOP_OVERLAP_OK"]
    assert result.tokens["detail"]["reflect"]["calls"] == 1
    assert "Problems found" in fake.calls[1]["prompt"] and "Shrek" in fake.calls[1]["prompt"]


def test_reflect_happens_at_most_once_then_abstains(agent_settings):
    unsupported = "It was Shrek, made by DreamWorks in 2004 {cite:76th academy}."
    result, fake, rows = run(agent_settings, [unsupported], OVERLAP_TAU=0.99, REFLECT_MIN_OVERLAP=0.0)
    reasons = [r["reason"] for r in rows]
    assert reasons.count("REFLECT_LOW_FAITH") == 1
    assert result.status == "refuse" and result.reason == "ABSTAIN_LOW_SUPPORT"
    assert "Shrek" in result.explanation or "DreamWorks" in result.explanation


def test_citation_to_a_missing_source_is_never_shown(agent_settings):
    # a true claim with a bogus citation: the bogus [7] is dropped, code attribution finds the real source
    result, fake, rows = run(agent_settings, ['Finding Nemo won [7] "made up quote".'], REFLECT_ENABLED=False)
    assert result.status == "ok"
    assert [c.page_name for c in result.citations] == ["Oscars 2004"] and result.citations[0].verified
    assert "made up quote" not in result.citations[0].quote
    # an unsupported claim with a bogus citation supports nothing
    result, fake, rows = run(agent_settings, ['Shrek won the 2004 award [7] "made up quote".'], REFLECT_ENABLED=False)
    assert result.status == "refuse" and rows[-1]["overlap_est"] == 0.0


def test_one_worker_per_anchor_in_parallel(agent_settings):
    s = agent_settings
    fake = ScriptedChat(replies=[f'Finding Nemo won. {{cite:76th academy}} "{QUOTE_2004}"'])
    from agentic_rag.runner import graph_input
    from graphs import get_graph

    final = get_graph("agent").invoke(graph_input(record=record()), config={"configurable": {"settings": s, "llm": fake}},
                                      output_keys=STATE_KEYS)
    selected = [a["text"] for a in final["anchors"]]
    assert len(selected) >= 2
    round1 = [p for p in final["paths"] if p["round"] == 1]
    assert sorted(p["anchor"]["text"] for p in round1) == sorted(selected)
    for path in round1:
        assert {"passages", "path_score", "new_hits_ratio", "terminated_by", "pruned_count"} <= set(path)


def test_token_budget_is_never_exceeded_by_an_adversarial_model(agent_settings):
    # always unsupported: the policy keeps asking for more (retrieve, reflect) until a cap says no. The model
    # reports usage in the packaged tokenizer's counts, as the budget is checked: words would leave it slack
    adversarial = "It was Shrek {cite:77th academy}, says the 2009 review by DreamWorks and Universal."
    pushy = {"REFLECT_MIN_OVERLAP": 0.0, "OVERLAP_TAU": 0.99, "MAX_CONTEXT_TOKENS": 300}
    free, _, _ = run(agent_settings, [adversarial], tokenizer=True, **pushy)
    assert free.llm_calls >= 2  # with room to spare the adversary gets a draft and a revision
    for budget in (agent_settings.budget.TOKEN_BUDGET, int(0.9 * free.tokens["total"]), max(200, free.tokens["total"] // 2)):
        result, fake, rows = run(agent_settings, [adversarial], tokenizer=True, TOKEN_BUDGET=budget, **pushy)
        assert result.tokens["total"] <= budget
        if budget < free.tokens["total"]:
            assert result.llm_calls < free.llm_calls  # the budget, not the policy's own limits, stopped it
        assert result.llm_calls <= agent_settings.budget.MAX_LLM_CALLS
        assert max(r["round"] for r in rows) <= agent_settings.budget.MAX_ROUNDS
        assert result.status == "refuse"


def test_call_cap_holds(agent_settings):
    adversarial = "It was Shrek {cite:77th academy}."
    result, fake, rows = run(agent_settings, [adversarial], MAX_LLM_CALLS=1, REFLECT_MIN_OVERLAP=0.0, OVERLAP_TAU=0.99)
    assert len(fake.calls) == 1 and result.llm_calls == 1
    assert result.status == "refuse"


def test_no_budget_for_any_call_abstains_low_budget(agent_settings):
    result, fake, rows = run(agent_settings, ["unused"], TOKEN_BUDGET=200)
    assert fake.calls == [] and result.reason == "ABSTAIN_LOW_BUDGET"


def test_baseline_and_agent_share_the_output_record(agent_settings):
    s = agent_settings
    reply = f'Finding Nemo won. {{cite:76th academy}} "{QUOTE_2004}"'
    a = answer("agent", s, record=record(), extra_config={"llm": ScriptedChat(replies=[reply])})
    b = answer("baseline", s, record=record(), extra_config={"llm": ScriptedChat(replies=[reply])})
    assert set(a.model_dump()) == set(b.model_dump())
    assert b.reason == "STOP_SINGLE_PASS" and b.status == "ok" and b.llm_calls == 1


@pytest.mark.parametrize("system", ["agent", "baseline"])
def test_graph_shape_matches_its_snapshot(system):
    """Every node with its role and every edge, plain or conditional with its decision, as
    `agentic-rag graph` draws them."""
    from agentic_rag.trace.draw import draw
    from graphs import get_graph

    drawn = draw(get_graph(system), "mermaid")
    path = SNAPSHOTS / f"{system}.mmd"
    if os.environ.get("UPDATE_SNAPSHOTS") == "1":
        path.write_text(drawn)
    update = (f"if the change is meant, run `UPDATE_SNAPSHOTS=1 python -m pytest -q tests/graphs/test_agent_graph.py -k snapshot` "
              f"and commit tests/snapshots/{path.name}")
    assert path.is_file(), f"no snapshot of the {system} graph: {update}"
    assert drawn == path.read_text(), f"the {system} graph's shape changed; {update}"


def test_gray_zone_judge_is_called_once_and_booked_as_judge(agent_settings):
    # a partly supported draft sits in the gray zone: one judge call, whose "no" pulls faith down
    draft = f'Finding Nemo won {{cite:76th academy}} "{QUOTE_2004}". DreamWorks made it in Ohio.'
    result, fake, rows = run(agent_settings, [draft, "no", "It was Finding Nemo {cite:76th academy}.", "no"],
                             JUDGE_POLICY="gray_zone", REFLECT_ENABLED=True)
    judge_calls = [c for c in fake.calls if c["max_tokens"] == 4]
    assert len(judge_calls) == 1 and "Does the source support the answer?" in judge_calls[0]["prompt"]
    assert result.tokens["detail"]["judge"]["calls"] == 1
    assert result.tokens["total"] <= agent_settings.budget.TOKEN_BUDGET
    assert rows[0]["faith_est"] < 0.5  # the judge's "no" was averaged in


def test_judge_is_off_by_default(agent_settings):
    draft = f'Finding Nemo won {{cite:76th academy}} "{QUOTE_2004}". DreamWorks made it in Ohio.'
    result, fake, rows = run(agent_settings, [draft])
    assert "judge" not in result.tokens["detail"]


def test_confidence_gate_refuses_before_the_generator(agent_settings):
    result, fake, rows = run(agent_settings, ["never used"], RETRIEVAL_MIN_SCORE=0.99)
    assert fake.calls == [] and result.llm_calls == 0
    assert result.reason == "ABSTAIN_LOW_RETRIEVAL_SCORE" and result.abstention_layer == "low_retrieval_score"
    assert result.tokens_saved > 0 and "The best retrieval score is 0." in result.explanation
    assert "(needed 0.99)." in result.explanation  # the registry's sentence (agentic_rag/checks.py), judged there too
    assert rows[-1]["confidence_gate"]["tier"] == "retrieval" and rows[-1]["confidence_gate"]["passed"] is False


def test_no_clear_winner_refusal(agent_settings):
    result, fake, rows = run(agent_settings, ["never used"], RETRIEVAL_MIN_RATIO=50.0)
    assert fake.calls == [] and result.reason == "ABSTAIN_NO_SCORE_GAP"
    assert "The top passage scores" in result.explanation and "times the second (needed 50.00)." in result.explanation


def test_hedging_draft_becomes_an_explained_abstention(agent_settings):
    result, fake, rows = run(agent_settings, ["I think it may be Finding Nemo {cite:76th academy}, but it is not mentioned."])
    assert result.reason == "ABSTAIN_HEDGING" and result.abstention_layer == "hedging_detected"
    assert result.citations == [] and len(fake.calls) == 1


def test_support_verifier_withholds_a_draft_it_disowns_and_books_its_call(agent_settings):
    # the draft passes every text check; the verifier, shown the quoted sentence, answers "no"
    draft = f'Finding Nemo won. {{cite:76th academy}} "{QUOTE_2004}"'
    result, fake, rows = run(agent_settings, [draft, "no"], VERIFIER_ENABLED=True)
    verify_calls = [c for c in fake.calls if "Does the source state that this is the answer" in c["prompt"]]
    assert len(fake.calls) == 2 and len(verify_calls) == 1
    assert QUOTE_2004 in verify_calls[0]["prompt"] and "Tomatoes" not in verify_calls[0]["prompt"]
    assert result.status == "refuse" and result.reason == "ABSTAIN_NOT_VERIFIED"
    assert result.abstention_layer == "not_grounded" and result.citations == []
    assert "0%" in result.explanation and "Finding Nemo" in result.explanation
    assert result.tokens["detail"]["verify"]["calls"] == 1 and result.tokens["by_stage"]["verify"] > 0
    assert rows[-1]["support_verdict"] == 0.0
    assert rows[-1]["tokens_by_stage"]["verify"] > 0 and rows[-1]["tokens_used"] == result.tokens["total"]


def test_support_verifier_lets_a_confirmed_draft_through_and_is_off_by_default(agent_settings):
    draft = f'Finding Nemo won. {{cite:76th academy}} "{QUOTE_2004}"'
    result, fake, _ = run(agent_settings, [draft, "yes"], VERIFIER_ENABLED=True)
    assert result.status == "ok" and result.reason == "STOP_OVERLAP_OK" and len(fake.calls) == 2
    assert result.signals["support_verdict"] == 1.0
    result, fake, _ = run(agent_settings, [draft, "no"])
    assert result.status == "ok" and len(fake.calls) == 1 and "verify" not in result.tokens["detail"]


def test_quote_probe_modes_fall_back_to_the_verifier_on_a_backend_without_hidden_states(agent_settings):
    # the scripted model exposes no hidden states: neither probe can read, so even the mode that skips
    # the verifier call when both probes read makes it, and the refusal names only what was read
    draft = f'Finding Nemo won. {{cite:76th academy}} "{QUOTE_2004}"'
    for combine in ("probes", "mean_with_probes"):
        result, fake, rows = run(agent_settings, [draft, "no"], VERIFIER_ENABLED=True, VERIFIER_COMBINE=combine)
        assert len(fake.calls) == 2 and result.reason == "ABSTAIN_NOT_VERIFIED"
        assert rows[-1]["quote_answerability"] is None and rows[-1]["verified_score"] == 0.0
        assert "generator itself gives 0%" in result.explanation and "probe" not in result.explanation


def test_support_verifier_is_not_asked_about_a_draft_already_refused(agent_settings):
    result, fake, _ = run(agent_settings, ["I think it may be Finding Nemo {cite:76th academy}, but it is not mentioned."],
                          VERIFIER_ENABLED=True)
    assert result.reason == "ABSTAIN_HEDGING" and len(fake.calls) == 1


def test_prune_fallback_hands_an_emptied_question_to_the_gate_instead_of_refusing(agent_settings):
    # a fine-prune cut-off nothing passes: every worker comes back empty
    result, fake, rows = run(agent_settings, ["never used"], FINE_MIN_SIM=0.99)
    assert result.reason == "ABSTAIN_NO_EVIDENCE" and fake.calls == []
    draft = f'Finding Nemo won. {{cite:76th academy}} "{QUOTE_2004}"'
    result, fake, rows = run(agent_settings, [draft], FINE_MIN_SIM=0.99, PRUNE_FALLBACK_K=2)
    assert len(fake.calls) == 1 and result.status == "ok" and result.reason == "STOP_OVERLAP_OK"
    sources = sources_in(fake.calls[0]["prompt"])
    assert len(sources) == 2 and any(QUOTE_2004 in text for text in sources.values())
    # the confidence gate still decides on the fallback passages' own scores
    result, fake, _ = run(agent_settings, ["never used"], FINE_MIN_SIM=0.99, PRUNE_FALLBACK_K=2, RETRIEVAL_MIN_SCORE=0.99)
    assert fake.calls == [] and result.reason == "ABSTAIN_LOW_RETRIEVAL_SCORE"


def test_prune_fallback_stays_out_when_a_worker_kept_a_passage(agent_settings):
    draft = f'Finding Nemo won. {{cite:76th academy}} "{QUOTE_2004}"'
    plain, fake_plain, _ = run(agent_settings, [draft])
    with_k, fake_k, _ = run(agent_settings, [draft], PRUNE_FALLBACK_K=2)
    assert fake_plain.calls[0]["prompt"] == fake_k.calls[0]["prompt"]


def test_a_served_generator_is_read_by_the_packaged_reader_in_its_own_step(agent_settings):
    """Behind a server no hidden state comes back with the draft: the read_answerability node reads the
    same answer prompt with the packaged reader (the real 0.5B here), the reading decides as it does
    in-process, and the step shows in the trace events, the telemetry and the timing with its time."""
    draft = f'Finding Nemo won. {{cite:76th academy}} "{QUOTE_2004}"'
    served = agent_settings.replace(LLM_BACKEND="openai", OPENAI_BASE_URL="http://127.0.0.1:1/v1",
                                    LLM_MODEL="qwen2.5-coder-0.5b")
    result, fake, rows = run(served, [draft], ANSWERABILITY_MIN=0.0)
    reading = rows[0]["probe"]
    assert result.reason == "STOP_OVERLAP_OK" and len(fake.calls) == 1  # the reader is no LLM call
    assert reading["status"] == "scored" and reading["how"] == "local" and reading["reader"] == "qwen2.5-coder-0.5b"
    assert reading["ms"] > 0 and reading["prompt_tokens"] > 50
    assert result.signals["answerability"] == reading["answerability"] == rows[0]["answerability"]
    [step] = [e for e in result.events if e["node"] == "read_answerability"]
    assert step["probe"] == reading and result.latency_by_node_ms["read_answerability"] >= reading["ms"]
    assert set(result.tokens["detail"]) == {"generation"}  # its prompt is read here, never billed as LLM tokens
    # the reading decides: above it the draft is withheld as not answerable
    refused, _, _ = run(served, [draft], ANSWERABILITY_MIN=min(1.0, reading["answerability"] + 0.01))
    assert refused.reason == "ABSTAIN_NOT_ANSWERABLE" and "answerability reader gives" in refused.explanation
    # in-process, the scripted stand-in for the generator exposes no states, and nothing reads in its place
    local, _, local_rows = run(agent_settings, [draft])
    assert local_rows[-1]["probe"]["status"] == "unavailable" and "answerability" not in local.signals


def test_a_missing_bridge_anchor_sends_the_next_round_to_the_page_of_the_entity_the_draft_names(agent_settings):
    """Multi-hop: the draft names the writer from the song's page, and the year the question uses to
    describe the writer is on the writer's own page, which the evidence lacks. The further round sends
    one more worker, which searches for the writer's name with the year alone ("Lee Hazlewood 2007"):
    appended to the question, the song's words outrank the writer's page."""
    pages = {
        "These Boots Are Made for Walkin'": ("\"These Boots Are Made for Walkin'\" is a hit song written by Lee Hazlewood "
                                             "and recorded by Nancy Sinatra. It charted in January 1966."),
        "Boots (album)": "Boots is a 1966 debut studio album by Nancy Sinatra, produced by Lee Hazlewood.",
        "Jim Shoulders": "James Shoulders (1928 - 2007) was an American professional rodeo cowboy.",
    }
    rec = record("Who was the writer of These Boots Are Made for Walkin' and who died in 2007?", pages)
    quote = "\"These Boots Are Made for Walkin'\" is a hit song written by Lee Hazlewood and recorded by Nancy Sinatra."
    reply = f'Lee Hazlewood wrote the song. {{cite:These Boots}} "{quote}"'
    result, _, rows = run(agent_settings, [reply, reply], rec, PROBE_ENABLED=False)
    assert rows[0]["reason"] == "RETRIEVE_MISSING_ANCHORS"
    decided = next(e for e in result.events if e.get("extra_terms"))
    # the names the draft adds that its cited passage states (the quote names the singer too), then the year
    assert decided["extra_terms"] == ["2007"] and decided["hop_query"].startswith("Lee Hazlewood")
    assert decided["hop_query"].endswith(" 2007") and "Walkin" not in decided["hop_query"]
    workers = [e.get("round") for e in result.events if e["node"] == "worker"]
    assert workers.count(2) == workers.count(1) + 1, workers
    assert result.reason == "ABSTAIN_MISSING_ANCHORS"  # the writer's page is not there: nothing states 2007 of him
