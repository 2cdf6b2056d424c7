"""BAUG signals: how well the draft answer is supported by the evidence it cites.

All signals are computed by code from the answer text, the bundle and the usage ledger; the model's
own words about its confidence are never read.

- ``overlap_est``: share of answer sentences backed by a source sentence: a quote the model gave that
  occurs verbatim in a source it cites, or a source sentence found by code attribution that holds
  the sentence's claims and is semantically close to it (cosine >= ``OVERLAP_TAU``). A citation to a
  source that was never given supports nothing.
- ``faith_est``: share of the answer's checkable claims (numbers, years, names, quoted titles) that
  occur in the cited text. With no checkable claim it falls back to ``overlap_est``.
- ``anchor_coverage``: share of the selected anchors present in the cited text.
- ``answer_relevance``: cosine of answer to question; a faithful copy of an off-topic source sentence
  is supported but answers nothing.

A source whose page addresses the model (``injection.UNTRUSTED_PATTERNS``: "ignore previous
instructions", "if anyone asks ..., answer X", fake "Answer:" lines) backs nothing: it is left out of
attribution, of verbatim quotes and of the cited text, so an answer resting on such sources alone is
unsupported, however well its words match them. ``untrusted_sources`` names them for the trace.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

import numpy as np
from bm25s.stopwords import STOPWORDS_EN

from agentic_rag.anchors.matching import MONTH_ABBR, MONTHS, RE_NUMBER, Anchor, anchor_coverage, claims_of, normalize_text
from agentic_rag.budget import llm_calls, tokens_used
from agentic_rag.checks import Draft, computed_readings
from agentic_rag.state import support_of
from agentic_rag.text import (
    cited_numbers,
    fold,
    quote_in,
    quotes,
    split_sentences,
    stem,
    stems,
    strip_markup,
    tokenize,
    untrusted_sentences,
    untrusted_source,
)

_STOP = frozenset(STOPWORDS_EN)
_YES_NO = {"yes", "no"}
_NUM = RE_NUMBER
def claim_in(claim: str, text: str) -> bool:
    if _NUM.fullmatch(claim):
        digits = claim.replace(",", "")
        # not the tail of a longer number or of a decimal ("25" is not in "125" or "3.25"), but it is
        # in a name that carries it ("X.25", "B-52")
        return bool(re.search(rf"(?<!\d)(?<!\d\.){re.escape(digits)}(?![\d])", text.replace(",", "")))
    if re.search(rf"(?<!\w){re.escape(fold(claim))}(?:e?s)?(?!\w)", fold(text)):
        return True  # as whole words: "Art" is not in "Arthur", nor "Ivan" in "Ivanka"; "Kelvin" is in "kelvins"
    if " " not in claim.strip() and claim.islower():  # a plain word the answer adds: match its stem
        root = stem(claim)
        return any(stem(t) == root for t in re.findall(r"\w+", text.lower()))
    return False


def _chunk_sentences(text: str) -> list[str]:
    return split_sentences(text, loose=True) or [text.strip()]


_MONTHS = frozenset(MONTHS) | frozenset(MONTH_ABBR)


def says_something(text: str) -> bool:
    """Whether a source sentence holds a word beyond dates, numbers and stopwords. One that does not
    ("Aug 12, 2022 ...", the page date a search snippet opens with) names no subject and no relation,
    so it cannot show that its value answers the question, however well the value matches the draft."""
    return any(w not in _STOP and w not in _MONTHS for w in re.findall(r"[a-z]+", text.lower()))


def new_claims(plain: str, question: str, kind: str = "other") -> list[str]:
    """Claims the answer adds. Names and numbers echoed from the question are its premise, not the
    answer's claim, except in a comparison, where naming one of the asked-about options *is* the answer."""
    claims = claims_of(plain)
    if kind == "comparison":
        return claims
    return [c for c in claims if not claim_in(c, question)]


