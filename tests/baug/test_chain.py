"""Multi-hop answers as evidence chains: each hop found and quoted on its own page, a missing hop named,
and the decision that refuses on it (baug/chain.py, baug/policy.py, generator/finalize.py); the plan's own
tests are in test_hop_plan.py."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from agentic_rag.baug.chain import (
    answer_claims,
    draft_chain,
    evidence_chain,
    first_value,
    hop_line,
    hops_found,
    missing_hop,
    unconfirmed_hop,
)
from agentic_rag.configuration import Settings
from testkit import REPO
from testkit.chains import BRIDGE_Q, COMPARE_Q, FILM, MORTON, OTHER, PERSON, RICHARDSON, chain_passages, hop_plan_of

GELL_Q = "What nationality were social anthropologists Alfred Gell and Edmund Leach?"
GELL = ("Alfred Gell", "Alfred Antony Francis Gell (1945-1997) was a British social anthropologist whose work drew on "
        "Edmund Leach.")
LEACH = ("Edmund Leach", "Sir Edmund Ronald Leach (1910-1989) was a British social anthropologist and academic.")


def test_what_both_items_are_must_be_stated_of_each_one():
    """One page saying "British" does not make the other man British: each item's hop is a sentence about
    that item stating the draft's answer. The twin without Leach's page (Gell's names him in passing) has
    his hop missing, named; a draft with another answer has both missing."""
    plan = hop_plan_of(GELL_Q)
    whole = draft_chain(plan.to_dict(), GELL_Q, "Both were British social anthropologists [1][2].", "other",
                        chain_passages(GELL, LEACH))
    assert [h["found"] for h in whole] == [True, True] and [h["page"] for h in whole] == ["Alfred Gell", "Edmund Leach"]
    twin = draft_chain(plan.to_dict(), GELL_Q, "Both were British.", "other", chain_passages(GELL))
    assert [h["found"] for h in twin] == [True, False]
    assert missing_hop(twin) == "no page states British about Edmund Leach"
    wrong = draft_chain(plan.to_dict(), GELL_Q, "They were both French.", "other", chain_passages(GELL, LEACH))
    assert hops_found(wrong) == 0.0
    # an answer in plain words: any of its content words, by stem ("poets" of "poet")
    poets = chain_passages(("Marge Piercy", "Marge Piercy (born 1936) is an American poet, novelist, and social activist."),
                      ("Richard Aldington", "Richard Aldington was an English writer and poet."))
    q = "What occupation is shared by both Marge Piercy and Richard Aldington?"
    assert hops_found(draft_chain(hop_plan_of(q).to_dict(), q, "Both were poets.", "other", poets)) == 1.0
    assert hops_found(draft_chain(hop_plan_of(q).to_dict(), q, "Both were painters.", "other", poets)) == 0.0


def test_a_bridge_chain_quotes_each_hop_from_its_own_page():
    plan = hop_plan_of(BRIDGE_Q)
    chain = evidence_chain(plan, answer_claims("Chief of Protocol", BRIDGE_Q), chain_passages(FILM, PERSON, OTHER))
    assert [h["found"] for h in chain] == [True, True] and hops_found(chain) == 1.0
    hop1, hop2 = chain
    assert hop1["n"] == 1 and hop1["quote"] in FILM[1] and "Shirley Temple" in hop1["quote"]
    assert hop2["n"] == 2 and hop2["quote"] in PERSON[1] and "Chief of Protocol" in hop2["quote"]
    assert "Shirley Temple" in hop1["claim"] and missing_hop(chain) == ""
    assert hop_line(hop2).startswith("hop 2 (answer) [2] Shirley Temple:")


@pytest.mark.parametrize("removed, missing_index, named",
                         [(FILM, 0, "Corliss Archer"), (PERSON, 1, "about Shirley Temple states the answer")])
def test_a_twin_without_one_page_names_the_hop_that_page_held(removed, missing_index, named):
    """The planted case: the hop is absent exactly when its page is, and the refusal names that hop."""
    plan = hop_plan_of(BRIDGE_Q)
    pages = [p for p in (FILM, PERSON, OTHER) if p is not removed]
    chain = evidence_chain(plan, answer_claims("Chief of Protocol", BRIDGE_Q), chain_passages(*pages))
    assert not chain[missing_index]["found"] and hops_found(chain) < 1.0
    assert named in missing_hop(chain) and missing_hop(chain) == chain[missing_index]["missing"]
    assert hop_line(chain[missing_index]).startswith(f"hop {missing_index + 1}") and "MISSING" in hop_line(chain[missing_index])


ARENA_Q = "The arena where the Lewiston Maineiacs played their home games can seat how many people?"
TEAM = ("Lewiston Maineiacs", "The Lewiston Maineiacs were a junior ice hockey team. The team played its home games at "
        "the Androscoggin Bank Colisée.")
ARENA = ("Androscoggin Bank Colisée", "The Androscoggin Bank Colisée is a 4,000 capacity (3,677 seated) multi-purpose "
         "arena in Lewiston, Maine.")
RINK = ("Dwyer Arena", "The main rink can seat up to 1,400 people and is the home to the Niagara Purple Eagles.")


def test_a_draft_is_chained_through_the_bridge_it_names():
    """A draft that names bridge and answer either way round is chained; one that states the answer of
    the arena it names, when a page says it of another arena, is not."""
    passages = chain_passages(FILM, PERSON, OTHER)
    ok = draft_chain(hop_plan_of(BRIDGE_Q).to_dict(), BRIDGE_Q, "Shirley Temple served as Chief of Protocol.", "other", passages)
    assert hops_found(ok) == 1.0 and ok[1]["n"] == 2
    plan = hop_plan_of(ARENA_Q)
    assert plan.shape == "bridge"
    arenas = chain_passages(TEAM, ARENA, RINK)
    right = draft_chain(plan.to_dict(), ARENA_Q, "The Androscoggin Bank Colisée seats 3,677 people.", "numeric", arenas)
    assert hops_found(right) == 1.0 and [h["n"] for h in right] == [1, 2]
    wrong = draft_chain(plan.to_dict(), ARENA_Q, "The Androscoggin Bank Colisée can seat up to 1,400 people.", "numeric", arenas)
    assert [h["found"] for h in wrong] == [True, False]
    assert missing_hop(wrong) == "no page about Androscoggin Bank Colisée states the answer the draft gives"


def test_a_comparison_needs_each_item_stated_on_its_own_page():
    plan = hop_plan_of(COMPARE_Q)
    chain = evidence_chain(plan, [], chain_passages(MORTON, RICHARDSON))
    assert [h["n"] for h in chain] == [1, 2] and hops_found(chain) == 1.0
    assert "1965" in chain[1]["quote"]
    # Morton's page names Richardson, but gives no date of his: the hop is missing, and named
    twin = evidence_chain(plan, [], chain_passages(MORTON))
    assert [h["found"] for h in twin] == [True, False]
    assert missing_hop(twin) == "no page states a date about Terry Richardson"


def test_a_compared_item_is_stated_by_a_sentence_about_it_not_one_that_names_it_in_passing():
    """A HotpotQA twin without Scott Derrickson's page: a film page that names him as its director says
    nothing of his nationality, so his hop is missing; with his own page it is found."""
    question = "Were Scott Derrickson and Ed Wood of the same nationality?"
    film = ("Doctor Strange (2016 film)", "The film was directed by Scott Derrickson, who wrote it with Jon Spaihts.")
    wood = ("Ed Wood", "Ed Wood is a 1994 American biographical film directed by Tim Burton.")
    own = ("Scott Derrickson", "Scott Derrickson (born July 16, 1966) is an American director.")
    plan = hop_plan_of(question)
    twin = evidence_chain(plan, [], chain_passages(film, wood), answer="Yes")
    assert [h["found"] for h in twin] == [False, True] and twin[0]["missing"] == "no page states a fact about Scott Derrickson"
    whole = evidence_chain(plan, [], chain_passages(film, wood, own), answer="Yes")
    assert [h["found"] for h in whole] == [True, True] and whole[0]["page"] == "Scott Derrickson"


def test_a_comparison_draft_must_name_the_item_the_pages_make_the_winner():
    """"Who is older?": the earlier birth date wins; a draft that names the other is a broken chain whose
    last hop says what the pages give."""
    plan = hop_plan_of(COMPARE_Q)
    assert plan.wins == "least" and hop_plan_of("Which mountain is taller, Gasherbrum II or Langtang Ri?").wins == "most"
    pages = chain_passages(MORTON, RICHARDSON)
    right = evidence_chain(plan, [], pages, answer="Terry Richardson is older than Annie Morton.")
    assert [h["role"] for h in right] == ["item", "item", "compare"] and hops_found(right) == 1.0
    assert right[2]["claim"] == "Terry Richardson has the earlier date (1965-08-14 against 1970-10-08 for Annie Morton)"
    wrong = evidence_chain(plan, [], pages, answer="Annie Morton is older than Terry Richardson.")
    assert hops_found(wrong) == 2 / 3 and missing_hop(wrong).startswith("the pages make Terry Richardson, not Annie Morton")
    peaks = chain_passages(("Gasherbrum II", "Gasherbrum II, surveyed as K4, is the 13th highest mountain in the world at "
                                        "8035 m above sea level."),
                      ("Langtang Ri", "At an elevation of 7205 m Langtang Ri is the 106th highest mountain in the world."))
    taller = evidence_chain(hop_plan_of("Which mountain is taller, Gasherbrum II or Langtang Ri?"), [], peaks, answer="Gasherbrum II")
    assert taller[2]["found"] and "8035 against 7205" in taller[2]["claim"]  # not the ordinals, not the K4


def test_a_month_is_no_bridge():
    """A sentence that states the answer and a birth date: the bridge is its page, never "May"."""
    question = "Seven Brief Lessons on Physics was written by an Italian physicist that has worked in France since what year?"
    book = ("Seven Brief Lessons on Physics", "Seven Brief Lessons on Physics is a short book by the Italian physicist "
            "Carlo Rovelli.")
    rovelli = ("Carlo Rovelli", "Carlo Rovelli (born 3 May 1956) is an Italian theoretical physicist who has worked in "
               "France since 2000.")
    other = ("Claudio Pellegrini", "Claudio Pellegrini (born in Rome on May 9, 1935) is an Italian physicist.")
    chain = evidence_chain(hop_plan_of(question), ["2000"], chain_passages(book, rovelli, other))
    assert [h["n"] for h in chain] == [1, 2] and chain[0]["entity"] == "Carlo Rovelli"
    twin = evidence_chain(hop_plan_of(question), ["2000"], chain_passages(rovelli, other))
    assert not twin[0]["found"] and "May" not in twin[0]["missing"]


def test_a_bridge_draft_that_claims_nothing_has_a_chain_that_says_so():
    """A draft with no name, number or long word ("Yes, it is.") still gets its chain: nothing to look for."""
    chain = draft_chain(hop_plan_of(BRIDGE_Q).to_dict(), BRIDGE_Q, "Yes, it is.", "other", chain_passages(FILM, PERSON))
    assert hops_found(chain) == 0.0 and missing_hop(chain) == "the draft states no answer to look for"


def test_a_single_hop_question_has_no_chain_and_no_reading():
    question = "In what country is Normandy located?"
    chain = draft_chain(hop_plan_of(question).to_dict(), question, "Normandy is in France.", "other",
                        chain_passages(("Normans", "The Normans gave their name to Normandy, a region in France.")))
    assert chain == [] and hops_found(chain) is None


def test_a_run_keeps_the_chain_and_trace_shows_it_and_a_twin_is_refused_naming_its_hop(tmp_path):
    """Through the real graph (real retrieval and BAUG, a scripted generator): the answered question's
    row keeps both hops, quoted; its twin without Shirley Temple's page gets one more round searched for
    that hop, then is refused with the hop named; ``trace`` prints the chain and the HTML page carries it."""
    import json

    from typer.testing import CliRunner

    from agentic_rag.cli import app
    from agentic_rag.datasets.crag import write_records
    from agentic_rag.eval.runner import run_eval
    from agentic_rag.trace.html import render_html
    from agentic_rag.trace.run import load_run
    from testkit.fakes import ScriptedChat
    from testkit.records import record

    whole = record(BRIDGE_Q, dict((FILM, PERSON, OTHER)))
    whole.interaction_id, whole.answer = "bridge-whole", "Chief of Protocol"
    twin = record(BRIDGE_Q, dict((FILM, OTHER)))
    twin.interaction_id, twin.answer = "bridge-twin", "i don't know"
    data = tmp_path / "bridge.jsonl"
    write_records([whole, twin], data)
    settings = Settings.load(overrides={"ARTIFACTS_DIR": str(tmp_path / "artifacts"), "CHAIN_CHECK": True,
                                        "GATE_POLICY": "thresholds", "VERIFIER_ENABLED": False})
    reply = "Shirley Temple served as Chief of Protocol. {cite:Chief of Protocol}"
    fake = ScriptedChat(replies=[reply, "Shirley Temple held the post of Chief of Protocol.",
                                 "Shirley Temple held the post of Chief of Protocol."])
    out = tmp_path / "run"
    run_eval(data, "agent", settings, out, progress=False, extra_config={"llm": fake})
    rows = {r["id"]: r for r in map(json.loads, (out / "results.jsonl").read_text().splitlines())}
    answered, refused = rows["bridge-whole"], rows["bridge-twin"]
    assert [h["found"] for h in answered["chain"]] == [True, True], answered["chain"]
    assert "Chief of Protocol" in answered["chain"][1]["quote"] and "Corliss Archer" in answered["chain"][0]["quote"]
    assert refused["reason"] == "ABSTAIN_MISSING_HOP" and refused["status"] == "refuse"
    assert refused["missing"] == ["no page about Shirley Temple states the answer the draft gives"]
    telemetry = [json.loads(line) for line in (out / "telemetry.jsonl").read_text().splitlines()]
    twin_rounds = [t for t in telemetry if t["question_id"] == "bridge-twin"]
    assert [t["reason"] for t in twin_rounds] == ["RETRIEVE_MISSING_HOP", "ABSTAIN_MISSING_HOP"]
    assert twin_rounds[0]["chain"] == [{"hop": 1, "role": "bridge", "found": True, "n": twin_rounds[0]["chain"][0]["n"]},
                                       {"hop": 2, "role": "answer", "found": False, "n": None}]
    shown = CliRunner().invoke(app, ["trace", str(out), "--id", "bridge-whole"])
    assert shown.exit_code == 0 and "evidence chain:" in shown.stdout and "hop 2 (answer)" in shown.stdout
    page = render_html(load_run(out))
    view = json.loads(page.split('id="run-data">', 1)[1].split("</script>", 1)[0])
    lines = {q["id"]: [h["line"] for h in q["chain"]] for q in view["questions"]}
    assert lines["bridge-twin"][1] == "hop 2 (answer) MISSING: no page about Shirley Temple states the answer the draft gives"


def test_the_evidence_a_system_packs_is_what_its_generator_reads_and_its_gold_pages_are_counted(agent_settings):
    """studies/evidence.py stops each graph where its context is packed (no model call): the bundle is the
    one a run's generator reads, and the gold pages it holds are counted per group."""
    from agentic_rag.runner import answer
    from studies.evidence import evidence_recall, gold_held, packed_evidence
    from testkit.fakes import ScriptedChat
    from testkit.records import record

    rec = record(BRIDGE_Q, dict((FILM, PERSON, OTHER)))
    rec.gold_page_urls = ["toy://0", "toy://1"]  # the film's page and Shirley Temple's
    settings = agent_settings.replace(GATE_POLICY="thresholds", VERIFIER_ENABLED=False)
    for system, node in (("agent", "supervise"), ("baseline", "pack")):
        packed = packed_evidence(system, rec, settings)
        run = answer(system, settings, record=rec, extra_config={"llm": ScriptedChat(replies=["Chief of Protocol."] * 4)})
        read = next(e["bundle"] for e in run.events if e["node"] == node)
        assert [p["chunk_id"] for p in packed["passages"]] == [p["chunk_id"] for p in read["passages"]]
        assert packed["context_tokens"] == read["context_tokens"] > 0
    held = {s: gold_held(rec, packed_evidence(s, rec, settings)) for s in ("agent", "baseline")}
    assert held["baseline"] == (2, 2)  # three pages: the baseline packs them all
    report = evidence_recall([rec, record(BRIDGE_Q, dict((FILM, OTHER)))], ("agent", "baseline"), settings,
                             groups=lambda r: ["plan:bridge"])  # the second record has no gold pages: not counted
    for system, (n, gold) in held.items():
        figures = report[system]["all"]
        assert figures["records"] == 1 and report[system]["plan:bridge"] == figures
        assert figures.get("all_gold", 0) == (n == gold) and figures.get("some_gold", 0) == (0 < n < gold)


def test_a_bridge_questions_worker_follows_a_name_its_passages_give_to_that_page():
    """Four pages that name the question's anchor outrank Shirley Temple's, which names neither it nor
    the question's words: a worker keeps the best four and loses her page. Following the names its
    passages give, the film's page names her, and her page keeps a place of its own on that mention.
    The agent asks that only of a bridge question's workers."""
    from agentic_rag.anchors.matching import Anchor
    from agentic_rag.runner import graph_input
    from agentic_rag.workers.source import resolve_index
    from agentic_rag.workers.worker import WORKER_PASSAGES, explore
    from graphs.agent import dispatch_workers
    from testkit.records import record

    pages = dict((FILM, PERSON, OTHER))
    pages.update({f"Distractor {i}": text for i, text in enumerate([
        "A Kiss for Corliss is a 1949 American comedy film, the sequel to Kiss and Tell, with Corliss Archer again.",
        "Corliss Archer is a fictional teenage girl created by F. Hugh Herbert for the stage play Kiss and Tell.",
        "Kiss and Tell is a 1943 Broadway play by F. Hugh Herbert about Corliss Archer and her family.",
        "Janet Waldo voiced Corliss Archer on the radio in the 1940s, in the series that followed Kiss and Tell."])})
    settings = Settings.load()
    index = resolve_index(graph_input(record=record(BRIDGE_Q, pages)), settings)
    film = next(p for p in index.pages if p.page_name == FILM[0])
    assert [index.page(p).page_name for p in index.named_pages(FILM[1], film.page_id)] == ["Shirley Temple"]
    # one article's paragraphs (SQuAD) share a title: a paragraph naming the article names none of them
    paragraphs = {f"Warsaw (paragraph {i})": f"Warsaw is the capital of Poland. Fact {i} about the city." for i in range(3)}
    squad = resolve_index(graph_input(record=record("What is the capital of Poland?", paragraphs)), settings)
    assert all(squad.named_pages(p.text, p.page_id) == [] for p in squad.chunks)
    anchor = Anchor(text="Corliss Archer", type="person", score=0.9)
    plain = explore(anchor, BRIDGE_Q, index, settings)
    assert len(plain["passages"]) == WORKER_PASSAGES and "Shirley Temple" not in [p["page_name"] for p in plain["passages"]]
    following = explore(anchor, BRIDGE_Q, index, settings, follow_mentions=True)
    assert [p["page_name"] for p in following["passages"]] == [p["page_name"] for p in plain["passages"]] + ["Shirley Temple"]
    assert following["passages"][-1]["mentioned"] and following["path_score"] == plain["path_score"]
    state = {"question": BRIDGE_Q, "anchors": [anchor.to_dict()], "started_at": 0.0}
    config = {"configurable": {"settings": settings}}
    for shape, follows in (("bridge", True), ("comparison", False), ("single", False)):
        sends = dispatch_workers({**state, "hop_plan": {"shape": shape}}, config)
        assert [send.arg["follow_mentions"] for send in sends] == [follows]


def test_a_runs_drafts_are_tallied_by_outcome_and_chain_with_what_each_use_would_change():
    from studies.chain_report import chain_outcomes

    complete = [{"hop": 1, "found": True, "role": "bridge", "claim": "Shirley Temple is what the question describes"},
                {"hop": 2, "found": True, "role": "answer", "claim": "Chief of Protocol (Shirley Temple)"}]
    broken = [complete[0], {"hop": 2, "found": False, "role": "answer", "missing": "no page about Shirley Temple says"}]

    def row(status, judgement, chain, draft="", gold="Chief of Protocol"):
        return {"status": status, "judgement": judgement, "judge_rule": "rule", "draft": draft, "gold": gold,
                "alternatives": [], "signals": {"chain": chain}}

    rows = [row("ok", "accurate", complete), row("ok", "incorrect", broken), row("ok", "incorrect", broken),
            row("ok", "accurate", broken), row("refuse", "missing", complete, "She was Chief of Protocol."),
            row("refuse", "missing", complete, "She was a radio host."), row("refuse", "missing", complete, "Radio host."),
            row("refuse", "missing", [])]
    report = chain_outcomes(rows)
    assert report["table"]["answered, wrong"] == {"broken": 2} and report["table"]["answered, right"] == {"complete": 1, "broken": 1}
    assert report["table"]["refused, draft right"] == {"complete": 1} and report["table"]["refused, draft wrong"] == {"complete": 2}
    assert report["table"]["refused, no draft"] == {"no chain": 1}
    assert report["score_change"] == {"refuse_broken": 1, "answer_complete": -1}
    # four answerable refusals: none names a hop (these rows' missing is empty), one has no chain
    assert report["hop_named"] == {"answerable_refusals": 4, "named": 0, "no_chain": 1}
    named = [{**row("refuse", "missing", broken, "She was a radio host."), "missing": ["no page about Shirley Temple says"]},
             {**row("refuse", "missing", complete, "She was a radio host."), "query": BRIDGE_Q,
              "missing": [unconfirmed_hop(complete, BRIDGE_Q)]}]
    twin = row("refuse", "missing", complete, "She was a radio host.", gold="i don't know")
    assert chain_outcomes(named + [twin])["hop_named"] == {"answerable_refusals": 2, "named": 2, "no_chain": 0}
    assert report["by_type"] == {"unknown": {"answered, right: chain broken": 1, "answered, right: chain complete": 1,
                                             "answered, wrong: chain broken": 2, "refused, draft right: chain complete": 1,
                                             "refused, draft wrong: chain complete": 2, "refused, no draft: no chain": 1}}


def test_a_runs_drafts_are_read_again_by_this_code_over_all_their_records_pages(tmp_path, monkeypatch, capsys):
    """``bench_chains.py --run RUN --pages DATASET``: each row's draft gets the chain this code reads over all
    of its record's pages, whatever chain the run stored; a row without a draft or a record has none."""
    import runpy
    import sys

    from agentic_rag.datasets.crag import write_records
    from studies.chain_report import rechained
    from testkit.records import record

    whole, twin = record(BRIDGE_Q, dict((FILM, PERSON, OTHER))), record(BRIDGE_Q, dict((FILM, OTHER)))
    whole.interaction_id, twin.interaction_id = "whole", "twin"
    stale = [{"hop": 1, "found": False}]
    draft = "Shirley Temple served as Chief of Protocol."
    rows = [{"id": "whole", "draft": draft, "signals": {"chain": stale}}, {"id": "twin", "draft": draft, "chain": stale},
            {"id": "whole", "draft": ""}, {"id": "elsewhere", "draft": draft}]
    again = rechained(rows, [whole, twin])
    assert [h["found"] for h in again[0]["chain"]] == [True, True] and "chain" not in again[0]["signals"]
    assert [h["found"] for h in again[1]["chain"]] == [True, False]
    assert again[2]["chain"] == again[3]["chain"] == []

    run = tmp_path / "run"
    run.mkdir()
    (run / "results.jsonl").write_text("".join(json.dumps({**r, "status": "ok", "judgement": "accurate", "judge_rule": "rule"})
                                               + "\n" for r in rows[:2]))
    write_records([whole, twin], tmp_path / "pages.jsonl")
    script = str(REPO / "scripts" / "bench_chains.py")

    def bench(pages: Path) -> int:  # the script as its command line runs it, in this process
        monkeypatch.setattr(sys, "argv", [script, "--run", str(run), "--out", str(tmp_path / "out"), "--pages", str(pages)])
        with pytest.raises(SystemExit) as ended:
            runpy.run_path(script, run_name="__main__")
            raise SystemExit(0)
        return ended.value.code or 0

    assert bench(tmp_path / "pages.jsonl") == 0
    assert "| answered, right | 1 | 1 | 0 |" in (tmp_path / "out" / "drafts_run.md").read_text()
    capsys.readouterr()
    assert bench(tmp_path / "nowhere.jsonl") == 2
    said = capsys.readouterr().err
    assert said.startswith("error: --pages") and len(said.strip().splitlines()) == 1
    (tmp_path / "other.jsonl").write_text("")  # readable, and none of the run's questions: no silent "no chain"
    assert bench(tmp_path / "other.jsonl") == 2 and "holds none of the run's 2 questions" in capsys.readouterr().err


class _Extractive:
    """A scripted generator that answers with the first sentence of the first source, cited: a draft a
    small model writes on a single-passage question."""

    @staticmethod
    def model():
        from testkit.fakes import ScriptedChat, sources_in

        class FirstSentence(ScriptedChat):
            def _generate(self, messages, stop=None, run_manager=None, **kwargs):
                prompt = "\n".join(str(m.content) for m in messages)
                first = next(iter(sources_in(prompt).values()), "Nothing.").strip().split(". ")[0].rstrip(".")
                self.replies = [f"{first}. [1]"]
                return super()._generate(messages, stop, run_manager, **kwargs)

        return FirstSentence(replies=["Nothing."])


def test_single_hop_questions_answer_and_spend_the_same_with_the_chain_check_on(shared_data, tmp_path):
    """squad200's first 20 records through the real graph (real retrieval and BAUG, an extractive scripted
    generator), with CHAIN_CHECK off and on: the same status, reason, answer and tokens for each."""
    import json

    from agentic_rag.datasets.crag import iter_records, write_records
    from agentic_rag.datasets.prepare.benchmarks import benchmark_dataset
    from agentic_rag.eval.runner import run_eval

    records = list(iter_records(benchmark_dataset("squad200", tmp_path, shared_data)))[:20]
    data = tmp_path / "squad20.jsonl"
    write_records(records, data)
    runs = {}
    for check in (False, True):
        out = tmp_path / f"run-{check}"
        settings = Settings.load(overrides={"ARTIFACTS_DIR": str(tmp_path / "artifacts"), "CHAIN_CHECK": check})
        run_eval(data, "agent", settings, out, progress=False, extra_config={"llm": _Extractive.model()})
        runs[check] = {r["id"]: r for r in map(json.loads, (out / "results.jsonl").read_text().splitlines())}
    assert len(runs[True]) == len(runs[False]) == 20
    assert any(r["chain"] for r in runs[True].values())  # one is planned as a bridge: the check had a chain to read
    for qid, off in runs[False].items():
        on = runs[True][qid]
        assert (on["status"], on["reason"], on["prediction"], on["tokens"]["total"]) == \
               (off["status"], off["reason"], off["prediction"], off["tokens"]["total"]), qid


@pytest.mark.model
def test_the_real_model_answers_a_hotpotqa_bridge_question_through_two_hops(shared_data, agent_settings, tmp_path):
    """A HotpotQA dev bridge question with its ten pages, the packaged generator and the chain check on:
    the answer is kept, and its chain is two hops on two pages, each quoted exactly from its page: Scott
    Parkin's page names the corporation the question describes (Halliburton), Halliburton's page states
    the answer."""
    from agentic_rag.datasets.crag import iter_records
    from agentic_rag.datasets.prepare.hotpotqa import prepare_hotpotqa
    from agentic_rag.runner import answer

    path, _ = prepare_hotpotqa(shared_data / "hotpotqa" / "hotpot_dev_distractor_first100.json", tmp_path / "dev.jsonl",
                               split="dev", progress=False)
    record = next(r for r in iter_records(path) if r.interaction_id == "hotpotqa-659b627a956d4c1f-answerable")
    assert record.query.startswith("Scott Parkin has been a vocal critic of Exxonmobil and another corporation")
    result = answer("agent", agent_settings.replace(CHAIN_CHECK=True), record=record)
    assert result.status == "ok" and "70" in result.answer, (result.reason, result.answer)
    bridge, fact = result.chain
    assert (bridge["role"], bridge["found"], fact["role"], fact["found"]) == ("bridge", True, "answer", True), result.chain
    assert bridge["entity"] == fact["entity"] == "Halliburton"
    assert (bridge["page"], fact["page"]) == ("Scott Parkin", "Halliburton")
    pages = {p.page_name: p.page_result for p in record.search_results}
    assert bridge["quote"] in pages["Scott Parkin"] and "Halliburton" in bridge["quote"]
    assert fact["quote"] in pages["Halliburton"] and "70 countries" in fact["quote"]


def test_a_draft_chain_reads_the_answer_through_typographic_quotes_and_past_the_asked_title():
    """Two drafts the packaged 0.5B wrote on HotpotQA dev, each right and each read before as a broken
    chain: the page writes the song's title with a typographic apostrophe, and the other draft runs the
    question's "United States Vice President" into the name it answers."""
    song_q = ("What is the name of the fight song of the university whose main campus is in Lawrence, Kansas and whose "
              "branch campuses are in the Kansas City metropolitan area?")
    pages = chain_passages(("Kansas Song", "Kansas Song (We’re From Kansas) is a fight song of the University of Kansas."),
                      ("University of Kansas", "The University of Kansas is a public research university. Its main "
                       "campus is in Lawrence, Kansas, with branch campuses in the Kansas City metropolitan area."))
    draft = 'The fight song of the University of Kansas is "We\'re From Kansas".'
    chain = draft_chain(hop_plan_of(song_q).to_dict(), song_q, draft, "other", pages)
    assert [h["found"] for h in chain] == [True, True] and chain[1]["entity"] == "University of Kansas", chain
    assert chain[1]["page"] == "Kansas Song"

    vp_q = "Alfred Balk served as secretary of the Committee on Minority Groups under which United States Vice President?"
    pages = chain_passages(("Alfred Balk", "Alfred Balk served as secretary of New York Governor Nelson Rockefeller's "
                       "Committee on Minority Groups."),
                      ("Nelson Rockefeller", "Nelson Rockefeller served as Vice President of the United States."))
    draft = "Alfred Balk served under the United States Vice President Nelson Rockefeller."
    chain = draft_chain(hop_plan_of(vp_q).to_dict(), vp_q, draft, "other", pages)
    assert chain[1]["found"] and chain[1]["claim"].startswith("Nelson Rockefeller"), chain


def test_a_pronoun_is_no_bridge():
    """HotpotQA dev, a twin without Champ Bailey's page: two unrelated men's pages each say "He ...", which
    named "He" as the bridge linking the Redskins to a 2003 draft. A pronoun names no one."""
    question = "What year was the brother of this first round draft pick by the Washington Redskins drafted?"
    white = ("Jeris White", "Jeris White was a cornerback for the Washington Redskins. He played football at Radford "
             "High School.")
    parenteau = ("Marc Parenteau", "Marc Parenteau is a Canadian football player. He was drafted 36th overall by the "
                 "Ottawa Renegades in the 2003 CFL Draft.")
    chain = draft_chain(hop_plan_of(question).to_dict(), question, "He was drafted in 2003.", "date", chain_passages(white, parenteau))
    assert hop_plan_of(question).shape == "bridge" and not chain[0]["found"]
    assert all(h["entity"] != "He" for h in chain)


def test_an_amount_is_no_day_of_a_date():
    """ "(February 1, 1902 – May 22, 1967)" states no amount: a comparison of "more" reads no 1 from it."""
    assert first_value("James Mercer Langston Hughes (February 1, 1902 – May 22, 1967) was an American poet.", "amount") is None
    assert first_value("Ian McEwan (born 21 June 1948) has written 17 novels.", "amount") == (17.0,)
