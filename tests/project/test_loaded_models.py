"""The suite's memory rule: between test files a worker keeps only the suite's own model loaded."""

from __future__ import annotations

import threading

from agentic_rag.llm import local
from agentic_rag.llm.dtype import choose_dtype
from agentic_rag.llm.packaged import DEFAULT_MODEL, FAST_MODEL
from testkit.loaded_models import release_all_but_the_suites_model


def test_only_the_suites_model_in_autos_dtype_stays_loaded(monkeypatch, tmp_path):
    auto = choose_dtype("auto").dtype
    other = "bfloat16" if auto == "float32" else "float32"
    entry = (object(), object(), threading.Lock())
    suites = (str(tmp_path / FAST_MODEL.converted_dir), auto)
    loaded = {suites: entry, (str(tmp_path / FAST_MODEL.converted_dir), other): entry,
              (str(tmp_path / DEFAULT_MODEL.converted_dir), auto): entry}
    others = sorted(set(loaded) - {suites})
    monkeypatch.setattr(local, "_LOADED", loaded)
    assert sorted(release_all_but_the_suites_model()) == others
    assert list(local._LOADED) == [suites]
    assert release_all_but_the_suites_model() == []
