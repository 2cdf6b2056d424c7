"""A refusal in words: for each reason code, what failed with its figures and threshold, and what is missing.

The wording sits in BAUG's room because every sentence reads what BAUG reads: the support rows, the
verifier's readings, the evidence chain, the anchors the sources lack. Each reason code of
``checks.REASON_LIST`` that ends in a refusal has one entry here (``EXPLANATIONS``, or for the refusals of
the question itself ``INPUT_EXPLANATIONS``; tests/baug/test_checks.py derives both from the list), and
``worded_refusal`` is all the answer record asks of it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Callable

from agentic_rag.anchors.matching import normalize_text
from agentic_rag.anchors.ner import STOP_WORDS, content_words
from agentic_rag.baug.chain import missing_hop, unconfirmed_hop
from agentic_rag.baug.policy import requested
from agentic_rag.baug.signals import supported_quotes
from agentic_rag.baug.verifier import combined_readings
from agentic_rag.checks import CHECK_BY_SIGNAL, LAYER_CODES, SUPPORT_CHECKS, failed, passes


def _list(items: list[str]) -> str:
    items = [f'"{i}"' for i in items]
    return items[0] if len(items) == 1 else ", ".join(items[:-1]) + " and " + items[-1]


_PIECE_WORD = re.compile(r"[^\W_]+")


def _filler(piece: str) -> bool:
    """Only stop words ("other", "between", "out", "more in the"); a word in capitals is an acronym ("US")."""
    words = _PIECE_WORD.findall(piece)
    return bool(words) and all(w.lower() in STOP_WORDS and not (w.isupper() and len(w) > 1) for w in words)


def _written(piece: str, context: str) -> bool:
    """Is ``piece`` in ``context`` as whole words (not the "d" of "wed" or the "g" of "g-league")?"""
    body = re.escape(normalize_text(piece).strip()).replace(r"\ ", r"\s+")
    return re.search(r"(?<![\w'-])" + body + r"(?![\w-])", normalize_text(context)) is not None


def _compound_of(piece: str, context: str) -> str:
    """The hyphenated word of ``context`` that ``piece`` is one part of ("debt-to-equity" for "equity")."""
    for m in re.finditer(r"[^\W_]+(?:-[^\W_]+)+", context):
        if piece.lower() in m.group(0).lower().split("-"):
            return m.group(0)
    return ""


def missing_pieces(items: list[str], context: str = "") -> list[str]:
    """What a refusal may name as missing: entity, period and unit pieces, never filler or fragments.

    Anchors, validator findings, question words the sources lack and unsupported claims all feed the
    list; any of them can carry a stop word, a piece of a word or a word doubled where two spans met.
    ``context`` is the text the pieces were taken from (question and draft): a piece not written there
    as whole words is a fragment (the "d" of "wed"; one part of a hyphenated word stands for the whole
    word), and a doubled word stays only if it is written so there ("la la land"). A piece of stop
    words only stays only when the context quotes it as a title ("now or never"). A piece whose words
    all occur in a longer kept piece ("keeper" beside "keeper bay") is said once.
    """
    out: list[str] = []
    seen: set[str] = set()
    for item in items:
        piece = " ".join(str(item).split()).strip(" ,;:")
        if not piece or not _PIECE_WORD.search(piece):
            continue
        if not context or not _written(piece, context):
            words = piece.split()
            said_once = " ".join(w for i, w in enumerate(words) if i == 0 or w.lower() != words[i - 1].lower())
            if not context or _written(said_once, context):
                piece = said_once
            elif whole := _compound_of(piece, context):
                piece = whole  # "point" of "3-point": the word as the question writes it
            else:
                continue  # a fragment: not in the question or draft as whole words
        if _filler(piece) and not (context and f'"{normalize_text(piece)}"' in normalize_text(context)):
            continue
        key = normalize_text(piece)
        if key not in seen:
            seen.add(key)
            out.append(piece)
    words = {p: {w.lower() for w in _PIECE_WORD.findall(p)} for p in out}
    content = {p: (w - STOP_WORDS) or w for p, w in words.items()}
    return [p for i, p in enumerate(out)
            if not any(content[p] < content[q] or (content[p] == content[q] and j < i) for j, q in enumerate(out))]


@dataclass(frozen=True)
class Refusal:
    """What a refusal's explanation reads (``explain_refusal``'s arguments, with the missing pieces found once)."""

    reason: str
    signals: dict[str, Any]
    validation: dict[str, Any]
    settings: Any
    confidence: dict[str, Any]
    llm_error: dict[str, Any]
    extension_error: dict[str, Any]
    question: str
    context: str  # question and draft: what a missing piece must be written in
    missing: list[str]  # anchors and validator findings, as missing_pieces keeps them


def explain_refusal(
    reason: str, signals: dict[str, Any], validation: dict[str, Any], settings, confidence: dict[str, Any] | None = None,
    requests: list[dict[str, Any]] | tuple = (),
    llm_error: dict[str, Any] | None = None,
    question: str = "", draft: str = "",
    extension_error: dict[str, Any] | None = None,
) -> tuple[str, list[str]]:
    """A sentence with the figures, and the information that would be needed (what is missing is
    checked against the ``question`` and ``draft`` it was taken from; see ``missing_pieces``).

    Every refusal code has its own wording (``EXPLANATIONS``); a code without one is an error, never
    another code's sentence."""
    context = f"{question}\n{draft}".strip()
    missing_anchors = missing_pieces((signals.get("missing_anchors") or []) + (validation.get("missing") or []), context)
    request = requested(reason, requests)
    if request is not None:  # an extension asked for this refusal: its words, its missing information
        return request["message"], list(request.get("missing") or []) or missing_anchors
    if reason not in EXPLANATIONS:
        raise KeyError(f"no explanation for refusal code {reason!r}: add one to baug/refusal.py EXPLANATIONS")
    return EXPLANATIONS[reason](Refusal(reason, signals, validation, settings, confidence or {}, llm_error or {},
                                        extension_error or {}, question, context, missing_anchors))


