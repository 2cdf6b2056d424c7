"""Anchors: the pieces of a question its evidence must contain (see :mod:`.predictor`)."""

from agentic_rag.anchors.predictor import (
    ANCHOR_TYPES,
    QUESTION_KINDS,
    Anchor,
    anchor_coverage,
    anchor_in_text,
    propose_anchors,
    question_kind,
    select_anchors,
)

__all__ = [
    "ANCHOR_TYPES",
    "QUESTION_KINDS",
    "Anchor",
    "anchor_coverage",
    "anchor_in_text",
    "propose_anchors",
    "question_kind",
    "select_anchors",
]
