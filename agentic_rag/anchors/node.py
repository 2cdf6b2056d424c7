"""Graph node: propose and select the question's anchors (no LLM)."""

from __future__ import annotations

import time
from typing import Any

from langchain_core.runnables import RunnableConfig

from agentic_rag.anchors.hops import plan_hops
from agentic_rag.anchors.inputs import out_of_domain, question_too_long
from agentic_rag.anchors.kind import question_kind
from agentic_rag.anchors.predictor import propose_anchors, select_anchors
from agentic_rag.configuration import Settings
from agentic_rag.nodes import Node, timed
from agentic_rag.state import RAGState


@timed(Node.ANCHORS)
def predict_anchors_node(state: RAGState, config: RunnableConfig) -> dict[str, Any]:
    started = time.time()  # the question's clock includes this node (loading the tagger on a cold start)
    settings = Settings.from_runnable_config(config)
    too_long = question_too_long(state["question"], settings)
    if too_long:  # refused as input: no anchors, no retrieval (BAUG records the refusal)
        return {"started_at": time.time(), "anchors_proposed": [], "anchors": [], "kind": "other", "round": 1,
                "too_long": too_long}
    ood = out_of_domain(state["question"], settings)
    proposed = propose_anchors(state["question"], top_m=settings.agent.ANCHOR_TOP_M)
    selected = select_anchors(proposed, settings.agent.ANCHOR_MIN_SCORE)[: settings.agent.MAX_WORKERS]
    kind = question_kind(state["question"], proposed)
    return {
        "started_at": started,
        "anchors_proposed": [a.to_dict() for a in proposed],
        "anchors": [a.to_dict() for a in selected],
        "kind": kind,
        "hop_plan": plan_hops(state["question"], proposed, kind).to_dict(),
        "round": 1,
        "held_ids": [],
        "extra_terms": [],
        "hop_query": "",
        "one_shot_done": False,
        "reflected": False,
        "no_new_hits": False,
        "ood": ood,
    }
