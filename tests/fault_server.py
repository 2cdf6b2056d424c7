"""The fault-injecting OpenAI-compatible server lives in agentic_rag.testing.fault_server (benchmarks use it too)."""

from agentic_rag.testing.fault_server import MODES, FaultServer, refused_url  # noqa: F401
