"""The checks a question is judged by and the reason codes a decision ends in, each defined once.

Everything else reads these tables: the policy's support checks and its ``REASONS`` (baug/policy.py),
a refusal's sentence (baug/refusal.py), the trace's signal bars (trace/run.py), the telemetry's
signal fields (baug/node.py), the metrics' pre-generation refusals (eval/metrics.py) and the docs'
check table (``agentic-rag settings --markdown``, docs/configuration.md). Adding a check is one entry
in ``CHECKS`` (with its ``compute`` when the reading is new) and its setting (docs/extending.md).

A check passes when its reading reaches its setting (>=). A reading that was not taken (relevance
without an embedder, entailment without ``NLI_MODEL``, the final check before a draft is shown) counts
neither way, and a check whose ``switch`` is off does not apply: a refusal never names such a check,
and an answered question shows it as advisory, never as failed.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Mapping

from agentic_rag.telemetry import json_number

STOP, RETRIEVE_MORE, REFLECT, ABSTAIN = "STOP", "RETRIEVE_MORE", "REFLECT", "ABSTAIN"
ACTIONS = (STOP, RETRIEVE_MORE, REFLECT, ABSTAIN)

# where a check or a refusal is decided: before the generator is called, on the draft, or on a draft
# about to be shown (the final check's extra calls)
PRE_GENERATION, GATE, FINAL = "pre-generation", "gate", "final"
INPUT = "input"  # a refusal of the question itself, before anything is retrieved


@dataclass(frozen=True)
class Reason:
    """A reason code: the action it belongs to, when it happens (docs), the refusal layer a user sees
    (``AnswerRecord.abstention_layer``) and whether it is decided before any generation."""

    code: str
    action: str
    when: str
    layer: str = ""  # abstention layer; "" for answers, retrievals and revisions
    stage: str = ""  # INPUT or PRE_GENERATION when decided before any generation, else ""
    policy: bool = True  # returned by baug/policy.decide (False: the baseline's, or set by the extension runner)

    @property
    def pre_generation(self) -> bool:
        return self.stage in (INPUT, PRE_GENERATION)


REASON_LIST: tuple[Reason, ...] = (
    Reason("STOP_OVERLAP_OK", STOP, "the draft is supported (overlap, faithfulness, relevance) and sufficient "
           "(anchor coverage, type validators)"),
    Reason("STOP_NO_NEW_HITS", STOP, "the extra round brought nothing new and a supported draft of a non-factoid "
           "question stands"),
    Reason("STOP_LOW_BUDGET", STOP, "the budget ran out while a non-factoid draft was supported"),
    Reason("STOP_FITTED", STOP, "GATE_POLICY=fitted: the decision file's P(the answer is right) is above the cut "
           "WRONG_ANSWER_COST implies (baug/fitted.py)"),
    Reason("STOP_SINGLE_PASS", STOP, "the baseline (one retrieval, one answer, no checks)", policy=False),
    Reason("RETRIEVE_MISSING_ANCHORS", RETRIEVE_MORE, "anchors are missing from the evidence and one more round "
           "is affordable"),
    Reason("RETRIEVE_MISSING_HOP", RETRIEVE_MORE, "a hop of a multi-hop answer is stated by no page (`CHAIN_CHECK`) "
           "and one more round is affordable: a search for that hop, from what the hop before it found"),
    Reason("REFLECT_LOW_FAITH", REFLECT, "a weakly supported draft worth one revision"),
    Reason("ABSTAIN_QUESTION_TOO_LONG", ABSTAIN, "the question is longer than `MAX_QUESTION_CHARS`",
           "question_too_long", INPUT),
    Reason("ABSTAIN_OUT_OF_DOMAIN", ABSTAIN, "the out-of-domain patterns match (`OOD_DENY_PATTERNS`)",
           "out_of_domain", INPUT),
    Reason("ABSTAIN_INVALID_SELECTION", ABSTAIN, "`--select` names an option that does not exist",
           "invalid_selection", INPUT),
    Reason("AMBIGUOUS_OPTIONS", ABSTAIN, "the evidence splits into topics none of which wins (status `ambiguous`, "
           "with options)", "", PRE_GENERATION),
    Reason("ABSTAIN_NO_EVIDENCE", ABSTAIN, "nothing was retrieved, or every passage was pruned",
           "low_retrieval_score", PRE_GENERATION),
    Reason("ABSTAIN_LOW_RETRIEVAL_SCORE", ABSTAIN, "the confidence gate: the best retrieval score is under "
           "`RETRIEVAL_MIN_SCORE` (no LLM call)", "low_retrieval_score", PRE_GENERATION),
    Reason("ABSTAIN_NO_SCORE_GAP", ABSTAIN, "the confidence gate: top-1 is not `RETRIEVAL_MIN_RATIO` above top-2",
           "no_score_gap", PRE_GENERATION),
    Reason("ABSTAIN_LLM_UNAVAILABLE", ABSTAIN, "the model could not be reached after `LLM_RETRIES` within the "
           "question's `WALL_TIME_S`, or its server had stopped answering an earlier call (`LLM_BREAKER_COOLDOWN_S`)",
           "llm_unavailable"),
    Reason("ABSTAIN_EMPTY_ANSWER", ABSTAIN, "the model replied with an empty text", "empty_answer"),
    Reason("ABSTAIN_EXTENSION_FAILED", ABSTAIN, "an extension node raised or broke its declaration; the question "
           "goes straight to finalize (docs/extending.md)", "extension_failed", policy=False),
    Reason("ABSTAIN_LOW_BUDGET", ABSTAIN, "no draft, and no budget left for one", "budget"),
    Reason("ABSTAIN_LOW_CONFIDENCE", ABSTAIN, "GATE_POLICY=fitted: P(right) is below the cut and the draft's token "
           "log-probabilities pulled it down most", "not_grounded"),
    Reason("ABSTAIN_HEDGING", ABSTAIN, "the draft hedges (\"I think\", \"not mentioned\")", "hedging_detected"),
    Reason("ABSTAIN_NOT_ANSWERABLE", ABSTAIN, "the answerability probe reads the sources as not answering the "
           "question", "not_answerable"),
    Reason("ABSTAIN_NOT_VERIFIED", ABSTAIN, "the final check (verifier and/or quote probe) says the quoted "
           "sentences do not state the answer", "not_grounded"),
    Reason("ABSTAIN_MISSING_HOP", ABSTAIN, "a hop of a multi-hop answer is stated by no page (`CHAIN_CHECK`): the "
           "refusal names it", "not_grounded"),
    Reason("ABSTAIN_MISSING_ANCHORS", ABSTAIN, "entities, periods or units the question names are missing from "
           "the supporting text", "not_grounded"),
    Reason("ABSTAIN_LOW_SUPPORT", ABSTAIN, "anything else: the draft is not backed by the sources", "not_grounded"),
)
REASON_CODES: dict[str, Reason] = {r.code: r for r in REASON_LIST}
PRE_GENERATION_REFUSALS = frozenset(r.code for r in REASON_LIST if r.pre_generation)
INPUT_LAYERS = {r.code: r.layer for r in REASON_LIST if r.stage == INPUT}  # refused before the graph's work
# the refusal layer of every other refusal (ambiguity has none: its status says it)
LAYER_CODES = {r.code: r.layer for r in REASON_LIST if r.layer and r.stage != INPUT}
# the confidence gate's own reasons: its refusal code, and the sentence its message opens with
GATE_REASONS: dict[str, tuple[str, str]] = {
    "no_relevant_information": ("ABSTAIN_NO_EVIDENCE", "No relevant information was found in the documents."),
    "scores_too_low": ("ABSTAIN_LOW_RETRIEVAL_SCORE", "The retrieved information is not sufficiently relevant."),
    "no_clear_winner": ("ABSTAIN_NO_SCORE_GAP", "No clear best match among the retrieved results."),
}


# -- checks ---------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Draft:
    """What a computed check reads: the question, the draft's plain text and its kind."""

    question: str
    answer: str
    kind: str = "other"


