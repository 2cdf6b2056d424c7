"""What a refusal names as missing, on real questions: entity, period and unit pieces only.

Each question (CRAG, SQuAD 2.0, NQ-open, RGB and the bundled CRAG example) goes through the real
anchor predictor, the real validators and the real question-term and claim extraction against a
passage that does not answer it, as a refusal would; every refusal path's ``missing`` is then checked.
"""

import re

import pytest

from agentic_rag.anchors.kind import question_kind
from agentic_rag.anchors.matching import normalize_text
from agentic_rag.anchors.ner import STOP_WORDS
from agentic_rag.anchors.predictor import propose_anchors, select_anchors
from agentic_rag.baug.refusal import explain_refusal, missing_pieces
from agentic_rag.baug.signals import new_claims, unmatched_question_terms
from agentic_rag.configuration import Settings
from agentic_rag.generator.finalize import build_record
from agentic_rag.supervisor.validators import validate

# the defaults whatever AGENTIC_RAG_PRESET says, under the thresholds' policy these checks belong to
S = Settings.load(preset="default", overrides={"GATE_POLICY": "thresholds"})
OFF_TOPIC = "The city council met on Tuesday to discuss the new library budget and the parking rules."

# (question, a draft the refused answer might have been)
QUESTIONS = [
    # the bundled CRAG example, and the question whose refusal listed "other", "between", "out"
    ("what is the other language between heaven and hell came out in originally?", "It came out in German [1]."),
    ("is dreamworks animation owned by time warner or universal pictures?", "Universal Pictures owns it [1]."),
    ("how many times has rory mcilroy won the masters tournament?", "Rory McIlroy has won it twice [1]."),
    ("which company have larger market cap, plya or seatw?", "PLYA has the larger market cap [1]."),
    ("what is the shortest highway in the us in feet?", "Interstate 878 is 3,696 feet long [1]."),
    # CRAG dev: units, periods, comparisons, "between", "out", "other", long questions
    ("how many 3-point attempts did steve nash average per game in seasons he made the 50-40-90 club?",
     "He averaged 3.4 attempts per game [1]."),
    ("what is the height difference between allal al fassi dam and foum gleita dam in meters?",
     "The difference is 37 meters [1]."),
    ("which company had the higher debt-to-equity ratio in 2023 between meta and microsoft?", "Microsoft had it [1]."),
    ("was jen halley involved in the production of any movies that were released between 2001 and 2013?", "Yes [1]."),
    ("how many family movies were there that came out in 1994?", "There were 14 family movies in 1994 [1]."),
    ("in 2021-12, which teams were able to come out on top against golden state warriors?", "The Suns won [1]."),
    ("can you tell me what other songs the same artist released in the same year as my time?", "Bam Bam [1]."),
    ("did eminem co-headline with any other singers by 2010? if yes, who are they?", "Yes, with Jay-Z [1]."),
    ("can you tell me the days in q4 2023 when the stock price of shc closed lower?", "October 3, 2023 [1]."),
    ("who are the non-english players that have scored 150 goals or more in the premier league?",
     "Sergio Aguero and Thierry Henry [1]."),
    ("which movie has a higher number of original songs, grease or la la land?", "Grease has more [1]."),
    ('what album did halsey release in 2017, which included the songs "now or never" and "eyes closed"?',
     "Hopeless Fountain Kingdom [1]."),
    ("who is the american singer-songwriter who has won 14 grammy awards and is known for her unique blend of "
     'country, pop, and rock music, including her hit songs "you belong with me" and "we are never ever getting back '
     'together"?', "Taylor Swift [1]."),
    ("which five companies have successfully implemented a policy of paying all employees a minimum salary of "
     "$180,000 per year without experiencing any decrease in profitability or increase in turnover?", "Gravity Payments [1]."),
    # SQuAD 2.0
    ("Who ultimatly drove the Byzantines out of Europe?", "The Ottomans drove them out [1]."),
    ("What Norman law wasdeveloped between 1000 and 1300?", "Norman customary law [1]."),
    ("Complexity theory seeks to define the relationship between the scale of algorithms with respect to what other "
     "variable?", "The input size [1]."),
    ("In which case did the Court of Justice state that refusal to admit a lawyer to the Belgian bar because he did "
     "not have Belgian heritage wasn't able to be justified?", "Reyners v Belgium [1]."),
    ("How many miles is Montpellier from Paris?", "About 460 miles [1]."),
    # NQ-open
    ("who wrote cant get you out of my head lyrics", "Cathy Dennis and Rob Davis [1]."),
    ("other than water what else has hydrogen bonds", "Ammonia [1]."),
    ("how long is a whale shark in meters", "Up to 18.8 meters [1]."),
    ("who won the oscar for best picture in 1976", "One Flew Over the Cuckoo's Nest [1]."),
    # RGB
    ("What was Tesla's revenue in Q1 2021?", "Tesla's revenue was $10.4 billion [1]."),
    ("Who won the women's singles Wimbledon in 2019?", "Simona Halep won [1]."),
]

