"""The fitted decision (``GATE_POLICY=fitted``): one calibrated P(the draft is right | signals) instead
of a dozen hand-set cut-offs.

Why: the thresholds were chosen for one model on one backend; a served model, another size or a
backend without the probe needs other ones, and each was a separate sweep. ``agentic-rag train
decision`` runs the agent once on a development split and fits this probability for the model at hand
(training/decision.py); this module reads the decision file it writes and applies it:

* P > cut + ``GREY_ZONE_WIDTH``: STOP (``STOP_FITTED``). The cut is what the scoring rule implies: with
  +1 for a right answer, 0 for a refusal and -``WRONG_ANSWER_COST`` for a wrong one, answering pays
  when P > cost / (1 + cost) (CRAG's +1/0/-1: P > 0.5).
* P < cut - ``GREY_ZONE_WIDTH``: ABSTAIN, with the reason code and wording of the signal that pulled P
  down most (the largest negative contribution against the development split's mean draft).
* in between (the grey zone): retrieve more for missing anchors or reflect, while the budget allows;
  then the support verifier, whose P(yes) enters the decision file's second model. The verifier runs
  only here, and only where that model weighs its verdict: where it can change the decision.

A decision file belongs to one model and one feature set, as a probe does: it records the model's
identity (the GGUF SHA-256 of a packaged model, the folder's source key, or the served model's name)
and the signals it reads; another model, or a backend that cannot give one of those signals, is
refused with a one-line ``DecisionMismatchError``.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any

from agentic_rag.baug.decision import Decision, Flags, can_retrieve_more
from agentic_rag.checks import ABSTAIN, REFLECT, RETRIEVE_MORE, STOP
from agentic_rag.llm.logprobs import LOGPROB_SIGNALS
from agentic_rag.telemetry import json_number, parse_json

DECISION_FORMAT = "agentic-rag decision 1"
DECISIONS_DIR = Path(__file__).resolve().parents[1] / "data" / "decisions"
# a shipped decision a refit replaced, named <name>.<first 12 hex of its SHA-256>.json: committed runs read it
PREVIOUS_DECISIONS_DIR = DECISIONS_DIR / "previous"
VERIFIER_FEATURE = "support_verdict"

# Every signal a decision may read, with the refusal it stands for when it pulls P down most: the
# reason code, and how the refusal says it (the value is formatted in).
FEATURE_REASONS: dict[str, tuple[str, str]] = {
    "overlap_est": ("ABSTAIN_LOW_SUPPORT", "only {:.0%} of its sentences matched a cited source"),
    "faith_est": ("ABSTAIN_LOW_SUPPORT", "only {:.0%} of its names and numbers occur in the cited sources"),
    "answer_relevance": ("ABSTAIN_LOW_SUPPORT", "its similarity to the question is only {:.2f}"),
    "nli_entailment": ("ABSTAIN_LOW_SUPPORT", "the entailment model gives only {:.0%} that the sources entail it"),
    "anchor_coverage": ("ABSTAIN_MISSING_ANCHORS", "the cited sources hold only {:.0%} of what the question names"),
    "answerability": ("ABSTAIN_NOT_ANSWERABLE", "the answerability reader gives only {:.0%} that the sources answer the question"),
    "lp_mean": ("ABSTAIN_LOW_CONFIDENCE", "the model wrote it with a mean token log-probability of {:.2f}"),
    "lp_min": ("ABSTAIN_LOW_CONFIDENCE", "its least likely word had a log-probability of {:.2f}"),
    "p_first": ("ABSTAIN_LOW_CONFIDENCE", "the model gave its first word a probability of only {:.0%}"),
    VERIFIER_FEATURE: ("ABSTAIN_NOT_VERIFIED", "asked whether the quoted sentences state it, the model itself gives {:.0%}"),
    "hops_found": ("ABSTAIN_MISSING_HOP", "the sources state only {:.0%} of the steps its answer needs"),
}
# what a signal that has no reading on a draft means, where that is known rather than unmeasured: a
# one-passage question has no chain, so its draft misses no hop (the fit can then read the chain on
# every draft, not only where one was planned)
ABSENT_MEANS: dict[str, float] = {"hops_found": 1.0}
CANDIDATE_FEATURES = tuple(k for k in FEATURE_REASONS if k != VERIFIER_FEATURE)
FITTED_REASONS = ("STOP_FITTED", "ABSTAIN_LOW_CONFIDENCE")  # codes only the fitted policy gives


def feature_value(signals: dict[str, Any], key: str) -> float | None:
    """A draft's reading of one feature, as the fit and the decision read it (None: not measured)."""
    value = signals.get(key)
    return float(value) if value is not None else ABSENT_MEANS.get(key)


