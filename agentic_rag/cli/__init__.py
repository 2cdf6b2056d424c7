"""The ``agentic-rag`` command line: one module per group of commands, all on one Typer app."""

from agentic_rag.cli import prepare, run, train, views  # noqa: F401  (each registers its commands on the app)
from agentic_rag.cli.common import app

__all__ = ["app", "main"]


def main() -> None:  # pragma: no cover - console entry
    app()