FALLBACKS = {"a source that answers the question as asked", "a source that states the answer to the question as asked"}
REASONS = ("ABSTAIN_MISSING_ANCHORS", "ABSTAIN_NOT_ANSWERABLE", "ABSTAIN_NOT_VERIFIED", "ABSTAIN_LOW_RETRIEVAL_SCORE",
           "ABSTAIN_HEDGING", "ABSTAIN_NO_EVIDENCE", "ABSTAIN_LOW_BUDGET", "ABSTAIN_LOW_SUPPORT")


def refusal_inputs(question: str, draft: str, with_anchors: bool) -> tuple[dict, dict, set[str]]:
    """Signals and validation as the gate would leave them after reading ``OFF_TOPIC``, and every
    piece the refusal may draw from (anchors, question words, the draft's claims)."""
    proposed = propose_anchors(question, S.agent.ANCHOR_TOP_M)
    anchors = select_anchors(proposed, S.agent.ANCHOR_MIN_SCORE)
    validation = validate(question_kind(question, proposed), anchors, OFF_TOPIC)
    signals = {
        "missing_anchors": [a.text for a in anchors] if with_anchors else [],
        "question_terms_unmatched": unmatched_question_terms(question, OFF_TOPIC),
        "unsupported_claims": new_claims(draft, question),
        "answerability": 0.1, "anchor_coverage": 0.0, "overlap_est": 0.0, "faith_est": 0.0, "sentences": [],
    }
    validation = {"missing": validation.missing if with_anchors else [], "found_periods": [], "conflicting_periods": {}}
    sources = {a.text for a in anchors} | set(signals["question_terms_unmatched"]) | set(signals["unsupported_claims"])
    return signals, validation, sources


def words_of(piece: str) -> list[str]:
    return re.findall(r"[^\W_]+", piece.lower())


def assert_pieces(missing: list[str], question: str, draft: str, sources: set[str]) -> None:
    context = normalize_text(f"{question} {draft}")
    pieces = [m for m in missing if m not in FALLBACKS]
    assert len(pieces) == len(missing) or len(missing) == 1, missing  # a description only stands alone
    assert len({normalize_text(p) for p in pieces}) == len(pieces), f"duplicates in {missing}"
    for p in pieces:
        ws = words_of(p)
        # drawn from the anchors, the question's words or the draft's claims (a word of a hyphenated
        # one stands for the whole word), never made up
        assert p in sources or any(normalize_text(p) in normalize_text(s) or s.lower() in p.lower().split("-")
                                   for s in sources), (p, sources)
        # no filler: a piece is not made of stop words only (unless the question quotes it as a title)
        assert not all(w in STOP_WORDS for w in ws) or f'"{normalize_text(p)}"' in context, (p, missing)
        # no fragment: written in the question or draft as whole words
        assert re.search(r"(?<![\w'-])" + re.escape(normalize_text(p)) + r"(?![\w-])", context), (p, question)
        # no word said twice in a row unless the question writes it so ("la la land")
        doubled = any(a == b for a, b in zip(ws, ws[1:]))
        assert not doubled or normalize_text(p) in context, p
    for p in pieces:  # no piece whose words all sit in a longer one ("keeper" beside "keeper bay")
        own = set(words_of(p)) - STOP_WORDS or set(words_of(p))
        assert not any(own < (set(words_of(q)) - STOP_WORDS or set(words_of(q))) for q in pieces if q != p), (p, missing)


