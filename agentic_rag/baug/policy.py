"""BAUG's decision: STOP, RETRIEVE_MORE, REFLECT or ABSTAIN, each with a reason code.

The policy is a pure function of the signals, the run's flags and the settings. Nothing the model
writes can change it: the draft enters only through the signals computed from it. Rules, in order:

0. question too long (MAX_QUESTION_CHARS)             -> ABSTAIN_QUESTION_TOO_LONG
   out of domain / an unknown option selected          -> ABSTAIN_OUT_OF_DOMAIN / ABSTAIN_INVALID_SELECTION
1. no evidence at all                                  -> ABSTAIN_NO_EVIDENCE
   evidence splits into clusters none of which wins    -> AMBIGUOUS_OPTIONS (status "ambiguous")
   the model could not be reached for a call the question needed (after retries, within its wall time)
                                                       -> ABSTAIN_LLM_UNAVAILABLE
   the confidence gate refused before generation       -> ABSTAIN_LOW_RETRIEVAL_SCORE / ABSTAIN_NO_SCORE_GAP
2. the model was asked and replied with nothing        -> ABSTAIN_EMPTY_ANSWER
   no draft and no budget for one                      -> ABSTAIN_LOW_BUDGET
   the draft hedges ("I think", "not mentioned")      -> ABSTAIN_HEDGING
3. supported (overlap, faith, relevance to the question) and sufficient (anchor coverage, type validator)
                                                       -> STOP_OVERLAP_OK
4. insufficient anchors, one-shot retrieval still available and affordable
                                                       -> RETRIEVE_MORE / RETRIEVE_MISSING_ANCHORS
   the answerability probe says the sources do not answer the question (and no retrieval round is
   left to find ones that do)                          -> ABSTAIN_NOT_ANSWERABLE
   the support verifier says the quoted sentences do not state the answer
                                                       -> ABSTAIN_NOT_VERIFIED
5. the extra round brought nothing new: a supported draft of a non-factoid question stops
   (STOP_NO_NEW_HITS); otherwise fall through to abstain
6. weakly supported draft worth revising, reflect unused and affordable
                                                       -> REFLECT / REFLECT_LOW_FAITH
7. budget exhausted while supported (non-factoid)      -> STOP_LOW_BUDGET
8. insufficient anchors                                -> ABSTAIN_MISSING_ANCHORS
9. otherwise                                           -> ABSTAIN_LOW_SUPPORT

An extension node (docs/extending.md) may ask for more through ``Flags.requests``: a request vetoes
a STOP (an answer about to be shown) and becomes RETRIEVE_<CODE> when it asks for more retrieval and
the extra round is still available, else ABSTAIN_<CODE>. Any other decision stands: a refusal keeps
its own reason, a retrieval or revision is checked again when it returns. The code is the
extension's; the policy stays a pure function of its inputs.
"""

from __future__ import annotations

from typing import Any

from agentic_rag.baug.chain import searchable
from agentic_rag.baug.decision import (  # noqa: F401  (Decision ... requested: their names are imported from here)
    GATE_REASONS,
    REASONS,
    Decision,
    Flags,
    can_retrieve_more,
    decided,
    requested,
)
from agentic_rag.baug.fitted import decide_fitted, decision_in_force
from agentic_rag.checks import (  # noqa: F401  (STOP ... ACTIONS: their names are imported from here)
    ABSTAIN,
    ACTIONS,
    CHECK_BY_SIGNAL,
    LAYER_CODES,
    REFLECT,
    RETRIEVE_MORE,
    STOP,
    SUPPORT_CHECKS,
    failed,
    passes,
)

FACTOID_KINDS = {"numeric", "date", "person", "award", "tournament", "time_window", "other"}


def decide(signals: dict[str, Any], flags: Flags, settings) -> Decision:
    decision = _by_rules(signals, flags, settings)
    if decision.action != STOP or not flags.requests:
        return decision
    # an abstention request outranks a retrieval request; among equals the first extension's
    request = min(flags.requests, key=lambda r: r["action"] != ABSTAIN)
    if request["action"] == RETRIEVE_MORE and can_retrieve_more(signals, flags, settings):
        return Decision(RETRIEVE_MORE, f"RETRIEVE_{request['code']}")
    return Decision(ABSTAIN, f"ABSTAIN_{request['code']}")