class DecisionMismatchError(ValueError):
    """The decision file was fitted for another model or for signals this backend cannot give."""


def cut_for(wrong_answer_cost: float) -> float:
    """The P(right) above which answering has a positive expected score: p - (1 - p) * cost > 0."""
    return wrong_answer_cost / (1.0 + wrong_answer_cost)


@dataclass
class FittedModel:
    """P(right | features), stored without pickles: a standardised logistic regression, or gradient-
    boosted regression trees (arrays of each tree's nodes). ``reference`` is the development split's mean
    of each feature: what a missing signal reads as, and what a contribution is measured against."""

    kind: str  # "logistic" or "boosting"
    features: list[str]
    reference: list[float]
    params: dict[str, Any]

    def logit(self, x: list[float]) -> float:
        if self.kind == "logistic":
            p = self.params
            return p["intercept"] + sum(c * (v - m) / s for c, v, m, s in zip(p["coef"], x, p["mean"], p["scale"]))
        if self.kind == "boosting":
            return self.params["init"] + self.params["learning_rate"] * sum(_tree_value(t, x) for t in self.params["trees"])
        raise ValueError(f"unknown decision model kind {self.kind!r}")

    def vector(self, signals: dict[str, Any]) -> list[float]:
        return [v if (v := feature_value(signals, k)) is not None else ref for k, ref in zip(self.features, self.reference)]

    def probability(self, signals: dict[str, Any]) -> float:
        return _sigmoid(self.logit(self.vector(signals)))

    def reads(self, feature: str) -> bool:
        """Whether P can move with ``feature``: not where its weight is zero or no tree splits on it (the
        monotone fit gives a signal that adds nothing beside the others a zero weight)."""
        if feature not in self.features:
            return False
        i = self.features.index(feature)
        if self.kind == "logistic":
            return self.params["coef"][i] != 0
        return any(i in tree["feature"] for tree in self.params["trees"])

    def contributions(self, signals: dict[str, Any]) -> dict[str, float]:
        """Each feature's push on the logit: the logit minus the logit with that feature at its reference
        (exactly coef * z for the logistic model)."""
        x = self.vector(signals)
        base = self.logit(x)
        return {k: round(base - self.logit([*x[:i], self.reference[i], *x[i + 1:]]), 6) for i, k in enumerate(self.features)}

    @classmethod
    def from_dict(cls, data: dict[str, Any], where: str = "model") -> "FittedModel":
        """The model of a decision file's part ``where``, checked whole: every array of the length its
        features give, every number finite, every scale positive, every tree a tree (each child after its
        node, so a walk ends), so that reading a draft can never fail or loop on what the file says."""
        if not isinstance(data, dict):
            raise ValueError(f"{where} is not an object")
        kind, features, reference, params = data["kind"], _strings(data["features"], f"{where}.features"), \
            _numbers(data["reference"], f"{where}.reference"), data["params"]
        if len(reference) != len(features) or not features:
            raise ValueError(f"{where}.reference has {len(reference)} values for {len(features)} features")
        if not isinstance(params, dict):
            raise ValueError(f"{where}.params is not an object")
        if kind == "logistic":
            _number(params["intercept"], f"{where}.params.intercept")
            for name in ("coef", "mean", "scale"):
                if len(_numbers(params[name], f"{where}.params.{name}")) != len(features):
                    raise ValueError(f"{where}.params.{name} has {len(params[name])} values for {len(features)} features")
            if any(v <= 0 for v in params["scale"]):
                raise ValueError(f"{where}.params.scale holds a scale that is not positive")
        elif kind == "boosting":
            _number(params["init"], f"{where}.params.init")
            _number(params["learning_rate"], f"{where}.params.learning_rate")
            if not isinstance(params["trees"], list):
                raise ValueError(f"{where}.params.trees is not a list")
            for i, tree in enumerate(params["trees"]):
                _check_tree(tree, len(features), f"{where}.params.trees[{i}]")
        else:
            raise ValueError(f"{where}.kind {kind!r} is neither 'logistic' nor 'boosting'")
        return cls(kind=kind, features=features, reference=reference, params=params)

    def to_dict(self) -> dict[str, Any]:
        return {"kind": self.kind, "features": self.features, "reference": self.reference, "params": self.params}