def support_window(quote: str, passage_text: str, content_only: bool = False) -> str:
    """The supporting sentence with its neighbours in the passage: where a period must be stated.

    A year elsewhere in a long chunk does not scope the claim; one in the same or an adjacent
    sentence does ("The 2018 final ... Kerber beat Williams"). With ``content_only`` a neighbour that
    is only a date ("Aug 27, 2019 ...", the page date a search snippet opens with) is left out: it
    says when the page was written, not which season the claim is about."""
    sents = _chunk_sentences(passage_text)
    folded = fold(quote)
    # a sentence holds the quote, or is one of the quote's whole sentences: a one-word heading
    # ("Springfield") is a substring of a quote naming the city, not a sentence of it
    whole = {fold(q).strip(" .,;:") for q in _chunk_sentences(quote)}
    for i, s in enumerate(sents):
        if folded and (folded in fold(s) or fold(s).strip(" .,;:") in whole):
            return " ".join(n for n in sents[max(0, i - 1) : i + 2] if n is s or not content_only or says_something(n))
    return quote


def key_tokens(plain: str, question: str) -> list[str]:
    """What an answer adds to the question: its content words that the question does not contain.

    Compared by stem: "turns" answering "what does water turn into" echoes the question, it is not a
    claim the source must hold (the source may say "transforms")."""
    asked = {stem(t) for t in tokenize(question)}
    return [t for t in dict.fromkeys(tokenize(plain)) if stem(t) not in asked]


STATED_WORD_MIN_CHARS = 5  # letters from which a content word of the answer must be in a quote that states it


def unstated(plain: str, quote: str, question: str, kind: str = "other") -> list[str]:
    """What a quote leaves unsaid of an answer sentence: the names and numbers the sentence adds to the
    question and its longer content words (by stem) that the quote lacks. "ancient Greek" is not stated by
    "... writings from the Greek and Roman era"; a sentence that only echoes the question (a yes/no
    answer) needs the question's own names and numbers in the quote."""
    claims = new_claims(plain, question, kind)
    # words shorter than STATED_WORD_MIN_CHARS are mostly verbs a source puts in another form (came, won, made)
    # a relative "which" or "whose" joins the two halves of a bridge answer: no content a quote must hold
    words = [t for t in key_tokens(plain, question)
             if t not in _YES_NO and t not in _ASKING and len(t) >= STATED_WORD_MIN_CHARS]
    if not claims and not words:
        claims = claims_of(plain) or claims_of(question)
    present = stems(quote)
    return [c for c in claims if not claim_in(c, quote)] + [t for t in words if stem(t) not in present]


def states_answer(plain: str, quote: str, question: str, kind: str = "other") -> bool:
    """Whether a quote states what an answer sentence says, not only shares its topic (``unstated``)."""
    return bool(quote) and not unstated(plain, quote, question, kind)


# words that say what is asked, not what it is about: never "missing" from a passage
_ASKING = {"what", "which", "who", "whom", "whose", "when", "where", "why", "how", "many", "much", "year", "do", "does", "did",
           "date", "name", "number", "kind", "type"}


def supported_quotes(sentences: list[dict[str, Any]]) -> list[str]:
    """The source sentences that back the draft's supported sentences, in draft order: what the
    draft rests on (period checks, relevance, the verifier and its refusal all read these)."""
    return [q for r in sentences if r.get("supported") for _, q in support_of(r)]


def unmatched_question_terms(question: str, text: str) -> list[str]:
    """The question's content words (stemmed) that ``text`` never uses: what a refusal can name as
    missing when the sources look on topic but do not answer the question as asked."""
    present = stems(text)
    return [t for t in dict.fromkeys(tokenize(question)) if t not in _ASKING and stem(t) not in present]