def _llm_unavailable(r: Refusal) -> tuple[str, list[str]]:
    e = r.llm_error
    attempts = e.get("attempts", 0)
    if e.get("down_since"):  # refused by the server's breaker: last_error says since when (llm/breaker.py)
        what = f"{e.get('last_error', '')}; this question was not sent to it"
    else:
        what = (f"could not be reached ({attempts} attempt{'s' if attempts != 1 else ''} in "
                f"{e.get('elapsed_s', 0.0):.1f} s; last error: {e.get('last_error', 'unknown')})")
    return (f"The language model at {e.get('url', 'the configured endpoint')} {what}, so no answer could be "
            "written or checked.", ["a reachable language model"])


def _extension_failed(r: Refusal) -> tuple[str, list[str]]:
    e = r.extension_error
    return (f"The extension {e.get('extension', '?')} failed ({e.get('error', 'unknown error')}), so the "
            "question was not answered.", [f"a working {e.get('extension', '?')} extension"])


def _retrieval_gate(r: Refusal) -> tuple[str, list[str]]:
    return f"{r.confidence.get('message', '')} A source that addresses the question directly is needed.".strip(), r.missing


def _low_budget(r: Refusal) -> tuple[str, list[str]]:
    b = r.settings.budget
    return (f"The per-question budget ({b.TOKEN_BUDGET} tokens, {b.MAX_LLM_CALLS} LLM calls, {b.WALL_TIME_S:.0f} s) "
            "ran out before an answer could be checked.", r.missing)


def _not_answerable(r: Refusal) -> tuple[str, list[str]]:
    unmatched = missing_pieces(content_words(r.signals.get("question_terms_unmatched") or [], r.question), r.context)
    check = CHECK_BY_SIGNAL["answerability"]
    text = f"The sources were read, but {check.sentence(r.signals.get('answerability', 0.0), r.settings)}, so the draft was withheld."
    if unmatched:
        text += f" The passage the draft relied on never mentions {_list(unmatched[:5])} from the question."
    text += " A source that states the answer to the question as asked is needed."
    return text, r.missing or unmatched[:5] or ["a source that answers the question as asked"]


def _not_verified(r: Refusal) -> tuple[str, list[str]]:
    signals, settings = r.signals, r.settings
    quoted = supported_quotes(signals.get("sentences", []))
    these = f"the sentence{'s' if len(quoted) > 1 else ''} it quoted"
    readings = {
        "support_verdict": f"asked whether {these} state{'' if len(quoted) > 1 else 's'} this answer, "
                           f"the generator itself gives {{:.0%}}",
        "answerability": "the answerability reader gives {:.0%} that the sources answer the question",
        "quote_answerability": f"the same probe on {these} alone gives {{:.0%}}",
    }
    shown = [readings[k].format(v) for k, v in combined_readings(signals, settings).items()]
    text = "; ".join(shown) or f"the final check gives {signals.get('verified_score', 0.0):.0%}"
    text = text[0].upper() + text[1:]
    if len(shown) > 1:
        text += f"; their mean is {signals.get('verified_score', 0.0):.0%}"
    text += f" (at least {CHECK_BY_SIGNAL['verified_score'].threshold(settings) * 100:g}% needed), so the draft was withheld."
    if quoted:
        text += f' It rested on: "{quoted[0][:200].rstrip(".")}".'
    text += " A source that states the answer to the question as asked is needed."
    return text, r.missing or ["a source that states the answer to the question as asked"]