def _number(value: Any, where: str) -> float:
    if (number := json_number(value)) is None or not math.isfinite(number):
        raise ValueError(f"{where} is not a finite number ({str(value)[:40]!r})")
    return float(number)


def _numbers(values: Any, where: str) -> list[float]:
    if not isinstance(values, list):
        raise ValueError(f"{where} is not a list")
    return [_number(v, f"{where}[{i}]") for i, v in enumerate(values)]


def _strings(values: Any, where: str) -> list[str]:
    if not isinstance(values, list) or not all(isinstance(v, str) for v in values):
        raise ValueError(f"{where} is not a list of names")
    return list(values)


def _check_tree(tree: Any, n_features: int, where: str) -> None:
    """A regression tree as the fit writes it (scikit-learn's arrays, nodes in depth-first order): each
    node's children come after it, so a walk from the root takes fewer steps than there are nodes."""
    if not isinstance(tree, dict):
        raise ValueError(f"{where} is not an object")
    arrays = {k: tree.get(k) for k in ("left", "right", "feature", "threshold", "value")}
    if not all(isinstance(a, list) for a in arrays.values()) or len({len(a) for a in arrays.values()}) != 1 or not arrays["left"]:
        raise ValueError(f"{where} needs left, right, feature, threshold and value lists of one length")
    _numbers(arrays["threshold"], f"{where}.threshold")
    _numbers(arrays["value"], f"{where}.value")
    size = len(arrays["left"])
    for node, (left, right, feature) in enumerate(zip(arrays["left"], arrays["right"], arrays["feature"])):
        if not all(isinstance(v, int) and not isinstance(v, bool) for v in (left, right, feature)):
            raise ValueError(f"{where}: node {node}'s children and feature are not integers")
        if (left == -1) != (right == -1):
            raise ValueError(f"{where}: node {node} has one child")
        if left != -1 and not (node < left < size and node < right < size):
            raise ValueError(f"{where}: node {node}'s children are not nodes after it (a cycle, or out of the tree)")
        if left != -1 and not 0 <= feature < n_features:
            raise ValueError(f"{where}: node {node} reads feature {feature} of {n_features}")


def _tree_value(tree: dict[str, list], x: list[float]) -> float:
    node = 0
    while tree["left"][node] != -1:
        node = tree["left"][node] if x[tree["feature"][node]] <= tree["threshold"][node] else tree["right"][node]
    return tree["value"][node]


def _sigmoid(z: float) -> float:
    return 1.0 / (1.0 + math.exp(-z)) if z > -700 else 0.0