def _attributed(plain: str, question: str, kind: str, needed: list[str], pool: list[tuple[int, str]], vectors,
                have_embedder: bool) -> dict[str, Any]:
    """The source sentence (or passage) that best holds the sentence's claims, then closest in meaning;
    when it holds only some of them, the one other sentence that holds the rest (the bridge of a
    multi-hop answer: "X is an offshoot of Y" + "Y is the 136th largest charity")."""
    probe = plain if len(plain.split()) >= 6 else f"{question} {plain}".strip()
    vecs = vectors([probe] + [t for _, t in pool])
    sims = vecs[1:] @ vecs[0] if have_embedder else np.zeros(len(pool))

    def holds(text: str, claims: list[str]) -> int:
        return sum(claim_in(c, text) for c in claims)

    best_i, best_key = 0, (-1.0, -1.0)
    for i, (n, text) in enumerate(pool):
        key = (holds(text, needed) / len(needed) if needed else 1.0, float(sims[i]))
        if key > best_key:
            best_i, best_key = i, key
    n, text = pool[best_i]
    found, sim = best_key
    passage = _chunk_sentences(text)
    if len(passage) > 1:  # a passage won: quote its sentence holding most claims
        text = max(passage, key=lambda t: holds(t, needed))
    out = {"n": n, "quote": text, "mode": "attributed", "claims_found": round(found, 4), "similarity": round(sim, 4)}
    rest = unstated(plain, text, question, kind)
    if not rest:
        return out
    # the rest in the same passage (it won as a whole) or in any single sentence of the pool
    partners = [(n, t) for t in passage if t != text] if len(passage) > 1 else [
        (m, t) for m, t in pool if len(_chunk_sentences(t)) == 1 and t != text]
    gains = [(len(rest) - len(unstated(plain, f"{text} {t}", question, kind)), m, t) for m, t in partners]
    gain, m, other = max(gains, key=lambda g: g[0], default=(0, None, ""))
    if gain <= 0:
        return out
    joined = f"{text} {other}"
    if len(passage) <= 1:  # two sentences of the pool: their claims and closeness are the pair's
        found = holds(joined, needed) / len(needed) if needed else 1.0
        pair = vectors([probe, joined])
        sim = float(pair[1] @ pair[0]) if have_embedder else 0.0
    return {**out, "mode": "bridge", "bridge": {"n": m, "quote": other}, "claims_found": round(found, 4),
            "similarity": round(sim, 4)}


def sentence_support(
    answer: str, bundle: dict[str, Any], embedder, tau: float, question: str = "", kind: str = "other",
    min_claims: float = 1.0,
) -> tuple[list[dict[str, Any]], str]:
    """Per answer sentence: its supporting source sentence; and the text of the chunks that back it.

    The returned text (what anchor coverage and the validators read) is only the chunks that support
    some sentence, not every chunk the model named: a year mentioned in a cited but unused chunk
    must not vouch for an answer about another year.

    A sentence is supported when (a) a quote it gives occurs verbatim in a source it cites, or (b)
    code attribution finds a source sentence (or, for a list spread over several sentences, a source
    passage) that holds its new claims (numbers and names it adds to the question; for plain words,
    the words it adds; at least ``min_claims`` of them, the rest are left to faithfulness) and is
    semantically close to it (cosine >= ``tau``; short answers are compared together with the
    question they answer). Attribution looks in the sources the model cited, or in the whole bundle
    when it cited none. Either way the quote shown to the user is exact source text, so a citation
    can always be checked, and it must say something besides a date or a number (``says_something``).
    """
    passages = bundle.get("passages", [])
    by_n = {p["n"]: p for p in passages}
    all_cited = [n for n in cited_numbers(answer) if n in by_n]
    # candidate supports: every source sentence, and every whole passage (for multi-sentence lists)
    untrusted = {p["n"] for p in passages if untrusted_source(p)}
    sents_of = {p["n"]: [s for s in _chunk_sentences(p["text"]) if says_something(s)]
                for p in passages if p["n"] not in untrusted}
    source_sents = [(n, sent) for n, sents in sents_of.items() for sent in sents]
    source_sents += [(n, " ".join(sents)) for n, sents in sents_of.items() if len(sents) > 1]

    def vectors(texts: list[str]) -> np.ndarray:
        return embedder.embed_each(texts) if texts and embedder is not None else np.zeros((len(texts), 1))

    rows = []
    relied: list[int] = []
    texts = [p["text"] for p in passages]
    for sent in split_sentences(answer):
        plain = strip_markup(sent, texts)
        if not plain or not re.search(r"\w", plain):
            continue
        own = [n for n in cited_numbers(sent) if n in by_n]
        nums = own or all_cited  # the small model often cites once, at the end
        needed = new_claims(plain, question, kind) or [t for t in key_tokens(plain, question) if t not in _YES_NO]
        row: dict[str, Any] = {"sentence": plain, "model_cites": nums, "n": None, "quote": "", "mode": "none",
                               "similarity": 0.0, "claims_found": 0.0, "supported": False}
        for q in quotes(sent):
            hit = next((n for n in nums if n not in untrusted and quote_in(q, by_n[n]["text"])), None)
            if hit is not None and says_something(q) and all(claim_in(c, q) for c in needed):
                row.update(n=hit, quote=q, mode="model_quote", claims_found=1.0, similarity=1.0, supported=True)
                break
        if not row["supported"]:
            pool = [(n, t) for n, t in source_sents if n in nums] if nums else source_sents
            if pool:
                row.update(_attributed(plain, question, kind, needed, pool, vectors, embedder is not None))
                row["supported"] = row["claims_found"] >= min_claims and row["similarity"] >= tau
        row["states_answer"] = states_answer(plain, " ".join(q for _, q in support_of(row)), question, kind)
        rows.append(row)
        if row["supported"]:
            relied.extend(n for n, _ in support_of(row))
    if not relied:  # nothing backs the answer: judge it against what it cited, or the best attempt
        relied = [n for r in rows for n in (r["model_cites"] or ([r["n"]] if r["n"] is not None else []))]
    cited = [by_n[n] for n in dict.fromkeys(relied) if n not in untrusted]
    return rows, cited


