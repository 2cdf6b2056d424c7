"""``python -m agentic_rag.cli``."""

import sys

from agentic_rag.cli import app

sys.exit(app())