@dataclass
class DecisionFile:
    model_key: str
    backend: str
    features: list[str]
    base: FittedModel  # reads the signals every draft has
    verified: FittedModel | None = None  # the same plus the verifier's P(yes), read in the grey zone
    meta: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "DecisionFile":
        if data.get("format") != DECISION_FORMAT:
            raise ValueError(f"not a decision file (format {data.get('format')!r}, expected {DECISION_FORMAT!r})")
        verified = data.get("verified")
        features = _strings(data["features"], "features")
        base = FittedModel.from_dict(data["base"], "base")
        checked = FittedModel.from_dict(verified, "verified") if verified else None
        for part in (base, checked):
            if part is not None and not set(part.features) <= set(features) | {VERIFIER_FEATURE}:
                raise ValueError("a model reads features the file does not name")
        if not isinstance(data["model_key"], str) or not isinstance(data["backend"], str):
            raise ValueError("model_key and backend are not names")
        meta = data.get("meta", {})
        return cls(model_key=data["model_key"], backend=data["backend"], features=features, base=base,
                   verified=checked, meta=meta if isinstance(meta, dict) else {})

    def to_dict(self) -> dict[str, Any]:
        return {"format": DECISION_FORMAT, "model_key": self.model_key, "backend": self.backend,
                "features": self.features, "base": self.base.to_dict(),
                "verified": self.verified.to_dict() if self.verified else None, "meta": self.meta}

    def check(self, model_key: str, available: set[str]) -> None:
        if model_key != self.model_key:
            raise DecisionMismatchError(
                f"this decision file was fitted for model {self.model_key[:24]}; the configured model is "
                f"{model_key[:24]}: fit one with `agentic-rag train decision` or set GATE_POLICY=thresholds")
        if missing := [f for f in self.features if f not in available]:
            raise DecisionMismatchError(
                f"this decision file reads {', '.join(missing)}, which the configured backend does not give: fit one "
                "for it with `agentic-rag train decision` or set GATE_POLICY=thresholds")


def model_key(settings) -> str:
    """The configured model's identity, as the probes know it: the GGUF SHA-256 of a packaged model,
    a converted folder's source key (else its path), or ``openai:<LLM_MODEL>`` for a server (where it
    listens is not the model)."""
    from agentic_rag.llm.packaged import PACKAGED_MODELS, converted_source_key

    name = settings.llm.LLM_MODEL
    if settings.llm.LLM_BACKEND != "local":
        return f"{settings.llm.LLM_BACKEND}:{name}"
    if name in PACKAGED_MODELS:
        return PACKAGED_MODELS[name].sha256
    path = Path(name).expanduser()
    return converted_source_key(path) or str(path.resolve())


def available_features(settings) -> set[str]:
    """The signals the configured backend and settings can give a draft."""
    out = {"overlap_est", "faith_est", "anchor_coverage", "answer_relevance", "hops_found"}  # read by code on any backend
    if settings.baug.PROBE_ENABLED:  # on any backend: the packaged reader reads what the generator cannot
        out.add("answerability")
    if settings.baug.NLI_MODEL:
        out.add("nli_entailment")
    if settings.baug.REQUEST_LOGPROBS:
        out.update(LOGPROB_SIGNALS)
    if settings.baug.VERIFIER_ENABLED:
        out.add(VERIFIER_FEATURE)
    return out


def load_decision(path: str | Path) -> DecisionFile:
    return _load(str(Path(path).resolve()))


@lru_cache(maxsize=4)
def _load(path: str) -> DecisionFile:
    try:
        return DecisionFile.from_dict(parse_json(Path(path).read_text()))
    except FileNotFoundError:
        raise FileNotFoundError(f"decision file {path} not found (DECISION_FILE); "
                                "write one with `agentic-rag train decision`") from None
    except OSError as exc:  # a folder (an empty DECISION_FILE is the working directory), no permission
        raise ValueError(f"decision file {path} cannot be read (DECISION_FILE): {exc.strerror}") from None
    except (json.JSONDecodeError, KeyError, TypeError, ValueError) as exc:
        raise ValueError(f"{path} is not a decision file: {exc}") from None