@dataclass(frozen=True)
class Check:
    """One reading held to one setting: the reading must reach the setting (>=) for the draft to pass."""

    signal: str  # the reading's key in the signals (state.Signals) or the confidence gate's scores
    setting: str  # the setting it is judged by; the unit is the setting's (configuration.unit_of)
    reason: str  # the code a refusal carries when this check is what failed
    layer: str  # PRE_GENERATION, GATE or FINAL
    fails: str  # what a refusal says when it fails: formatted with (reading, threshold)
    computed_by: str  # where the reading comes from (docs)
    switch: str = ""  # the on/off setting the check applies under ("" = always)
    support: bool = False  # one of the support checks: any of them failing is ABSTAIN_LOW_SUPPORT
    compute: Callable[[Draft], float | None] | None = None  # a reading computed here (None: by computed_by)
    full: float = 1.0  # the reading a full bar shows in the trace (a share or a score: 1)

    def threshold(self, settings: Any) -> Any:
        return _setting(settings, self.setting)

    def applies(self, settings: Any) -> bool:
        return not self.switch or bool(_setting(settings, self.switch))

    def sentence(self, value: float, settings: Any) -> str:
        return self.fails.format(value, self.threshold(settings))


def _setting(settings: Any, name: str) -> Any:
    """A setting from a Settings object or from a run's flat settings dict (trace)."""
    return settings.get(name) if isinstance(settings, Mapping) else settings.value(name)


