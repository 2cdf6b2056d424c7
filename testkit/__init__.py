"""Builders shared by the test suite and the benchmark scripts, so that both exercise the same inputs.

Scripted chat models (``fakes``), real OpenAI-compatible and ``langgraph dev`` servers (``fault_server``,
``servers``), toy records and datasets (``records``), defective and hostile inputs (``bad_inputs``,
``hostile``), artefacts that try to run code, take a key or inject markup (``attacks``), child processes of the CLI
(``processes``) and the reliability cases of scripts/bench_reliability.py (``reliability``). The agent never imports this package: it
is here so that scripts/ need not import tests/ and tests/ need not import scripts/.
"""

from pathlib import Path

REPO = Path(__file__).resolve().parents[1]  # the checkout: tests, scripts and docs are read from here
