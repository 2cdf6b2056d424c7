"""Worked examples of extending agentic-rag without editing it (docs/extending.md)."""
