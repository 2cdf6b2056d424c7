"""Write docs/metrics.md from the one table of metrics (agentic_rag.eval.metrics.METRICS)."""

from __future__ import annotations

import sys
from pathlib import Path

from agentic_rag.eval.metrics import metrics_markdown

OUT = Path(__file__).resolve().parents[1] / "docs" / "metrics.md"


def main() -> int:
    OUT.write_text(metrics_markdown())
    print(f"written {OUT}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
