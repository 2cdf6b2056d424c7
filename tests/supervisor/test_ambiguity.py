"""Ambiguity policy and out-of-domain gate in the agent graph (scripted model, real retrieval)."""

from agentic_rag.datasets.crag import CragRecord
from testkit.scripted_runs import run

PLANET = ("Mercury is the smallest planet in the Solar System and the closest to the Sun. "
          "Its orbit around the Sun takes 88 Earth days.")
PLANET2 = "The planet Mercury has no moons and a thin exosphere; its surface is heavily cratered like the Moon."
METAL = ("Mercury is a chemical element with the symbol Hg and atomic number 80. "
         "It is the only metal that is liquid at room temperature.")
METAL2 = "Mercury the metal is toxic; mercury poisoning damages the nervous system and kidneys."


def mercury() -> CragRecord:
    pages = [("https://space.example.org/mercury", "Mercury (planet)", PLANET),
             ("https://astro.example.com/planets", "Planets", PLANET2),
             ("https://chem.example.net/hg", "Mercury (element)", METAL),
             ("https://health.example.edu/metals", "Toxic metals", METAL2)]
    return CragRecord(interaction_id="merc", query="tell me about mercury", answer="",
                      search_results=[{"page_url": u, "page_name": n, "page_result": t} for u, n, t in pages])


def test_out_of_domain_question_is_refused_without_retrieval_or_llm(agent_settings):
    result, fake, rows = run(agent_settings, ["never"], OOD_DENY_PATTERNS=[r"\bmercury\b"], rec=mercury())
    assert result.status == "refuse" and result.reason == "ABSTAIN_OUT_OF_DOMAIN"
    assert fake.calls == [] and rows[-1]["path_count"] == 0 and "deny pattern" in result.explanation
    allowed, _, _ = run(agent_settings, ["never"], OOD_ALLOW_PATTERNS=[r"\bfinance\b"], rec=mercury())
    assert allowed.reason == "ABSTAIN_OUT_OF_DOMAIN" and "none of the allowed" in allowed.explanation


def test_two_topics_give_options_then_a_selection_answers(agent_settings):
    s = agent_settings.replace(AMBIGUITY_ENABLED=True, AMBIGUITY_MERGE_SIM=0.5, RETRIEVAL_MIN_SCORE=0.0, MIN_GROUP_GAP=0.9)
    result, fake, rows = run(s, ["never"], rec=mercury())
    assert result.status == "ambiguous" and result.reason == "AMBIGUOUS_OPTIONS" and fake.calls == []
    assert 2 <= len(result.options) <= s.agent.MAX_OPTIONS
    planet = next(o for o in result.options if "space.example.org" in o["signature"])
    assert {"id", "signature", "anchor_passage", "sources", "best_score"} <= set(planet)

    from agentic_rag.runner import answer
    from testkit.fakes import ScriptedChat

    reply = "Mercury is the smallest planet in the Solar System {cite:smallest planet}."
    chosen = answer("agent", s, record=mercury(), extra_config={"llm": ScriptedChat(replies=[reply])},
                    selected_option=planet["id"])
    assert chosen.status == "ok" and "planet" in chosen.answer, (chosen.reason, chosen.explanation, chosen.signals)
    assert all("chem" not in c.page_url and "health" not in c.page_url for c in chosen.citations)

    bad = answer("agent", s, record=mercury(), extra_config={"llm": ScriptedChat(replies=["x"])}, selected_option="opt-nope")
    assert bad.status == "refuse" and bad.reason == "ABSTAIN_INVALID_SELECTION" and "opt-nope" in bad.explanation


def test_resolution_rules_in_order():
    import numpy as np

    from agentic_rag.anchors.matching import Anchor
    from agentic_rag.configuration import Settings
    from agentic_rag.supervisor.ambiguity import resolve

    s = Settings.load()
    v = {"a": np.array([1.0, 0.0]), "b": np.array([0.0, 1.0])}
    a = {"id": "A", "score": 0.9, "passages": [{"chunk_id": "a", "text": "Mercury the planet orbits the Sun", "fused_score": 0.9}]}
    b = {"id": "B", "score": 0.5, "passages": [{"chunk_id": "b", "text": "Mercury the element Hg", "fused_score": 0.5}]}
    q = np.array([0.7, 0.7])
    assert resolve("q", [], [a], q, v, s)[2] == "single_group"
    assert resolve("give an overview of mercury", [], [a, b], q, v, s)[0] == "ambiguous"
    assert resolve("which planet?", [Anchor("Sun", "entity", 0.9)], [a, b], q, v, s)[1]["id"] == "A"
    assert resolve("mercury?", [], [a, b], q, v, s)[2] == "score_gap"
    b["score"] = 0.85
    assert resolve("mercury?", [], [a, b], np.array([0.0, 1.0]), v, s)[1]["id"] == "B"  # query similarity
    assert resolve("mercury?", [], [a, b], q, v, s)[2] == "unresolved"