def answer_new_words(draft: Draft) -> float | None:
    """How many content words the answer adds to the question (compared by stem).

    An answer that only restates the question ("Where was Obama born?" -> "Obama was born.") passes
    attribution: every word it adds is backed by a source, because it adds none. A count, not a share:
    a long restatement that adds the one word asked for ("... is less than k.") answers the question. A
    question that offers the answer's options ("X or Y", a comparison) is answered by repeating one of
    them, so it is not read."""
    from agentic_rag.text import stem, tokenize

    words = tokenize(draft.answer)
    if not words or draft.kind in ("comparison", "yes_no") or " or " in f" {draft.question.lower()} ":
        return None
    asked = {stem(t) for t in tokenize(draft.question)}
    return float(len({stem(w) for w in words} - asked))


CHECKS: tuple[Check, ...] = (
    Check("overlap_est", "OVERLAP_MIN", "ABSTAIN_LOW_SUPPORT", GATE,
          "{:.0%} of its sentences matched a cited source (needed {:.0%})",
          "baug.signals.sentence_support: answer sentences backed by a source sentence",
          "GROUNDING_ENABLED", support=True),
    Check("faith_est", "FAITH_MIN", "ABSTAIN_LOW_SUPPORT", GATE,
          "{:.0%} of its names and numbers occur in them (needed {:.0%})",
          "baug.signals.collect_signals: the answer's new names and numbers found in the supporting text",
          "GROUNDING_ENABLED", support=True),
    Check("answer_relevance", "ANSWER_RELEVANCE_MIN", "ABSTAIN_LOW_SUPPORT", GATE,
          "its similarity to the question is {:.2f} (needed {:.2f}), so it does not answer the question as asked",
          "baug.signals.collect_signals: cosine of answer and question", "GROUNDING_ENABLED", support=True),
    Check("nli_entailment", "NLI_MIN", "ABSTAIN_LOW_SUPPORT", GATE,
          "the entailment model gives {:.0%} that the sources entail it (needed {:.0%})",
          "supervisor.cross_encoder.entailment_probability (only with NLI_MODEL)", "GROUNDING_ENABLED", support=True),
    Check("answer_new_words", "ANSWER_NEW_WORDS_MIN", "ABSTAIN_LOW_SUPPORT", GATE,
          "it adds {:.0f} words to the question (needed {:.0f}), so it restates the question instead of answering it",
          "checks.answer_new_words: the content words the answer adds to the question",
          "GROUNDING_ENABLED", support=True, compute=answer_new_words, full=5.0),
    Check("anchor_coverage", "COVERAGE_MIN", "ABSTAIN_MISSING_ANCHORS", GATE,
          "anchor coverage {:.0%}, needed {:.0%}",
          "anchors.matching.anchor_coverage: share of the selected anchors in the supporting text"),
    Check("hops_found", "HOPS_FOUND_MIN", "ABSTAIN_MISSING_HOP", GATE,
          "{:.0%} of the answer's hops are stated by a page (needed {:.0%})",
          "baug.chain.evidence_chain: the hops of a bridge or comparison answer that a sentence states", "CHAIN_CHECK"),
    Check("answerability", "ANSWERABILITY_MIN", "ABSTAIN_NOT_ANSWERABLE", GATE,
          "the answerability reader gives only {:.0%} that they answer this question (at least {:.0%} needed)",
          "reader.read: the probe on the answer prompt's state, from the generation call or the packaged reader",
          "GROUNDING_ENABLED"),
    Check("verified_score", "VERIFIER_MIN", "ABSTAIN_NOT_VERIFIED", FINAL,
          "the final check gives {:.0%} (at least {:.1%} needed)",
          "baug.verifier.verified_score: mean of the readings VERIFIER_COMBINE names", "GROUNDING_ENABLED"),
    Check("top_score", "RETRIEVAL_MIN_SCORE", "ABSTAIN_LOW_RETRIEVAL_SCORE", PRE_GENERATION,
          "the best retrieval score is {:.2f} (needed {:.2f})",
          "supervisor.confidence_gate.confidence_gate: the top passage's normalised score (tier 2)", "GATE_ENABLED"),
    Check("top_ratio", "RETRIEVAL_MIN_RATIO", "ABSTAIN_NO_SCORE_GAP", PRE_GENERATION,
          "the top passage scores {:.2f} times the second (needed {:.2f})",
          "supervisor.confidence_gate.confidence_gate: top-1 / top-2 score (tier 2)", "GATE_ENABLED", full=2.0),
    Check("top_relevance", "RELEVANCE_THRESHOLD", "ABSTAIN_LOW_RETRIEVAL_SCORE", PRE_GENERATION,
          "the best passage's relevance is {:.1f} of 3 (needed {:.1f})",
          "supervisor.confidence_gate.confidence_gate: the grader's 0-3 grade of the top passage (tier 1)", "GATE_ENABLED",
          full=3.0),
)
CHECK_BY_SIGNAL: dict[str, Check] = {c.signal: c for c in CHECKS}
DRAFT_CHECKS = tuple(c for c in CHECKS if c.layer != PRE_GENERATION)  # read from a draft's signals
PRE_GENERATION_CHECKS = tuple(c for c in CHECKS if c.layer == PRE_GENERATION)  # the confidence gate's, in order
SUPPORT_CHECKS = tuple(c for c in CHECKS if c.support)
COMPUTED_CHECKS = tuple(c for c in CHECKS if c.compute is not None)


