"""The answerability reader: P(the evidence answers the question), whichever model writes the draft.

Why a component of its own: the probe reads the last prompt token's state of the answer prompt, a
function of the question and the evidence, not of the draft. For a packaged model answering in this
process that state comes free with the generation call's prefill (``GENERATION``). For every other
generator (a server, with or without log-probabilities; a local model no probe was trained on) a
packaged reader model runs the same prompt's prefill here, without decoding (``LOCAL``), so the
refusals that rest on the probe travel to every backend. A run's ``ReaderPlan`` says which, once per
model and settings; each reading records how it was read, by which model, and its time.

The decision layers (baug/) read the readings; this package never imports them.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, replace
from functools import lru_cache
from pathlib import Path
from typing import Any

from agentic_rag.reader.probe import (
    PROBES_DIR,
    ProbeMismatchError,
    _mismatch,
    asked_question,
    configured_probe_path,
    load_probe,
)

GENERATION = "generation"  # read from the generation call's own prefill: no extra work
LOCAL = "local"  # one prefill of the packaged reader model in this process, no decoding
CROSS = "cross-encoder"  # the fine-tuned MiniLM reads the question and the prompt's sources here
OFF = "off"
UNAVAILABLE = "unavailable"
QUOTE_READ_OUTPUT_TOKENS = 1  # a GENERATION read of another prompt decodes one token (tokens)


@dataclass(frozen=True)
class ReaderPlan:
    how: str  # GENERATION, LOCAL, OFF or UNAVAILABLE
    probe_path: str = ""
    reader: str = ""  # the model whose states the probe reads
    reader_dir: str = ""  # LOCAL: the reader's converted folder
    layer: int = 0
    why: str = ""  # OFF / UNAVAILABLE: the reason, as the run reports it
    cross_path: str = ""  # the cross-encoder reader's file: it reads alone (CROSS) or beside the probe ("both")
    views: tuple[str, ...] = ("last",)  # what the probe reads of the prefill at ``layer`` (reader/probe.VIEWS)

    def call_kwargs(self, question: str) -> dict[str, Any]:
        """What the generation call must be asked for (GENERATION only): its prefill's states at the probe's
        layer, the question's among them where the probe reads its view."""
        if self.how != GENERATION:
            return {}
        asked = asked_question(self.views, question)
        return {"prompt_state_layer": self.layer, **({"prompt_state_question": asked} if asked else {})}

    def describe(self) -> str:
        beside = " and by the MiniLM cross-encoder" if self.cross_path and self.how != CROSS else ""
        if self.how == GENERATION:
            return f"from the generation call's prefill ({self.reader}){beside}"
        if self.how == LOCAL:
            return f"by a local prefill of the packaged reader {self.reader}{beside}"
        if self.how == CROSS:
            return "by the MiniLM cross-encoder on the question and the prompt's sources"
        return self.why


def plan_for(model: Any, settings: Any) -> ReaderPlan:
    """How this run reads answerability with ``model`` as its generator.

    An in-process model with a probe of its own is read from its generation call. A configured
    ``PROBE_PATH`` that does not fit that model is an error, not a fallback. A model injected in place of
    an in-process generator that exposes no states (a test's scripted model) has no reading; anything
    else, a server above all, is read by the packaged reader."""
    if not settings.baug.PROBE_ENABLED:
        return ReaderPlan(OFF, why="off (PROBE_ENABLED)")
    if settings.baug.ANSWERABILITY_READER == "cross-encoder":
        return cross_plan()
    return with_cross_reader(_probe_plan_for(model, settings), settings)


def _probe_plan_for(model: Any, settings: Any) -> ReaderPlan:
    from agentic_rag.llm.local import ChatLocalTransformers, hidden_size_of

    if isinstance(model, ChatLocalTransformers):
        path = str(configured_probe_path(settings, model.model_path).resolve())
        mismatch = _mismatch(path, model.model_path, hidden_size_of(model))
        if not mismatch:
            probe = load_probe(path)
            return ReaderPlan(GENERATION, path, _name_of(model.model_path), layer=probe.layer, views=probe.views)
        if settings.baug.PROBE_PATH is not None:
            raise ProbeMismatchError(mismatch)
    elif settings.llm.LLM_BACKEND == "local":
        return ReaderPlan(UNAVAILABLE, why=f"the injected {model._llm_type} model exposes no hidden states")
    return local_plan(settings)


def reader_plan(settings: Any) -> ReaderPlan:
    """The plan ``plan_for`` gives the configured generator, known from the settings alone (for a run's
    provenance and its first line; no weights are loaded)."""
    if not settings.baug.PROBE_ENABLED:
        return ReaderPlan(OFF, why="off (PROBE_ENABLED)")
    if settings.baug.ANSWERABILITY_READER == "cross-encoder":
        return cross_plan()
    return with_cross_reader(_probe_reader_plan(settings), settings)


