"""Whether a setting's value can be used in this environment: the vector store class it names imports,
the packages that send spans are installed. Checked when settings load, so a value that cannot work is a
settings error then, not a failed question later."""

from __future__ import annotations

# The optional extra that sends spans (agentic_rag/trace/otel.py): module -> distribution.
OTEL_PACKAGES = {"opentelemetry.sdk": "opentelemetry-sdk",
                 "opentelemetry.exporter.otlp.proto.http": "opentelemetry-exporter-otlp-proto-http",
                 "openinference.semconv": "openinference-semantic-conventions"}


def missing_otel_packages() -> str | None:
    """Why spans cannot be sent from this environment, in one line naming the install, or None."""
    import importlib.util

    def found(module: str) -> bool:
        try:
            return importlib.util.find_spec(module) is not None
        except ModuleNotFoundError:
            return False

    absent = [dist for module, dist in OTEL_PACKAGES.items() if not found(module)]
    return f"OTLP export needs {', '.join(absent)}: pip install 'agentic-rag[otel]'" if absent else None


def import_store_class(name: str) -> type:
    """The LangChain ``VectorStore`` class a ``VECTOR_STORE`` of the form ``module:Class`` names
    (retrieval/vectorstore.py fills it; ValueError when it cannot be imported or is no store)."""
    from importlib import import_module

    from langchain_core.vectorstores import VectorStore

    module, _, attr = name.partition(":") if ":" in name else name.rpartition(".")
    try:
        cls = getattr(import_module(module), attr)
    except (ImportError, AttributeError) as exc:
        raise ValueError(f"VECTOR_STORE {name!r} cannot be imported: {exc}") from None
    if not (isinstance(cls, type) and issubclass(cls, VectorStore)):
        raise ValueError(f"VECTOR_STORE {name!r} is not a LangChain VectorStore class")
    return cls
