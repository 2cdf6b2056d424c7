"""The shared evaluation data next to the checkout (../shared/data), for tests that read it and skip without it."""

from __future__ import annotations

from pathlib import Path

import pytest

from agentic_rag.datasets.crag import ReadReport, iter_records

DATA = Path(__file__).resolve().parents[2] / "shared" / "data"  # beside the checkout


HOTPOT = DATA / "hotpotqa" / "hotpot_dev_distractor_first100.json"


needs_data = pytest.mark.skipif(
    not DATA.is_dir(), reason=f"shared evaluation data not found at {DATA} (see ../shared/data/SOURCES.md)"
)


def reread(path: Path) -> list:
    """Every output must read back through the one CRAG reader with no bad line."""
    report = ReadReport(str(path))
    records = list(iter_records(path, report=report))
    assert report.bad == [], report.bad
    return records