def _probe_reader_plan(settings: Any) -> ReaderPlan:
    if settings.llm.LLM_BACKEND == "local":
        from agentic_rag.llm.packaged import converted_source_key, resolve_local_model

        folder = resolve_local_model(settings)
        path = configured_probe_path(settings, str(folder)).resolve()
        probe = load_probe(path)
        if probe.model_key == converted_source_key(folder) or settings.baug.PROBE_PATH is not None:
            return ReaderPlan(GENERATION, str(path), _name_of(str(folder)), layer=probe.layer, views=probe.views)
    return local_plan(settings)


@lru_cache(maxsize=8)
def _name_of(folder: str) -> str:
    """A model folder as the reader names it: the packaged model's short name, else the folder's name."""
    from agentic_rag.llm.packaged import converted_source_key, packaged_model_for_key

    spec = packaged_model_for_key(converted_source_key(Path(folder)))
    return spec.short_name if spec else Path(folder).name


def reader_spec(settings: Any):
    """The packaged model READER_MODEL names (auto: the one the server serves, named by its short name as
    ``agentic-rag serve`` names it or by its converted folder as ``transformers serve`` does, else the 1.5B)."""
    return _reader_spec(settings.baug.READER_MODEL, settings.llm.LLM_BACKEND, settings.llm.LLM_MODEL)


@lru_cache(maxsize=8)
def _reader_spec(reader_model: str, backend: str, served: str):
    # cached: a served folder is known by its conversion marker, which a question should not re-read
    from agentic_rag.llm.packaged import (
        DEFAULT_MODEL,
        PACKAGED_MODELS,
        converted_source_key,
        packaged_by_short_name,
        packaged_model_for_key,
    )

    if reader_model != "auto":
        return PACKAGED_MODELS[reader_model]
    if backend == "local":
        return DEFAULT_MODEL
    folder = Path(served).expanduser()
    by_folder = packaged_model_for_key(converted_source_key(folder)) if folder.is_dir() else None
    return packaged_by_short_name(served) or by_folder or DEFAULT_MODEL


def local_plan(settings: Any) -> ReaderPlan:
    """The plan of a run whose generator cannot be read: the packaged reader, converted if need be."""
    spec = reader_spec(settings)
    return _local_plan(spec.name, str(settings.baug.PROBE_PATH or PROBES_DIR / spec.probe_file),
                       str(Path(settings.paths.MODEL_CACHE_DIR).expanduser()))


@lru_cache(maxsize=8)
def _local_plan(name: str, probe_path: str, cache_dir: str) -> ReaderPlan:
    from agentic_rag.llm.packaged import PACKAGED_MODELS, ensure_converted

    spec = PACKAGED_MODELS[name]
    probe = load_probe(probe_path)
    probe.check_model(spec.sha256)
    folder = ensure_converted(Path(cache_dir), spec)
    return ReaderPlan(LOCAL, str(Path(probe_path).resolve()), spec.short_name, str(folder), probe.layer,
                      views=probe.views)


def cross_plan() -> ReaderPlan:
    from agentic_rag.reader.cross_encoder import CROSS_READER_NAME, PACKAGED_CROSS_READER

    return ReaderPlan(CROSS, reader=CROSS_READER_NAME, cross_path=str(PACKAGED_CROSS_READER))


def with_cross_reader(plan: ReaderPlan, settings: Any) -> ReaderPlan:
    """``ANSWERABILITY_READER=both``: the cross-encoder reads beside a probe that reads (else alone)."""
    if settings.baug.ANSWERABILITY_READER != "both":
        return plan
    if plan.how not in (GENERATION, LOCAL):
        return cross_plan()
    return replace(plan, cross_path=cross_plan().cross_path)


def pending(plan: ReaderPlan) -> dict[str, Any]:
    """The reading a generation call leaves when the probe is not read from it."""
    if plan.how in (LOCAL, CROSS):
        return {"status": "pending", "how": plan.how, "reader": plan.reader}
    return {"status": plan.how, **({"why": plan.why} if plan.why else {})}


def reading_of_reply(message: Any, plan: ReaderPlan) -> dict[str, Any]:
    """The probe's reading of a GENERATION call's reply (what ``pending`` says for any other plan)."""
    if plan.how != GENERATION:
        return pending(plan)
    from agentic_rag.llm.local import STATE_KEYS

    state = (getattr(message, "response_metadata", None) or {}).get("prompt_state") or {}
    views = {view: state[key] for view, key in STATE_KEYS.items() if state.get(key)}
    if lacking := [v for v in plan.views if v not in views]:
        return {"status": UNAVAILABLE, "why": f"the reply carried no prompt state ({', '.join(lacking)})"}
    score = load_probe(plan.probe_path).read(views)
    return {"status": "scored", "answerability": round(score, 4), "how": GENERATION, "reader": plan.reader,
            "layer": state["layer"], "ms": 0.0}


