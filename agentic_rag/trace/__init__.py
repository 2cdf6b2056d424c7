"""Inspecting runs: loading a run folder, the text and HTML views, drawings of the graphs.

What these read is recorded elsewhere, below the graphs: one event per node execution
(:mod:`agentic_rag.events`) and, on request, every graph step (:mod:`agentic_rag.checkpoints`).
"""
