"""Server processes for tests live in agentic_rag.testing.servers (benchmarks start them too)."""

from agentic_rag.testing.servers import console_script, free_port, graph_server, post, running  # noqa: F401