def configured_decision(settings) -> DecisionFile:
    """The decision file a run reads, checked against the configured model and backend, and holding a
    threshold for the risk ``RISK`` asks for, when it asks for one."""
    decision = load_decision(configured_decision_path(settings))
    decision.check(model_key(settings), available_features(settings))
    if settings.baug.RISK is not None:
        risk_level(decision, settings.baug.RISK)
    return decision


def risk_key(alpha: float) -> str:
    return f"{alpha:g}"


def risk_level(decision: DecisionFile, alpha: float) -> dict[str, Any]:
    """The threshold ``agentic-rag calibrate --risk`` stored in the decision file for risk ``alpha``, with what
    it was calibrated on; a ``DecisionMismatchError`` naming the risks it holds when it has none for ``alpha``."""
    risk = decision.meta.get("risk") if isinstance(decision.meta.get("risk"), dict) else {}
    levels = risk.get("levels") if isinstance(risk.get("levels"), dict) else {}
    level = levels.get(risk_key(alpha))
    if not isinstance(level, dict) or json_number(level.get("threshold")) is None:
        held = ", ".join(sorted(levels)) or "none"
        raise DecisionMismatchError(
            f"the decision file holds no threshold calibrated for RISK={alpha:g} (it holds: {held}): run "
            f"`agentic-rag calibrate --risk {alpha:g} --dataset DEV` (or --run RUN) and point DECISION_FILE at what it writes")
    return {**level, "calibration": risk.get("calibration") or {}}


def configured_decision_path(settings) -> Path:
    """``DECISION_FILE``, else the decision shipped for the packaged model (agentic_rag/data/decisions):
    in-process by its ``LLM_MODEL`` name, or served (``agentic-rag serve``) by the name the server gives it."""
    from agentic_rag.llm.packaged import PACKAGED_MODELS, packaged_by_short_name

    if settings.baug.DECISION_FILE is not None:
        return Path(settings.baug.DECISION_FILE)
    backend, name = settings.llm.LLM_BACKEND, settings.llm.LLM_MODEL
    spec = PACKAGED_MODELS.get(name) if backend == "local" else packaged_by_short_name(name)
    shipped = DECISIONS_DIR / spec.decision_file(backend) if spec else None
    if shipped is None or not shipped.is_file():
        raise ValueError("GATE_POLICY=fitted needs DECISION_FILE (no decision ships for this model): "
                         "write one with `agentic-rag train decision`")
    return shipped


def decision_in_force(settings) -> DecisionFile | None:
    """The fitted decision a run decides with, checked against the configured model and backend; None where
    the thresholds decide. ``GATE_POLICY=auto`` takes the fitted decision where it was chosen by score on the
    test splits (benchmarks/decision): the packaged model in-process, with its shipped decision. Served, the
    same model's fitted decision scored below the thresholds, and a model of the user's own has no decision
    until ``train decision`` writes one (then ``DECISION_FILE`` names it); both keep the thresholds. A preset
    pins a policy where its model's decision was not measured against them."""
    policy = settings.baug.GATE_POLICY
    if policy == "thresholds":
        if settings.baug.RISK is not None:
            raise ValueError("RISK sets a threshold on the fitted decision's P(right), and GATE_POLICY=thresholds has "
                             "none: drop RISK or use GATE_POLICY=fitted (or auto)")
        return None
    if policy == "fitted" or settings.baug.DECISION_FILE is not None or settings.baug.RISK is not None:
        return configured_decision(settings)  # asked for: a missing or mismatched file is an error
    if settings.llm.LLM_BACKEND != "local":
        return None
    try:
        return configured_decision(settings)
    except (ValueError, FileNotFoundError):  # none ships for this model, or its signals are switched off
        return None


