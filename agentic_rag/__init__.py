"""agentic-rag: honest, budget-aware agentic RAG."""
__version__ = "0.1.0"