def _missing_anchors(r: Refusal) -> tuple[str, list[str]]:
    """Names the sufficiency checks that failed: anchor coverage below a threshold that applies, and/or
    the type validator (a period or an award the supporting text must state). One that passed is not
    quoted as if it had failed ("anchor coverage 50%, needed 0%")."""
    signals, validation = r.signals, r.validation
    coverage = CHECK_BY_SIGNAL["anchor_coverage"]
    low_coverage = not passes(coverage, signals, r.settings)
    found_periods = validation.get("found_periods") or []
    conflicting = validation.get("conflicting_periods") or {}
    absent = [a for a in r.missing if a not in conflicting]
    required = [a for a in missing_pieces(validation.get("missing") or [], r.context) if a not in conflicting]
    failed_checks = [coverage.sentence(signals.get("anchor_coverage", 0.0), r.settings)] if low_coverage else []
    if required:
        failed_checks.append(f"the {validation.get('name') or 'period'} type validator requires {_list(required)}")
    parts = []
    if absent or not conflicting:
        part = "the cited sources do not mention " + (_list(absent) if absent else "what the question asks about")
        if found_periods and not conflicting:
            part += f"; they give {', '.join(found_periods[:4])} instead"
        parts.append(part + (f" ({'; '.join(failed_checks)})" if failed_checks else ""))
    parts += [f"the sentence the draft rests on is about {', '.join(years[:3])}, not {asked}"
              for asked, years in conflicting.items()]
    text = "; ".join(parts) + "."
    return text[0].upper() + text[1:] + _untrusted_note(signals), r.missing


def hop_account(chain: list[dict[str, Any]], question: str) -> tuple[str, str]:
    """Which hops of the chain a page states, and what a user would look for: the first hop none states,
    or, when every hop is stated and the answer is refused all the same, the hop left unconfirmed."""
    found = [f"hop {h['hop']} ({h['claim']}) is stated by source {h['n']}" for h in chain if h["found"] and h.get("claim")]
    missing = missing_hop(chain)
    if missing:
        return (f"The answer needs {len(chain)} steps and the sources state {sum(h['found'] for h in chain)} of them"
                + (f": {'; '.join(found)}" if found else "") + f". Missing: {missing}.", missing)
    unconfirmed = unconfirmed_hop(chain, question)
    return (f"The sources state all {len(chain)} steps of the answer" + (f": {'; '.join(found)}" if found else "")
            + f". Not confirmed: {unconfirmed}.", unconfirmed)


def _missing_hop(r: Refusal) -> tuple[str, list[str]]:
    text, missing = hop_account(r.signals.get("chain") or [], r.question)
    return text, [missing] if missing else r.missing


def _low_support(r: Refusal) -> tuple[str, list[str]]:
    unsupported = missing_pieces(r.signals.get("unsupported_claims") or [], r.context)
    text = low_support_text(r.signals, r.settings)
    if unsupported:
        text += f" Not found in the sources: {_list(unsupported[:5])}."
    return text + _untrusted_note(r.signals), r.missing or unsupported[:5]


def low_support_text(signals: dict[str, Any], settings) -> str:
    """The support checks the draft failed, each with its figure and threshold (the ones it passed
    would only mislead: a draft quoted word for word that answers another question fails on relevance)."""
    shown = [c.sentence(signals[c.signal], settings) for c in failed(SUPPORT_CHECKS, signals, settings)]
    return f"The draft answer was not supported by the sources{': ' + '; '.join(shown) if shown else ''}."


def _fixed(text: str) -> Callable[[Refusal], tuple[str, list[str]]]:
    return lambda r: (text, r.missing)