def failed_support(signals: dict[str, Any], settings) -> list[tuple[str, float, float]]:
    """(signal, value, threshold) of each support check (agentic_rag/checks.py) the draft fails, in registry
    order: what the policy abstains on, and what a LOW_SUPPORT refusal explains. A reading that was not
    taken (relevance without an embedder, entailment without NLI_MODEL) does not count against it."""
    return [(c.signal, signals[c.signal], c.threshold(settings)) for c in failed(SUPPORT_CHECKS, signals, settings)]


def unsupported(signals: dict[str, Any]) -> bool:
    """No sentence of the draft matched a cited source and none of its names or numbers occurs in one (both
    measured): whatever the other signals say, nothing the sources say backs it. The thresholds refuse
    such a draft by their support floors; a fitted decision, which weighs support against the reader,
    is not asked."""
    return all(signals.get(k) is not None and signals[k] == 0 for k in ("overlap_est", "faith_est"))


def _by_rules(signals: dict[str, Any], flags: Flags, settings) -> Decision:
    if flags.too_long:
        return decided("ABSTAIN_QUESTION_TOO_LONG")
    if flags.ood:
        return decided("ABSTAIN_OUT_OF_DOMAIN")
    if flags.ambiguity == "refuse":
        return decided("ABSTAIN_INVALID_SELECTION")
    if not flags.has_evidence:
        return decided("ABSTAIN_NO_EVIDENCE")
    if flags.ambiguity == "ambiguous":
        return decided("AMBIGUOUS_OPTIONS")
    if flags.llm_unavailable:  # whatever the draft, a check or revision it needed could not be made
        return decided("ABSTAIN_LLM_UNAVAILABLE")
    if flags.gate_reason and not flags.has_draft:
        return decided(GATE_REASONS[flags.gate_reason])
    if not flags.has_draft:
        return decided("ABSTAIN_EMPTY_ANSWER" if flags.empty_draft else "ABSTAIN_LOW_BUDGET")
    if flags.hedging and settings.baug.HEDGING_ENABLED:
        return decided("ABSTAIN_HEDGING")
    if not passes(CHECK_BY_SIGNAL["hops_found"], signals, settings):  # under any policy: a hop no page states
        search = searchable(signals.get("chain") or []) and can_retrieve_more(signals, flags, settings)
        return decided("RETRIEVE_MISSING_HOP" if search else "ABSTAIN_MISSING_HOP")
    fitted = decision_in_force(settings)
    if fitted is not None and unsupported(signals):  # a fitted P may outweigh support: nothing backs this draft
        return decided("ABSTAIN_LOW_SUPPORT")
    if fitted is not None:  # one fitted P(right) instead of the thresholds below
        return decide_fitted(signals, flags, settings, fitted)
    # verified_score is only present when every other check let the draft through (the final check)
    verified = passes(CHECK_BY_SIGNAL["verified_score"], signals, settings)
    answerable = passes(CHECK_BY_SIGNAL["answerability"], signals, settings)
    supported = answerable and verified and not failed(SUPPORT_CHECKS, signals, settings)
    sufficient = passes(CHECK_BY_SIGNAL["anchor_coverage"], signals, settings) and flags.validators_ok
    factoid = flags.kind in FACTOID_KINDS
    if supported and sufficient:
        return decided("STOP_OVERLAP_OK")
    if not sufficient and can_retrieve_more(signals, flags, settings):
        return decided("RETRIEVE_MISSING_ANCHORS")
    if not answerable:  # reflecting cannot help: the probe reads the sources and the question, not the draft
        return decided("ABSTAIN_NOT_ANSWERABLE")
    if not verified:  # a revision would rest on the same quotes the generator has just disowned
        return decided("ABSTAIN_NOT_VERIFIED")
    if flags.no_new_hits and supported and not factoid:
        return decided("STOP_NO_NEW_HITS")
    if (
        not supported
        and settings.baug.REFLECT_ENABLED
        and not flags.reflected
        and flags.can_generate
        and signals["overlap_est"] >= settings.baug.REFLECT_MIN_OVERLAP
    ):
        return decided("REFLECT_LOW_FAITH")
    if supported and not factoid and not flags.can_generate:
        return decided("STOP_LOW_BUDGET")
    if not sufficient:
        return decided("ABSTAIN_MISSING_ANCHORS")
    return decided("ABSTAIN_LOW_SUPPORT")