def policy_in_force(settings) -> str:
    """The policy a run decides with, ``thresholds`` or ``fitted`` (see `decision_in_force`)."""
    policy = settings.baug.GATE_POLICY
    if policy != "auto":
        return policy
    return "fitted" if decision_in_force(settings) is not None else "thresholds"


STOP_FITTED_REASON = "STOP_FITTED"
FITTED_EXPLANATION_OPENS = "The fitted decision gives"  # how every refusal the fitted decision makes begins


@dataclass(frozen=True)
class FittedDecision(Decision):
    """A decision with the probability behind it; a refusal carries its own explanation."""

    p_right: float | None = None
    explanation: str = ""
    verify: bool = False  # the grey zone's last resort: the final check (the verifier) decides


def decide_fitted(signals: dict[str, Any], flags: Flags, settings,
                  decision: DecisionFile | None = None) -> FittedDecision:
    """The fitted policy on a draft that the input, evidence and hedging rules let through."""
    decision = decision or configured_decision(settings)
    # the verifier is asked only where its verdict can move P: a call that cannot change the decision is waste
    verified = decision.verified if decision.verified is not None and decision.verified.reads(VERIFIER_FEATURE) else None
    model = verified if signals.get(VERIFIER_FEATURE) is not None and verified is not None else decision.base
    p = model.probability(signals)
    cost = settings.baug.WRONG_ANSWER_COST
    cut = cut_for(cost)
    checked = "verified_score" in signals  # the final check has run: decide now
    if not checked and abs(p - cut) < settings.baug.GREY_ZONE_WIDTH:
        if (signals.get("missing_anchors") or not flags.validators_ok) and can_retrieve_more(signals, flags, settings):
            return FittedDecision(RETRIEVE_MORE, "RETRIEVE_MISSING_ANCHORS", round(p, 4))
        if settings.baug.REFLECT_ENABLED and not flags.reflected and flags.can_generate:
            return FittedDecision(REFLECT, "REFLECT_LOW_FAITH", round(p, 4))
        if settings.baug.VERIFIER_ENABLED and settings.baug.GROUNDING_ENABLED and verified is not None:
            return FittedDecision(STOP, STOP_FITTED_REASON, round(p, 4), verify=True)
    alpha = settings.baug.RISK
    level = risk_level(decision, alpha) if alpha is not None else None
    if (p >= float(level["threshold"])) if level else p > cut:
        return FittedDecision(STOP, STOP_FITTED_REASON, round(p, 4))
    reason, why = driver(model, signals)
    if level:
        need = (f"answering needs P(right) >= {float(level['threshold']):.2f} for the {alpha:.0%} risk you set "
                f"(RISK={alpha:g}); this draft has {p:.2f}")
    else:
        need = (f"answering needs more than {cut:.0%} (a wrong answer costs {cost:g} against +1 for a right one)")
    explanation = f"{FITTED_EXPLANATION_OPENS} {p:.0%} that this draft is right, and {need}; what lowered it most: {why}."
    return FittedDecision(ABSTAIN, reason, round(p, 4), explanation)


def driver(model: FittedModel, signals: dict[str, Any]) -> tuple[str, str]:
    """The reason code and wording of the signal that pulled P down most (a measured one). Only a signal
    below the development split's mean draft counts: a free fit may give a signal a negative weight beside a
    correlated one (faithfulness beside overlap), and "only 100% of its names occur in the sources" is
    no reason a user can act on. The monotone fit gives no negative weight, so there a pulling signal is
    already below the mean; the filter guards decision files fitted before it, or by hand."""
    low = {k for k, ref in zip(model.features, model.reference) if signals.get(k) is not None and float(signals[k]) < ref}
    pushes = {k: v for k, v in model.contributions(signals).items() if v < 0 and k in low}
    if not pushes:
        return "ABSTAIN_LOW_SUPPORT", "no single signal: the drafts it resembles were mostly wrong on the development split"
    key = min(pushes, key=pushes.get)
    code, text = FEATURE_REASONS[key]
    return code, text.format(float(signals[key]))
