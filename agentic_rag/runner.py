"""Answer one question with a chosen system: the single entry point of CLI, eval and API use.

The systems' graphs are assembled in ``graphs/``, which imports this library; so this module never
imports ``graphs/`` back. Importing ``graphs`` registers its factory here (:func:`register_graphs`),
and :func:`answer` asks it for the compiled graph of a system name (docs/architecture.md).
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any, Callable

from agentic_rag.anchors.inputs import question_too_long
from agentic_rag.configuration import Settings
from agentic_rag.datasets.crag import CragRecord
from agentic_rag.state import STATE_KEYS, AnswerRecord

GraphFactory = Callable[[str, "Settings | None"], Any]
_factory: GraphFactory | None = None


def register_graphs(factory: GraphFactory) -> None:
    """Set how a system name becomes a compiled graph (``graphs/__init__.py`` registers its ``get_graph``)."""
    global _factory
    _factory = factory


Observer = Callable[[AnswerRecord, Settings], None]
_observers: list[Observer] = []


def register_observer(observer: Observer) -> None:
    """Have ``observer(result, settings)`` see every question :func:`answer` completes (the app layer
    registers the OTLP exporter, agentic_rag/trace/otel.py, which this layer may not import)."""
    if observer not in _observers:
        _observers.append(observer)


def graph_registrar() -> str | None:
    """The module that registered the graphs in this process, for a worker process to import in turn."""
    return getattr(_factory, "__module__", None)


def system_graph(system: str, settings: Settings | None = None):
    """The compiled graph of ``system`` (with ``settings``' extensions) from the registered factory."""
    if _factory is None:
        raise RuntimeError("no graphs are registered: `import graphs` (the app layer registers the agent and the "
                           "baseline) before answering")
    return _factory(system, settings)


def graph_input(
    question: str | None = None,
    record: CragRecord | None = None,
    index_dir: str | Path | None = None,
    selected_option: str | None = None,
) -> dict[str, Any]:
    if record is None and not question:
        raise ValueError("give a question, or a record that carries one")
    state: dict[str, Any] = {"question": question or record.query}
    if record is not None:
        state.update(
            question_id=record.interaction_id,
            query_time=record.query_time,
            record=record.model_dump(mode="json"),
        )
    if index_dir is not None:
        state["index_dir"] = str(index_dir)
    if selected_option:
        state["selected_option"] = selected_option
    return state


def answer(
    system: str,
    settings: Settings,
    question: str | None = None,
    record: CragRecord | None = None,
    index_dir: str | Path | None = None,
    extra_config: dict[str, Any] | None = None,
    on_update: Callable[[str, dict[str, Any]], None] | None = None,
    selected_option: str | None = None,
) -> AnswerRecord:
    """Run one question through a graph; ``on_update(node, update)`` sees each node's output as it runs.

    A question longer than ``MAX_QUESTION_CHARS`` is refused here for every system, before any graph
    work (the agent's graph refuses it too when run on its own)."""
    from agentic_rag.timing import startup_step

    with startup_step("imports and graph"):
        graph = system_graph(system, settings)
    state = graph_input(question, record, index_dir, selected_option)
    too_long = question_too_long(state["question"], settings)
    if too_long:
        from agentic_rag.budget import tokens_summary
        from agentic_rag.generator.finalize import build_record

        decision = {"action": "ABSTAIN", "reason": "ABSTAIN_QUESTION_TOO_LONG"}
        return build_record({**state, "too_long": too_long, "decision": decision}, system, settings, tokens_summary({}), 0)
    config = {"configurable": {"settings": settings, **(extra_config or {})}}
    if settings.paths.CHECKPOINT_PATH is not None:
        from agentic_rag.checkpoints import start_thread

        graph, config = start_thread(graph, settings.paths.CHECKPOINT_PATH, config, state)
    t0, c0 = time.perf_counter(), time.process_time()
    if on_update is None:
        final = graph.invoke(state, config=config, output_keys=STATE_KEYS)
    else:
        final = {}
        # the whole state: a graph's output is only its result, the runner also reads the accounting
        for mode, chunk in graph.stream(state, config=config, stream_mode=["updates", "values"],
                                        output_keys=STATE_KEYS):
            if mode == "values":
                final = chunk
            else:
                for node, update in chunk.items():
                    on_update(node, update or {})
    elapsed, cpu = (time.perf_counter() - t0) * 1000.0, (time.process_time() - c0) * 1000.0
    result = AnswerRecord.model_validate(final["result"])
    result.latency_ms = round(elapsed, 1)
    result.cpu_ms = round(cpu, 1)
    result.latency_by_node_ms = final.get("latency_ms", {})
    result.cpu_by_node_ms = final.get("cpu_ms", {})
    result.llm_by_node_ms = final.get("llm_ms", {})
    result.llm_ms = round(sum(result.llm_by_node_ms.values()), 1)
    result.events = final.get("events", [])
    if final.get("decision", {}).get("flags") is not None:  # BAUG ran, so it wrote telemetry
        from agentic_rag.telemetry import telemetry_path

        result.trace = str(telemetry_path(settings, system))
    for observer in _observers:
        observer(result, settings)
    return result


_WARM_HTML = (
    "<html><body><h1>DreamWorks Animation</h1><p>DreamWorks Animation was founded in 1994 by Steven Spielberg, "
    "Jeffrey Katzenberg and David Geffen. Universal Pictures bought the studio in 2016.</p></body></html>"
)
_WARM_QUESTION = "Who founded DreamWorks Animation in 1994?"


def warm_up(system: str, settings: Settings, llm: Any = None) -> None:
    """Load and run once every model a question touches: graph, tokenizer, spaCy and the anchor
    lexicon, page extraction, the embedder and both indexes, the generator and the answerability reader, so that no
    timed question pays for loading (the CRAG kit adapter calls it where the kit does not time)."""
    from langchain_core.messages import HumanMessage

    from agentic_rag.anchors.ner import get_nlp
    from agentic_rag.anchors.predictor import propose_anchors
    from agentic_rag.ingest.ingest import pages_from_record
    from agentic_rag.llm.factory import get_chat_model, get_tokenizer
    from agentic_rag.llm.local import ChatLocalTransformers
    from agentic_rag.reader.read import plan_for, warm
    from agentic_rag.retrieval.embeddings import get_embedder
    from agentic_rag.retrieval.hybrid import HybridIndex
    from agentic_rag.workers.source import retrieve

    system_graph(system, settings)
    get_tokenizer(settings)
    get_nlp()
    propose_anchors(_WARM_QUESTION.lower(), top_m=settings.agent.ANCHOR_TOP_M)  # kit questions come lower-cased
    record = CragRecord(interaction_id="warm-up", query=_WARM_QUESTION,
                        search_results=[{"page_name": "DreamWorks", "page_result": _WARM_HTML}])
    index = HybridIndex.build(pages_from_record(record, settings), get_embedder(settings),
                              settings.retrieval.CHUNK_SIZE_CHARS, settings.retrieval.CHUNK_OVERLAP_CHARS,
                              settings.retrieval.MIN_CHUNK_CHARS)
    retrieve(index, _WARM_QUESTION, settings)
    model = llm if llm is not None else get_chat_model(settings)
    if system == "agent":
        warm(plan_for(model, settings), settings)
    if isinstance(model, ChatLocalTransformers):
        model.invoke([HumanMessage(content=_WARM_QUESTION)], max_tokens=1)
