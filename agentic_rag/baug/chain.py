"""The evidence chain: each hop of a multi-hop answer found, quoted and checked against its own page.

A single-claim check reads "Shirley Temple held the post of Chief of Protocol" as supported when one
sentence holds the names; a chain asks each step for its own sentence:

- bridge: hop 1 is a sentence naming one of the question's names and the bridge entity (the film's
  page naming its star), hop 2 a sentence that states the answer and is about that entity (her page,
  or a sentence naming her). When one sentence does both, the chain is that one sentence.
- comparison: a hop per compared item, each a sentence about the item (naming it, or on its page) that
  states what is compared: a date when the question asks which came first, a number when it asks
  which is more.

Every quote is exact source text from an untrusted-free passage. A hop no sentence states is
``found: False`` and named in words a refusal can show ("no page links Kiss and Tell to the entity
the question describes"). The plan comes from the question (anchors/hops.py); the decision reads the
chain through agentic_rag/checks.py's ``hops_found`` check.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Iterable

from agentic_rag.anchors.hops import HopPlan, described_clause
from agentic_rag.anchors.matching import MONTH_ABBR, MONTHS, RE_DATE_OR_YEAR, RE_NUMBER, claims_of, first_date, normalize_text
from agentic_rag.baug.signals import _DISAMBIGUATION, _chunk_sentences, claim_in, key_tokens, new_claims, says_something
from agentic_rag.events import clip
from agentic_rag.text import stem, stems, tokenize, untrusted_source

# the share of the question's names a bridge chain's two passages must state (HotpotQA dev, gold answers:
# 1.0 breaks more twins and fewer answerable chains, 0.5 the reverse; benchmarks/chain/)
CHAIN_NAMES_MIN = 0.75


@dataclass(frozen=True)
class Sentence:
    n: int  # the source number in the prompt
    page: str  # the page's name, without a "(disambiguation)"
    text: str
    passage: str = ""  # the whole passage it is in: a hop's page may state a name in the next sentence


def evidence_sentences(passages: Iterable[dict[str, Any]]) -> list[Sentence]:
    """The sentences a hop may quote: every sentence that says something, of every trusted passage."""
    out = []
    for p in passages:
        if untrusted_source(p):
            continue
        page = _DISAMBIGUATION.sub("", p.get("page_name") or "").strip()  # "Winner (band)" is about Winner
        out += [Sentence(p["n"], page, s, p["text"]) for s in _chunk_sentences(p["text"]) if says_something(s)]
    return out


def _states(name: str, text: str) -> bool:
    """Whether a text names ``name``, dashes, quotes and accents aside ("Russia–United Kingdom", "Pandora- The
    World of Avatar" of "Pandora – The World of Avatar")."""
    return claim_in(_DASH.sub("-", normalize_text(name)), _DASH.sub("-", normalize_text(text)))


_DASH = re.compile(r"\s*-\s*")


def _about(name: str, s: Sentence) -> bool:
    """Whether a sentence is about ``name``: it names it, or it is on the page of that name."""
    return _states(name, s.text) or (len(name) >= 3 and normalize_text(name) == normalize_text(s.page))


def _hop(role: str, claim: str, s: Sentence | None, missing: str, entity: str = "") -> dict[str, Any]:
    """One hop; ``entity`` is what it is about (the bridge, or the compared item): the next hop's search
    starts from it."""
    if s is None:
        return {"role": role, "claim": claim, "entity": entity, "found": False, "missing": missing, "quote": "",
                "n": None, "page": ""}
    return {"role": role, "claim": claim, "entity": entity, "found": True, "missing": "", "quote": s.text, "n": s.n,
            "page": s.page}


_CALENDAR = frozenset(MONTHS) | frozenset(MONTH_ABBR) | {"monday", "tuesday", "wednesday", "thursday", "friday",
                                                        "saturday", "sunday"}


def _names_in(text: str, exclude: Iterable[str]) -> list[str]:
    """The capitalised names of a sentence, other than ``exclude``'s, the calendar's and a pronoun's (a
    bridge entity's candidates: "born 3 May 1956" names no bridge, nor does "He was drafted ...")."""
    from agentic_rag.anchors.ner import STOP_WORDS

    skip = [normalize_text(x) for x in exclude]
    return [c for c in claims_of(text) if not RE_NUMBER.fullmatch(c) and normalize_text(c) not in _CALENDAR
            and c.lower() not in STOP_WORDS
            and not any(normalize_text(c) in s or s in normalize_text(c) for s in skip if s)]


def _names_held(names: list[str], sentences: Iterable[Sentence]) -> list[str]:
    """The question's names that the sentences state (in their text, or as their page's name)."""
    return [n for n in names if any(_about(n, s) or _states(n, s.passage) for s in sentences)]


def bridge_chain(plan: HopPlan, answer_claims: list[str], sentences: list[Sentence],
                 draft_names: list[str] = ()) -> list[dict[str, Any]]:
    """Hop 1 (the question's names to the bridge entity) and hop 2 (the answer, stated of that entity).

    Hop 2 is a sentence that states the answer; the bridge is its page, or a name it holds besides the
    question's and the answer's. Hop 1 is a sentence that names that bridge (or is on its page) and the
    question's names. The chain must state most of the question's names (``CHAIN_NAMES_MIN``) between its
    two passages: a sentence that gives the answer and shares one place name with the question ("played
    for the Melbourne Storm") is not the chain of "which team ... is based in Melbourne, Victoria". Of the
    chains found, the one stating most of the question's names wins, a one-sentence chain on a tie.
    A draft that names its bridge (``draft_names``: "The Androscoggin Bank Colisée can seat 1,400") is
    held to it."""
    names = list(plan.names)
    if not answer_claims:
        return [_hop("bridge", "", None, "the draft states no answer to look for"),
                _hop("answer", "", None, "the draft states no answer to look for")]
    states = [s for s in sentences if all(_states(c, s.text) for c in answer_claims)]
    held = [b for b in draft_names if not any(claim_in(b, n) or claim_in(n, b) for n in names)]
    if held:  # the draft says which entity its answer is about: the answer must be stated of that one
        states = [s for s in states if any(_about(b, s) for b in held)]
    answer = ", ".join(answer_claims)
    best: tuple[int, int, Sentence, Sentence, str] | None = None
    for s2 in states:
        candidates = [b for b in dict.fromkeys([s2.page, *_names_in(s2.text, [*names, *answer_claims])]) if b]
        links = [(s2, s2.page or "the page")] + [
            (s1, b) for s1 in sentences if s1 is not s2 for b in candidates if _about(b, s1)]
        for s1, bridge in links:
            score = (len(_names_held(names, (s1, s2))), -int(s1 is not s2))
            if best is None or score > best[:2]:
                best = (*score, s1, s2, bridge)
    if best and best[0] >= CHAIN_NAMES_MIN * len(names):
        _, _, s1, s2, bridge = best
        return [_hop("bridge", f"{bridge} is what the question describes", s1, "", bridge),
                _hop("answer", f"{answer} ({bridge})", s2, "", bridge)]
    if best:
        _, _, s1, s2, bridge = best
        unstated = [n for n in names if n not in _names_held(names, (s1, s2))]
        return [_hop("bridge", "", None, f"no page links {' and '.join(unstated)} to {bridge}", bridge),
                _hop("answer", f"{answer} ({bridge})", s2, "", bridge)]
    # no sentence states the answer: hop 1 may still be found, the sentence that holds the question's
    # names and one name more (the draft's bridge, when it names one)
    link, described = _best_link(names, sentences, held, answer_claims)
    start = " or ".join(names[:3])
    return [_hop("bridge", f"{described} is what the question describes", link,
                 f"no page links {start} to the entity the question describes", described),
            _hop("answer", answer, None, f"no page{f' about {described}' if described else ''} states the answer the draft gives",
                 described)]


def _best_link(names: list[str], sentences: list[Sentence], held: list[str],
               answer_claims: list[str]) -> tuple[Sentence | None, str]:
    """The hop-1 sentence without a hop 2: the one holding most of the question's names (at least
    ``CHAIN_NAMES_MIN`` of them) that names a bridge: the draft's, or else a name the question and the
    answer do not use."""
    best: tuple[int, Sentence, str] | None = None
    for s in sentences:
        held_here = len(_names_held(names, (s,)))
        if held_here < CHAIN_NAMES_MIN * len(names) or (best and held_here <= best[0]):
            continue
        others = [b for b in held if _about(b, s)] if held else _names_in(s.text, [*names, *answer_claims])
        if others:  # the longest name: "Shirley Temple", not the "American" of "an American comedy film"
            best = (held_here, s, max(others, key=lambda b: len(b.split())))
    return (best[1], best[2]) if best else (None, held[0] if held else "")


def _measures(s: Sentence, measure: str, shared: tuple[list[str], list[str]] = ([], [])) -> bool:
    """Whether a sentence states what is compared: a date, a number that is not only a year, or, when the
    question asks what both items are, the draft's answer (``shared``: its ``shared_terms``)."""
    if measure == "shared":
        claims, words = shared
        if claims:
            return all(claim_in(c, s.text) for c in claims)
        present = stems(s.text)
        return any(stem(w) in present for w in words)
    if measure == "date":
        return RE_DATE_OR_YEAR.search(s.text) is not None
    if measure == "amount":
        return any(not RE_DATE_OR_YEAR.fullmatch(m.group(0)) for m in RE_NUMBER.finditer(s.text))
    return True


def shared_terms(answer: str, question: str) -> tuple[list[str], list[str]]:
    """What a draft says both compared items are: the names it adds to the question ("British", "Nobel
    Prize"), or else its content words ("Both were film directors": film, directors), any one of which an
    item's sentence must state (by stem: "poet" of "poets")."""
    from agentic_rag.anchors.ner import STOP_WORDS  # spaCy's list: the agent has it loaded, a report need not

    claims = new_claims(answer, question)
    words = [t for t in key_tokens(answer, question) if len(t) >= 3 and t not in STOP_WORDS]
    return claims, words


SUBJECT_CHARS = 15  # an item named this early in a sentence on another page is what the sentence is about
# ("Terrence Richardson (born ...)", "The band Wolf Alice ..."), not "The film was directed by Scott Derrickson"


def first_value(text: str, measure: str) -> tuple[float, ...] | None:
    """The first date or number a sentence states: what its item is compared by."""
    if measure == "date":
        return first_date(text)
    # a count or a measure, not a date or a year, an ordinal ("the 13th highest") or part of a name ("K4")
    text = RE_DATE_OR_YEAR.sub(" ", text)
    numbers = [m.group(0).rstrip(",.") for m in RE_NUMBER.finditer(text)
               if not re.match(r"[A-Za-z]", text[m.end():m.end() + 1]) and not re.search(r"[A-Za-z]$", text[:m.start()])]
    numbers = [n for n in numbers if not RE_DATE_OR_YEAR.fullmatch(n)]
    return (float(numbers[0].replace(",", "")),) if numbers else None


def _shown(value: tuple[float, ...]) -> str:
    if len(value) == 3:  # a date: as precise as it was written
        year, month, day = (int(v) for v in value)
        return f"{year}-{month:02d}-{day:02d}" if month else str(year)
    return f"{value[0]:g}"


def _picked(answer: str, items: tuple[str, ...]) -> str:
    """The item a draft answers with: the one it names first ("Annie Morton is older than ...")."""
    at = {item: normalize_text(answer).find(normalize_text(item)) for item in items}
    named = [item for item, pos in at.items() if pos >= 0]
    return min(named, key=at.get) if named else ""


def comparison_chain(plan: HopPlan, sentences: list[Sentence], answer: str = "",
                     question: str = "") -> list[dict[str, Any]]:
    """A hop per compared item: a sentence about it that states what is compared. The item's own page
    is preferred (a sentence on Annie Morton's page gives her birth date; one naming Terry Richardson
    on her page does not give his). Where the question asks what both items are ("What nationality
    were Alfred Gell and Edmund Leach?"), each item's sentence must state the draft's answer: one page
    saying "British" does not make the other man British. Where the question says which value wins
    ("older": the earliest date; "more": the largest number) and both items' values are read, a last
    hop compares them: the draft must name the item the pages make the winner."""
    shared = shared_terms(answer, question) if plan.measure == "shared" else ([], [])
    said = ", ".join(next(filter(None, shared), []))
    what = {"date": "a date", "amount": "a number", "fact": "a fact", "shared": said or "the answer"}[plan.measure]
    hops = []
    for item in plan.items:
        own = [s for s in sentences if normalize_text(item) == normalize_text(s.page)]
        named = [s for s in sentences if s not in own and claim_in(item, s.text[: SUBJECT_CHARS + len(item)])]
        hit = next((s for s in [*own, *named] if _measures(s, plan.measure, shared)), None)
        hops.append(_hop("item", f"{what} about {item}", hit, f"no page states {what} about {item}", item))
    values = [first_value(h["quote"], plan.measure) if h["found"] else None for h in hops]
    picked = _picked(answer, plan.items)
    if plan.wins and picked and all(v is not None for v in values) and values[0] != values[1]:
        best = (max if plan.wins == "most" else min)(range(len(values)), key=lambda i: values[i])
        winner, other = plan.items[best], plan.items[1 - best]
        word = {("date", "least"): "earlier", ("date", "most"): "later", ("amount", "least"): "smaller",
                ("amount", "most"): "larger"}[(plan.measure, plan.wins)]
        claim = (f"{winner} has the {word} {what[2:]} ({_shown(values[best])} against {_shown(values[1 - best])} "
                 f"for {other})")
        missing = "" if picked == winner else f"the pages make {winner}, not {other}, the answer: {claim}"
        hops.append({"role": "compare", "claim": claim, "entity": winner, "found": picked == winner,
                     "missing": missing, "quote": "", "n": None, "page": ""})
    return hops


def evidence_chain(plan: HopPlan, answer_claims: list[str], passages: Iterable[dict[str, Any]],
                   draft_names: list[str] = (), answer: str = "", question: str = "") -> list[dict[str, Any]]:
    """The chain for a multi-hop plan ([] for a single-hop one), hops numbered from 1; ``answer`` (the
    draft's text) is what a comparison's hops check, against ``question``."""
    if not plan.multi_hop:
        return []
    sentences = evidence_sentences(passages)
    hops = (comparison_chain(plan, sentences, answer, question) if plan.shape == "comparison"
            else bridge_chain(plan, answer_claims, sentences, draft_names))
    return [{"hop": i, **h} for i, h in enumerate(hops, start=1)]


def hops_found(chain: list[dict[str, Any]]) -> float | None:
    """The share of the chain's hops that a sentence states (None without a chain: no reading)."""
    return sum(h["found"] for h in chain) / len(chain) if chain else None


def missing_hop(chain: list[dict[str, Any]]) -> str:
    """What a refusal names: the first hop no page states."""
    return next((h["missing"] for h in chain if not h["found"]), "")


def unconfirmed_hop(chain: list[dict[str, Any]], question: str) -> str:
    """What a refusal names when a page states every hop and another check still refuses the answer.

    Each hop is found by the names it shares with the question, not by how it relates them, so what stays
    unconfirmed is the relation: the question's content words that no quoted hop says. A bridge question's
    relative clause, with the noun before it, describes the bridge ("the woman who portrayed Corliss
    Archer"), so its words are hop 1's and the rest the answer hop's; the hop missing more of its words is
    named. A comparison whose last hop compared the pages' own values has nothing unquoted left: the last
    hop is named as the one to confirm. "" for a chain with a missing hop (``missing_hop`` names that one)
    or no chain."""
    if not chain or not all(h["found"] for h in chain):
        return ""
    from agentic_rag.anchors.ner import content_words
    from agentic_rag.baug.signals import unmatched_question_terms

    last = chain[-1]
    said = " ".join(f"{h.get('quote', '')} {h.get('page', '')} {h.get('entity', '')}" for h in chain)
    unsaid = [] if last["role"] == "compare" else content_words(unmatched_question_terms(question, said), question)
    hop, words = last, unsaid
    if last["role"] == "answer" and unsaid:
        clause = set(tokenize(described_clause(question)))
        described = [t for t in unsaid if t in clause]
        if len(described) > len(unsaid) - len(described):
            hop, words = chain[0], described
        else:
            words = [t for t in unsaid if t not in clause]
    if not words:
        return f"a page confirming that {hop['claim']} answers the question (hop {hop['hop']})"
    cased = {w.lower(): w for w in re.findall(r"[\w'-]+", question)}  # "England" as the question writes it
    shown = " ".join(cased.get(w, w) for w in words[:5])
    return f"a page saying {shown} of {hop.get('entity') or hop.get('page')} (hop {hop['hop']})"


def searchable(chain: list[dict[str, Any]]) -> bool:
    """Whether a search may find the first missing hop: a comparison the draft got the wrong way round is
    not missing from the pages, it is contradicted by them."""
    hop = next((h for h in chain if not h["found"]), None)
    return hop is not None and hop["role"] != "compare"


def next_hop_query(chain: list[dict[str, Any]], question: str) -> str:
    """The search for the first missing hop, keyed by what the hop before it found: the bridge entity
    with the question's words its page did not state ("Shirley Temple government position held"), the
    question's names for a missing link, the compared item with what is compared."""
    from agentic_rag.baug.signals import unmatched_question_terms

    hop = next((h for h in chain if not h["found"]), None)
    if hop is None:
        return ""
    said = " ".join(h["quote"] for h in chain if h["found"])
    asked = unmatched_question_terms(question, said) if said else []
    return " ".join(dict.fromkeys(t for t in [hop.get("entity", ""), *asked] if t))


def answer_claims(answer: str, question: str) -> list[str]:
    """What hop 2 must state: the names and numbers the answer adds to the question, or, for an answer
    in plain words ("spot-fixing", "martial artist"), its longer words."""
    claims = new_claims(answer, question)
    if claims:
        return claims
    asked = set(tokenize(question))
    return [w for w in dict.fromkeys(tokenize(answer)) if len(w) >= 4 and w not in asked and w not in ("yes",)]


def draft_chain(plan: dict[str, Any] | None, question: str, answer: str, kind: str,
                passages: Iterable[dict[str, Any]]) -> list[dict[str, Any]]:
    """The chain of a draft (its plain text) under the question's plan (``HopPlan.to_dict``; none or a
    single-hop plan: no chain). A draft names its answer and often the bridge too ("Shirley Temple
    served as Chief of Protocol"), either way round: each name it adds to the question is tried as the
    answer, the others held as its bridge, and the best chain stands. A question that asks for a
    number or a date is answered by one ("The Androscoggin Bank Colisée can seat 1,400": 1,400)."""
    if not plan or plan.get("shape", "single") == "single" or not answer:
        return []
    hop_plan = HopPlan.from_dict(plan)
    if hop_plan.shape != "bridge":
        return evidence_chain(hop_plan, [], passages, answer=answer, question=question)
    asked = sorted(claims_of(question), key=len, reverse=True)
    claims = ([_past_question_names(c, asked) for c in new_claims(answer, question, kind)]
              or answer_claims(answer, question))
    named = [c for c in claims if not RE_NUMBER.fullmatch(c)]
    values = [c for c in claims if c not in named]
    tries = [values] if kind in ("numeric", "date") and values else [[c] for c in claims] or [[]]
    chains = [evidence_chain(hop_plan, t, passages, [c for c in named if c not in t]) for t in tries]
    return max(chains, key=lambda c: hops_found(c) or 0.0)


def _past_question_names(claim: str, asked: list[str]) -> str:
    """What a claim adds after a name the question states (``asked``, the longest first): a draft that runs
    the asked title into its answer ("the United States Vice President Nelson Rockefeller") claims "Nelson
    Rockefeller", which is what a page states."""
    for name in asked:
        if normalize_text(claim).startswith(normalize_text(name) + " "):
            return " ".join(claim.split()[len(name.split()):])
    return claim


def hop_line(hop: dict[str, Any], width: int = 160) -> str:
    """One hop as ``ask`` and the text trace print it: found with its source and quote, or what is missing."""
    head = f"hop {hop['hop']} ({hop['role']})"
    if not hop.get("found"):
        return f"{head} MISSING: {hop.get('missing', '')}"
    return f"{head} [{hop['n']}] {hop.get('page', '')}: {clip(hop.get('quote', ''), width)}  ({hop.get('claim', '')})"
