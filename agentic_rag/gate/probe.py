"""Deprecated: the answerability probe moved to ``agentic_rag.reader`` (reader/probe.py reads a probe
file, reader/read.py decides whose prefill it reads). This alias goes in the next release."""

from __future__ import annotations

import warnings

from agentic_rag.reader.probe import *  # noqa: F401,F403
from agentic_rag.reader.probe import AnswerabilityProbe, ProbeMismatchError, load_probe  # noqa: F401

warnings.warn("agentic_rag.gate.probe is deprecated and goes in the next release: import agentic_rag.reader.probe",
              DeprecationWarning, stacklevel=2)