def read_prompt(messages: list, plan: ReaderPlan, settings: Any, question: str) -> dict[str, Any]:
    """A LOCAL reading of ``messages`` (an answer prompt for ``question``): one prefill of the reader
    model, its time and prompt length. Stops with ``DeadlineExceeded`` once the enclosing
    ``budget.hard_deadline`` passes."""
    reader = reader_model(plan.reader_dir, settings)
    start = time.perf_counter()
    views, tokens = reader.prompt_state(messages, plan.layer, asked_question(plan.views, question))
    score = load_probe(plan.probe_path).read(views)
    return {"status": "scored", "answerability": round(score, 4), "how": LOCAL, "reader": plan.reader,
            "layer": plan.layer, "ms": round((time.perf_counter() - start) * 1000, 1), "prompt_tokens": tokens}


def reader_model(folder: str, settings: Any):
    """The packaged reader, loaded once per process (it shares the weights of an in-process generator
    of the same folder and dtype)."""
    from agentic_rag.llm.dtype import local_dtype
    from agentic_rag.llm.factory import local_model

    return local_model(folder, 1, 0.0, settings.llm.TORCH_THREADS, 1.0, local_dtype(settings).dtype)


def read_cross(question: str, bundle: dict[str, Any], plan: ReaderPlan, settings: Any) -> dict[str, Any]:
    """The cross-encoder's reading of a question and the sources an answer prompt shows from ``bundle``."""
    from agentic_rag.prompts import render_sources
    from agentic_rag.reader.cross_encoder import CROSS_READER_NAME, load_cross_reader

    reader = load_cross_reader(plan.cross_path, threads=settings.llm.TORCH_THREADS)
    start = time.perf_counter()
    score = reader.score(question, render_sources(bundle) or "(no sources)")
    return {"status": "scored", "answerability": round(score, 4), "how": CROSS, "reader": CROSS_READER_NAME,
            "ms": round((time.perf_counter() - start) * 1000, 1)}


def with_cross(reading: dict[str, Any], question: str, bundle: dict[str, Any], plan: ReaderPlan, settings: Any) -> dict[str, Any]:
    """A probe's reading joined with the cross-encoder's where the plan reads both (``join_readings``),
    both parts kept."""
    if plan.how == CROSS or not plan.cross_path or reading.get("status") != "scored":
        return reading
    from agentic_rag.reader.cross_encoder import join_readings

    cross = read_cross(question, bundle, plan, settings)
    joined = join_readings(reading["answerability"], cross["answerability"])
    return {**reading, "answerability": round(joined, 4), "ms": round(reading.get("ms", 0.0) + cross["ms"], 1),
            "parts": {"probe": reading["answerability"], CROSS: cross["answerability"]}}


def read_other_prompt(question: str, bundle: dict[str, Any], plan: ReaderPlan, settings: Any, stage: str,
                      model: Any) -> tuple[dict[str, Any], dict[str, Any]]:
    """The reading of an answer prompt other than the draft's (the final check's quoted sentences as its
    only sources) and the LLM usage it cost: GENERATION asks the generator for one token to get its
    prefill; LOCAL and the cross-encoder read it here and cost no LLM tokens."""
    from agentic_rag.prompts import answer_messages

    if plan.how == CROSS:
        return read_cross(question, bundle, plan, settings), {}
    messages = answer_messages(question, bundle)
    if plan.how == LOCAL:
        return with_cross(read_prompt(messages, plan, settings, question), question, bundle, plan, settings), {}
    if plan.how != GENERATION:
        return pending(plan), {}
    from agentic_rag.llm.calls import call_model

    capped = settings.replace(MAX_OUTPUT_TOKENS=QUOTE_READ_OUTPUT_TOKENS)
    message, usage = call_model(messages, capped, stage, model, **plan.call_kwargs(question))
    return with_cross(reading_of_reply(message, plan), question, bundle, plan, settings), usage


def warm(plan: ReaderPlan, settings: Any) -> None:
    """Load a LOCAL reader before the first question, so its load is a startup cost, not a question's."""
    if plan.how == LOCAL:
        from langchain_core.messages import HumanMessage

        read_prompt([HumanMessage(content="warm-up")], plan, settings, "warm-up")
    if plan.cross_path:
        read_cross("warm-up", {"passages": []}, plan, settings)
