"""Shared fixtures: settings that write into a temp artifacts folder, and the data folder."""

from __future__ import annotations

from pathlib import Path

import pytest

from agentic_rag.configuration import Settings

SHARED_DATA = Path(__file__).resolve().parents[2] / "shared" / "data"


@pytest.fixture
def settings(tmp_path: Path) -> Settings:
    return Settings.load(overrides={"ARTIFACTS_DIR": str(tmp_path / "artifacts")})


@pytest.fixture(scope="session")
def shared_data() -> Path:
    if not SHARED_DATA.is_dir():
        pytest.skip(f"shared data folder {SHARED_DATA} is absent")
    return SHARED_DATA


@pytest.fixture
def agent_settings(settings: Settings) -> Settings:
    """Settings whose telemetry goes to one file per test, so tests can read their own rows."""
    return settings.replace(TELEMETRY_PATH=str(settings.ARTIFACTS_DIR / "telemetry.jsonl"))