def gate_readings(scores: list[float], tier: str) -> dict[str, float | None]:
    """The confidence gate's readings of its sorted scores, by its checks' signals: the tier-1 grade, or
    the tier-2 top score and top-1 / top-2 ratio (not read without a positive second score)."""
    if tier == "reranker":
        return {"top_relevance": scores[0]}
    return {"top_score": scores[0], "top_ratio": scores[0] / scores[1] if len(scores) >= 2 and scores[1] > 0 else None}


def reading(signals: Mapping[str, Any], check: Check) -> float | None:
    """The check's reading, or None when it was not taken (a bool is no reading)."""
    return json_number(signals.get(check.signal))


def passes(check: Check, signals: Mapping[str, Any], settings: Any) -> bool:
    """Whether the check lets the draft through: passed, not read, or not applying."""
    value = reading(signals, check)
    return value is None or not check.applies(settings) or value >= check.threshold(settings)


def failed(checks: tuple[Check, ...], signals: Mapping[str, Any], settings: Any) -> list[Check]:
    """The checks, of ``checks``, whose reading is below a threshold that applies."""
    return [c for c in checks if not passes(c, signals, settings)]


def computed_readings(draft: Draft) -> dict[str, float | None]:
    """The readings the registry computes itself (``Check.compute``), taken on every draft."""
    return {c.signal: c.compute(draft) for c in COMPUTED_CHECKS}


def checks_markdown(units: Mapping[str, str]) -> str:
    """The docs' check table (docs/configuration.md): ``units`` maps each setting to its unit."""
    rows = ["| check | computed by | setting (>=) | unit | layer | on when | refusal code | a refusal says |",
            "|---|---|---|---|---|---|---|---|"]
    for c in CHECKS:
        says = c.fails.replace("{:.0%}", "N%").replace("{:.1%}", "N%").replace("{:.2f}", "x").replace("{:.1f}", "x").replace("{:.0f}", "N")
        rows.append(f"| `{c.signal}` | {c.computed_by} | `{c.setting}` | {units.get(c.setting, '')} | {c.layer} | "
                    f"{f'`{c.switch}`' if c.switch else 'always'} | `{c.reason}` | {says} |")
    return "\n".join(rows)


def reasons_markdown() -> str:
    """The docs' reason-code table (docs/how-it-works.md)."""
    rows = ["| code | action | when | refusal layer |", "|---|---|---|---|"]
    for r in REASON_LIST:
        layer = INPUT if r.stage == INPUT else f"`{r.layer}`" if r.layer else "ambiguity" if r.action == ABSTAIN else ""
        rows.append(f"| `{r.code}` | {r.action} | {r.when} | {layer}".rstrip() + " |")
    return "\n".join(rows)