@pytest.mark.parametrize("question, draft", QUESTIONS, ids=[q[:40] for q, _ in QUESTIONS])
def test_refusals_name_only_real_missing_pieces(question, draft):
    for with_anchors in (True, False):  # without anchors the question's words or the draft's claims are named
        signals, validation, sources = refusal_inputs(question, draft, with_anchors)
        for reason in REASONS:
            _, missing = explain_refusal(reason, signals, validation, S, {}, question=question, draft=draft)
            assert_pieces(missing, question, draft, sources)


def test_the_reported_refusals_no_longer_name_filler_or_doubled_words():
    q = "what is the other language between heaven and hell came out in originally?"
    signals, validation, _ = refusal_inputs(q, "", with_anchors=False)
    assert {"other", "between", "out"} <= set(signals["question_terms_unmatched"])  # what the refusal used to list
    text, missing = explain_refusal("ABSTAIN_NOT_ANSWERABLE", signals, validation, S, question=q)
    assert missing and not {"other", "between", "out", "came", "originally"} & set(missing)
    assert "language" in missing and '"other"' not in text and '"between"' not in text
    # overlapping spans of a long question: one word twice, and a piece inside another
    long_q = "who was the keeper of the lighthouse at keeper bay when the harbour closed to other ships in 1890?"
    _, missing = explain_refusal("ABSTAIN_MISSING_ANCHORS", {"missing_anchors": ["keeper", "keeper keeper bay", "1890"],
                                 "anchor_coverage": 0.0}, {"missing": ["1890"]}, S, question=long_q)
    assert missing == ["keeper bay", "1890"]


@pytest.mark.parametrize("items, context, expected", [
    (["other", "between", "out", "language"], "what other language came out between them?", ["language"]),
    (["d", "trading volume"], "what is the trading volume of polypid on wed?", ["trading volume"]),
    (["debt", "equity", "ratio", "2021"], "the debt-to-equity ratio in 2021-12?", ["debt-to-equity", "ratio", "2021-12"]),
    (["la la land", "grease"], "which movie has more songs, grease or la la land?", ["la la land", "grease"]),
    (["now or never", "all alone"], 'did "now or never" outsell all alone?', ["now or never"]),
    (["US", "us"], "what is the shortest highway in the US?", ["US"]),
    (["2024", "q1 2024", "Q1 2024"], "what was the revenue in q1 2024?", ["q1 2024"]),
    (["per game", "2021"], "how many points per game in 2021?", ["per game", "2021"]),
    (["Braddock", "Braddock"], "who killed him?\nBraddock's men did [1].", ["Braddock"]),
])
def test_missing_pieces(items, context, expected):
    assert missing_pieces(items, context) == expected


def test_a_refusal_record_checks_its_missing_pieces_against_its_own_question_and_draft():
    state = {
        "question": "which team won the most games out of the teams between 2019 and 2021 per game?",
        "decision": {"action": "ABSTAIN", "reason": "ABSTAIN_MISSING_ANCHORS"},
        "signals": {"missing_anchors": ["2019", "out", "ga"], "anchor_coverage": 0.3, "sentences": []},
        "validation": {"missing": ["per game", "2019"], "found_periods": []},
        "draft": "The Bucks won [1].",
        "bundle": {"passages": []},
    }
    rec = build_record(state, "agent", S, {"total": 0}, 1)
    assert rec.status == "refuse" and rec.missing == ["2019", "per game"]
    assert '"out"' not in rec.explanation and '"2019" and "per game"' in rec.explanation


def test_an_eval_row_keeps_what_the_refusal_says_is_missing():
    from agentic_rag.datasets.crag import CragRecord
    from agentic_rag.eval.judge import judge
    from agentic_rag.eval.rows import result_row

    rec = CragRecord(interaction_id="q1", query="who won in 2019?", answer="i don't know", search_results=[])
    refused = build_record({"question": rec.query, "decision": {"action": "ABSTAIN", "reason": "ABSTAIN_MISSING_ANCHORS"},
                            "signals": {"missing_anchors": ["2019"], "sentences": []}, "validation": {"missing": []},
                            "draft": "", "bundle": {"passages": []}}, "agent", S, {"total": 0}, 1)
    row = result_row(rec, refused, judge(refused.answer, "", rec.answer, [], refused=True, question=""))
    assert row["missing"] == ["2019"] == refused.missing  # `trace` and a reader of results.jsonl see it
