"""Shared fixtures: settings that write into a temp artifacts folder, and the data folder.

Per-question indexes are the one expensive artifact many tests read without changing it (a CRAG
record's pages cost seconds of embedding), so a whole session shares one index cache, through the
environment so that CLI runs, ``Settings.load`` calls in tests and subprocesses use it too. Outputs
(runs, telemetry) still go to each test's own ``ARTIFACTS_DIR``. A test of the cache itself asks for
``own_index_cache``.
"""

from __future__ import annotations

from collections import OrderedDict
from pathlib import Path

import pytest

import graphs  # noqa: F401  (the app layer: registers the agent and baseline graphs with agentic_rag.runner)
from agentic_rag.configuration import ENV_PREFIX, PRESET_ENV, Settings
from agentic_rag.ingest import ingest
from testkit.loaded_models import release_all_but_the_suites_model

SHARED_DATA = Path(__file__).resolve().parents[2] / "shared" / "data"


@pytest.fixture(scope="session", autouse=True)
def fast_preset():
    """The suite runs the 0.5B generator (preset `fast`) so it fits CI's time; the default 1.5B has its
    own real-model test, which names the default preset. Set through the environment so CLI runs,
    subprocesses and servers the tests start get it too."""
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv(PRESET_ENV, "fast")
        yield


@pytest.fixture(scope="session", autouse=True)
def shared_index_cache(tmp_path_factory, worker_id) -> Path:
    """One cache for both xdist workers and every process they start (``SUITE_SETTINGS``): an index is
    written to a temporary folder and renamed into place, and the chunk vectors are one SQLite file in
    WAL mode, so processes that build the same index at once each end with a whole one."""
    base = tmp_path_factory.getbasetemp()
    folder = (base.parent if worker_id != "master" else base) / "index-cache"
    folder.mkdir(parents=True, exist_ok=True)
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv(ENV_PREFIX + "INDEX_CACHE_DIR", str(folder))
        yield folder


@pytest.fixture(scope="module", autouse=True)
def one_model_beside_the_suites():
    """A test file's extra real models (the 1.5B, a second dtype, a draft) are released when it ends, so a
    worker holds at most the suite's model and one file's own (``testkit.loaded_models``)."""
    yield
    release_all_but_the_suites_model()


@pytest.fixture
def settings(tmp_path: Path) -> Settings:
    return Settings.load(overrides={"ARTIFACTS_DIR": str(tmp_path / "artifacts")})


@pytest.fixture
def own_index_cache(settings: Settings, monkeypatch) -> Settings:
    """Settings whose index cache is the test's own (the default ARTIFACTS_DIR/cache), with the
    in-process index memory emptied for the test, so that what it checks is built and written here."""
    monkeypatch.setattr(ingest, "_MEMORY", OrderedDict())
    return settings.replace(INDEX_CACHE_DIR=None)


@pytest.fixture(scope="session")
def shared_data() -> Path:
    if not SHARED_DATA.is_dir():
        pytest.skip(f"shared data folder {SHARED_DATA} is absent")
    return SHARED_DATA


@pytest.fixture
def agent_settings(settings: Settings) -> Settings:
    """Settings whose telemetry goes to one file per test, so tests can read their own rows."""
    return settings.replace(TELEMETRY_PATH=str(settings.paths.ARTIFACTS_DIR / "telemetry.jsonl"))


SYSTEM_TESTS = Path(__file__).resolve().parent / "system"


def pytest_collection_modifyitems(config, items):
    """Every test under tests/system/ starts real processes, servers or clusters, and a ``model`` test loads
    the real packaged LLM: both are marked ``system``, so the quick tier (``-m "not system"``) leaves them out."""
    for item in items:
        if SYSTEM_TESTS in Path(str(item.fspath)).resolve().parents or item.get_closest_marker("model"):
            item.add_marker(pytest.mark.system)


_ONE_THREAD = []  # the thread-pool limit of a quick-tier worker, kept for the session


def pytest_collection_finish(session):
    """The quick tier loads no real model, only the embedding model and small fits, and two workers share
    two cores: each computing on two threads makes them wait on each other (measured: the tier took 156 s
    with the libraries' default threads, 142 s with one per worker). A run that holds a ``system`` test keeps
    the default threads, which the real models' decoding wants."""
    if not session.items or any(item.get_closest_marker("system") for item in session.items):
        return
    import torch
    from threadpoolctl import threadpool_limits

    torch.set_num_threads(1)
    _ONE_THREAD.append(threadpool_limits(limits=1))