# each refusal code the policy can end in, with its wording (the input checks' and the ambiguity's
# refusals are worded from the state in build_record: INPUT_EXPLANATIONS)
EXPLANATIONS: dict[str, Callable[[Refusal], tuple[str, list[str]]]] = {
    "ABSTAIN_LLM_UNAVAILABLE": _llm_unavailable,
    "ABSTAIN_EXTENSION_FAILED": _extension_failed,
    "ABSTAIN_LOW_CONFIDENCE": _fixed("The model wrote this draft with low confidence in its own words (its token "
                                     "log-probabilities), so the fitted decision withholds it."),
    "ABSTAIN_EMPTY_ANSWER": _fixed("The generator was asked and replied with an empty text, so there is no answer "
                                   "to check or show."),
    "ABSTAIN_LOW_RETRIEVAL_SCORE": _retrieval_gate,
    "ABSTAIN_NO_SCORE_GAP": _retrieval_gate,
    "ABSTAIN_HEDGING": _fixed("The draft answer hedged or said the sources do not give it, so it is not presented "
                              "as an answer."),
    "ABSTAIN_NO_EVIDENCE": _fixed("No passage in the sources survived retrieval and pruning for this question; "
                                  "a source that discusses it is needed."),
    "ABSTAIN_LOW_BUDGET": _low_budget,
    "ABSTAIN_NOT_ANSWERABLE": _not_answerable,
    "ABSTAIN_NOT_VERIFIED": _not_verified,
    "ABSTAIN_MISSING_ANCHORS": _missing_anchors,
    "ABSTAIN_MISSING_HOP": _missing_hop,
    "ABSTAIN_LOW_SUPPORT": _low_support,
}


def _untrusted_note(signals: dict[str, Any]) -> str:
    """Why a source the draft may have leaned on counted for nothing."""
    untrusted = [str(u["n"]) for u in signals.get("untrusted_sources") or []]
    if not untrusted:
        return ""
    many = len(untrusted) > 1
    return (f" Source{'s' if many else ''} {', '.join(untrusted)} carr{'y' if many else 'ies'} text addressed to the "
            "model rather than the reader (an injection attempt) and back nothing.")


def _ambiguous(state: dict[str, Any]) -> str:
    ambiguity = state.get("ambiguity") or {}
    options = ambiguity.get("options", [])
    return (f"The evidence splits into {len(options)} distinct topics and no rule ({ambiguity.get('rule')}) picks one: "
            + "; ".join(f"{o['id']}: {o['signature']}" for o in options) + ". Choose one with --select OPTION_ID.")


def _invalid_selection(state: dict[str, Any]) -> str:
    ambiguity = state.get("ambiguity") or {}
    return (f"Invalid selection: {ambiguity.get('selected')}. Valid options: "
            + ", ".join(o["id"] for o in ambiguity.get("options", [])) + ".")


# the refusals of the question itself and the ambiguity's: worded from the state
INPUT_EXPLANATIONS: dict[str, Callable[[dict[str, Any]], str]] = {
    "AMBIGUOUS_OPTIONS": _ambiguous,
    "ABSTAIN_OUT_OF_DOMAIN": lambda state: f"The question is outside the configured domain: it {state.get('ood')}.",
    "ABSTAIN_QUESTION_TOO_LONG": lambda state: (f"The question was not read: it {state.get('too_long')}. "
                                                "Ask it in fewer words."),
    "ABSTAIN_INVALID_SELECTION": _invalid_selection,
}


def worded_refusal(state: dict[str, Any], decision: dict[str, Any], settings) -> tuple[str, list[str], str]:
    """(explanation, what is missing, abstention layer) of a refusal the graph decided: a fitted decision's
    own words where it gave them, else the reason code's. A multi-hop draft, refused on whatever reason,
    also says which hops the sources state and the one missing or, every hop stated, the one left
    unconfirmed (a refusal on the chain itself says so in its own words, unless a fitted decision worded it)."""
    signals = state.get("signals") or {}
    requests = (decision.get("flags") or {}).get("requests") or ()
    explanation, missing = explain_refusal(
        decision["reason"], signals, state.get("validation") or {}, settings, state.get("confidence") or {}, requests,
        state.get("llm_error"), question=state["question"], draft=state.get("draft", ""),
        extension_error=state.get("extension_error"),
    )
    worded = decision.get("explanation")
    explanation = worded or explanation
    if signals.get("chain") and (worded or decision["reason"] != CHECK_BY_SIGNAL["hops_found"].reason):
        account, hop = hop_account(signals["chain"], state["question"])
        explanation, missing = f"{explanation} {account}", [*missing, *([hop] if hop not in missing else [])]
    layer = LAYER_CODES.get(decision["reason"]) or ("extension" if requested(decision["reason"], requests) else "")
    return explanation, missing, layer
