"""The codemod that nests flat settings reads (scripts/nest_settings_access.py)."""

from __future__ import annotations

import pytest

from scripts import nest_settings_access as codemod

SOURCE = '''\
import os
from agentic_rag import policy

def f(settings, config, options, model):
    k = settings.RETRIEVAL_K + settings.retrieval.RETRIEVAL_K  # « a non-ASCII comment » settings.MAX_ROUNDS
    s = Settings.from_runnable_config(config).WALL_TIME_S
    text = f"{settings.WALL_TIME_S:.0f} s, {'RETRIEVAL_K'}: {model.settings.RETRIEVAL_K}"
    cut = settings.replace(RETRIEVAL_K=3, **{"MAX_ROUNDS": 1})["MAX_ROUNDS"]
    long = (settings
            .TOKEN_BUDGET)
    flat = settings.MAX_ROUNDS  # keep-flat
    policy.MAX_ROUNDS, os.WALL_TIME_S, Settings.RETRIEVAL_K
    budget = settings.budget
    both = budget.MAX_ROUNDS
    names = Settings.model_fields, type(model.settings).model_fields["WALL_TIME_S"], type(options).model_fields
    settings.RETRIEVAL_K = 3
    return "settings.RETRIEVAL_K"
'''

EXPECTED = '''\
import os
from agentic_rag import policy

def f(settings, config, options, model):
    k = settings.retrieval.RETRIEVAL_K + settings.retrieval.RETRIEVAL_K  # « a non-ASCII comment » settings.MAX_ROUNDS
    s = Settings.from_runnable_config(config).budget.WALL_TIME_S
    text = f"{settings.budget.WALL_TIME_S:.0f} s, {'RETRIEVAL_K'}: {model.settings.retrieval.RETRIEVAL_K}"
    cut = settings.replace(RETRIEVAL_K=3, **{"MAX_ROUNDS": 1})["MAX_ROUNDS"]
    long = (settings
            .budget.TOKEN_BUDGET)
    flat = settings.MAX_ROUNDS  # keep-flat
    policy.MAX_ROUNDS, os.WALL_TIME_S, Settings.RETRIEVAL_K
    budget = settings.budget
    both = budget.MAX_ROUNDS
    names = Settings.flat_fields(), type(model.settings).flat_fields()["WALL_TIME_S"], type(options).model_fields
    settings.RETRIEVAL_K = 3
    return "settings.RETRIEVAL_K"
'''


def test_rewrites_reads_only_and_is_idempotent():
    new, count, stores = codemod.rewrite(SOURCE)
    assert new == EXPECTED
    assert count == 7 and stores == [16]  # the assignment is reported, not rewritten
    assert codemod.rewrite(new) == (new, 0, [16])


def test_a_settings_stand_in_built_by_flat_names_is_reported(tmp_path, capsys):
    path = tmp_path / "stand_in.py"
    path.write_text("from types import SimpleNamespace\n\nfake = SimpleNamespace(EMBEDDING_MODEL='m', other=1)\n"
                    "ok = SimpleNamespace(other=1)\n")
    assert codemod.main(["--check", str(path)]) == 0  # nothing to rewrite, but said
    assert f"{path}:3: a settings stand-in with flat names" in capsys.readouterr().err


def test_a_rewrite_that_would_change_the_code_is_refused(monkeypatch):
    monkeypatch.setattr(codemod, "apply", lambda source, edits: source.replace("RETRIEVAL_K", "RETRIEVAL_POOL_K"))
    with pytest.raises(ValueError, match="changed more than the settings reads"):
        codemod.rewrite("x = settings.RETRIEVAL_K\n")


def test_check_mode_changes_nothing_and_says_what_would_change(tmp_path, capsys):
    path = tmp_path / "ext.py"
    path.write_text("def f(settings):\n    return settings.MAX_ROUNDS\n")
    assert codemod.main(["--check", str(path)]) == 1
    assert path.read_text().endswith("settings.MAX_ROUNDS\n") and "1 settings reads in 1 files would change" in capsys.readouterr().out
    assert codemod.main([str(path)]) == 0 and path.read_text().endswith("settings.budget.MAX_ROUNDS\n")
    assert codemod.main(["--check", str(path)]) == 0


def test_the_repository_reads_settings_by_section():
    """New code reads settings.section.NAME; after a merge that brought flat reads back, run the script."""
    assert codemod.main(["--check"]) == 0, "run: python scripts/nest_settings_access.py"
