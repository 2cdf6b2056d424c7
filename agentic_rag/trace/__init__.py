"""Inspecting runs: per-node trace events, run loading, text and HTML rendering, checkpoints, drawings."""