def passages_text(passages: list[dict[str, Any]]) -> str:
    """Passages as the anchor checks read them: each page's name, then its text."""
    return "\n".join(f"{p.get('page_name', '')}\n{p['text']}" for p in passages)


_DISAMBIGUATION = re.compile(r"\s*\([^()]*\)\s*$")  # "Winner (band)", "Normans (paragraph 3)"


def _title(passage: dict[str, Any]) -> str:
    return normalize_text(_DISAMBIGUATION.sub("", passage.get("page_name") or ""))


def _names(name: str, normalized: str) -> bool:
    """Whether ``normalized`` (``normalize_text`` of a text) names ``name`` (a title, normalized) as whole words."""
    return len(name) >= 3 and re.search(rf"(?<!\w){re.escape(name)}(?!\w)", normalized) is not None


def bridge_passages(question: str, cited: list[dict[str, Any]], passages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The pages of the evidence about the bridge entity of a multi-hop question.

    A bridge question ("Who wrote the song of the singer who died in 2007?") describes its bridge
    entity on one page and asks about it on another; a small model cites the second only, and the
    period or name that describes the bridge is then missing from what it cites. A page is a bridge
    when a cited passage names its subject (its title, a name the question does not use), or when it
    names the subject of a cited page (a name the question does not use) and the cited passages do not
    name its own: then what the cited passages say about the page's subject, in another year or
    another place, cannot be what the question describes. Other chunks of a cited page or article
    (the same title) are not bridges, nor is a page a cited passage speaks of under a name the question
    uses ("the 2018 Maxwell Award", cited for "the 2019 Maxwell Award")."""
    asked = normalize_text(question)
    said = [normalize_text(c["text"]) for c in cited]
    own, cited_ns = {_title(p) for p in cited}, {p["n"] for p in cited}
    links = [t for t in own if t and not _names(t, asked)]
    out = []
    for p in passages:
        title = _title(p)
        if p["n"] in cited_ns or not title or title in own or untrusted_source(p):
            continue
        spoken_of = any(_names(title, c) for c in said)
        if spoken_of and not _names(title, asked) or (
            not spoken_of and any(_names(t, normalize_text(p["text"])) for t in links)
        ):
            out.append(p)
    return out


def hop_names(claims: list[str], cited_text: str) -> list[str]:
    """The names the draft adds to the question that its cited passages state: the entity its answer
    rests on. When the question's description of that entity (a year, a place) is missing from the
    cited text, its own page is the next hop: a further retrieval round searches for these names with
    the missing anchors ("Lee Hazlewood 2007", not "2007" alone)."""
    if not cited_text:
        return []
    return [c for c in claims if not _NUM.fullmatch(c) and claim_in(c, cited_text)]


def untrusted_sources(bundle: dict[str, Any]) -> list[dict[str, Any]]:
    """The sources in the bundle whose page addresses the model, with the first such sentences of the
    passage itself: what a trace shows of an injection attempt (these sources already back nothing)."""
    out = []
    for p in bundle.get("passages", []):
        if untrusted_source(p):
            found = untrusted_sentences(p["text"])
            out.append({"n": p["n"], "chunk_id": p.get("chunk_id", ""), "page_url": p.get("page_url", ""),
                        "page_untrusted": max(p.get("page_untrusted", 0), len(found)), "sentences": [s[:200] for s in found[:3]]})
    return out


@dataclass(frozen=True)
class DraftReading:
    """What reading a draft against its bundle yields: the signals (what the policy, the trace and the
    record see) and the two texts the later checks read (the type validator, the verifier, NLI)."""

    signals: dict[str, Any]
    cited_text: str  # the chunks the draft rests on
    support_windows: str  # the supporting sentences with their neighbours (PERIOD_SCOPE)
    bridge_text: str = ""  # what linked pages say of the entities the cited passages name (bridge_passages)


def collect_signals(*args: Any, **kwargs: Any) -> dict[str, Any]:
    """The signals alone (the baseline's measured figures, tests); BAUG reads the whole ``read_draft``,
    which takes the same arguments."""
    return read_draft(*args, **kwargs).signals


def read_draft(
    question: str,
    answer: str,
    bundle: dict[str, Any],
    anchors: list[Anchor],
    usage: dict[str, Any],
    settings,
    embedder,
    new_hits_ratio: float = 1.0,
    rounds: int = 1,
    stagnation: bool = False,
    kind: str = "other",
) -> DraftReading:
    rows, cited = sentence_support(
        answer, bundle, embedder, settings.baug.OVERLAP_TAU, question, kind, settings.baug.ATTRIBUTION_MIN_CLAIMS
    )
    cited_text = passages_text(cited)
    bridges = bridge_passages(question, cited, bundle.get("passages", [])) if any(r["supported"] for r in rows) else []
    bridge_text = passages_text(bridges)
    by_n = {p["n"]: p for p in bundle.get("passages", [])}
    scope = settings.baug.PERIOD_SCOPE  # where a period the question names must be stated (see Settings)
    windows = "\n".join(dict.fromkeys(
        q if scope == "sentence" else support_window(q, by_n[n]["text"], scope == "content")
        for r in rows if r["supported"] for n, q in support_of(r) if n in by_n
    ))
    overlap = sum(r["supported"] for r in rows) / len(rows) if rows else 0.0
    plain = strip_markup(answer, [p["text"] for p in bundle.get("passages", [])])
    claims = new_claims(plain, question, kind)
    if claims and cited_text:
        found = [c for c in claims if claim_in(c, cited_text)]
        faith = len(found) / len(claims)
        unsupported_claims = [c for c in claims if c not in found]
    else:
        faith = overlap if not claims else 0.0
        unsupported_claims = claims
    # an anchor that describes a bridge entity may be stated on the bridge's page, not the cited one
    coverage, missing = anchor_coverage(anchors, f"{cited_text}\n{bridge_text}") if anchors else (1.0, [])
    relevance = 0.0
    if plain and embedder is not None:
        # a terse answer ("Finding Nemo.") is judged together with the source sentence behind it
        quotes_used = " ".join(supported_quotes(rows))
        probe = plain if len(plain.split()) >= 6 or not quotes_used else f"{plain} {quotes_used}"
        qa = embedder.embed_each([question, probe])
        relevance = float(qa[0] @ qa[1])
    used = tokens_used(usage)
    calls = llm_calls(usage)
    signals = {
        "overlap_est": round(overlap, 4),
        "faith_est": round(faith, 4),
        "anchor_coverage": round(coverage, 4) if cited_text else 0.0,
        "answer_relevance": round(relevance, 4),
        "missing_anchors": [a.text for a in missing] if cited_text else [a.text for a in anchors],
        "new_hits_ratio": round(new_hits_ratio, 4),
        "tokens_used": used,
        "tokens_left": settings.budget.TOKEN_BUDGET - used,
        "llm_calls": calls,
        "rounds": rounds,
        "stagnation": stagnation,
        "sentences": rows,
        "claims": claims,
        "unsupported_claims": unsupported_claims,
        "question_terms_unmatched": unmatched_question_terms(question, windows or cited_text) if answer else [],
        "untrusted_sources": untrusted_sources(bundle),
        "bridge_sources": [p["n"] for p in bridges],
        "hop_names": hop_names(claims, cited_text),
        "cited_text_chars": len(cited_text),
        # the registry's own readings (agentic_rag/checks.py Check.compute): a new check needs no code here
        **(computed_readings(Draft(question, plain, kind)) if plain else {}),
    }
    return DraftReading(signals, cited_text, windows, bridge_text)
