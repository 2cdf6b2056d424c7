"""The reliability cases of scripts/bench_reliability.py: faults injected into real processes, and the outcome.

Each case starts a process as a user would (an `agentic-rag` command, `langgraph dev`, or the CRAG kit
adapter in a process of its own), injects one fault and records what the user got: crash, traceback,
rows lost or doubled, a leaked key. They live here, one module per group or a few related groups
(``cases`` holds the registry and what the groups share, ``report`` runs them and writes
benchmarks/reliability.json and .md), so that the script stays a thin caller and no module grows past
the line limit. Like the rest of ``testing/``, it drives the entry points only as child processes.
"""
