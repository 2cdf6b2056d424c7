"""The answerability reader: P(the evidence answers the question) for any generator (read.py), the
probe it applies (probe.py) and its graph step (node.py). Fitting a probe is agentic_rag/training's."""

from pathlib import Path

PROBES_DIR = Path(__file__).resolve().parents[1] / "data" / "probes"  # the shipped readers' files
