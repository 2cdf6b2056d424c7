import json

import pytest

from agentic_rag.configuration import Settings, SettingsError, parse_overrides


def test_defaults_match_the_design():
    s = Settings.load()
    assert (s.RETRIEVAL_POOL_K, s.RETRIEVAL_K, s.MMR_LAMBDA) == (24, 8, 0.45)
    assert (s.MAX_CONTEXT_TOKENS, s.MAX_OUTPUT_TOKENS, s.TEMPERATURE) == (1000, 160, 0.0)


def test_priority_preset_then_env_then_override(tmp_path, monkeypatch):
    preset = tmp_path / "p.json"
    preset.write_text(json.dumps({"RETRIEVAL_K": 5, "MMR_LAMBDA": 0.9, "RRF_K": 10}))
    monkeypatch.setenv("AGENTIC_RAG_MMR_LAMBDA", "0.7")
    s = Settings.load(preset=preset, overrides=["rrf_k=20"])
    assert s.RETRIEVAL_K == 5  # from the preset
    assert s.MMR_LAMBDA == 0.7  # env beats preset
    assert s.RRF_K == 20  # override beats both, key case-insensitive


def test_named_preset_and_override_types():
    s = Settings.load(preset="lean", overrides=["MAX_OUTPUT_TOKENS=32", "LLM_BACKEND=openai"])
    assert s.MAX_OUTPUT_TOKENS == 32 and s.LLM_BACKEND == "openai"
    assert parse_overrides(["A=True", "B=[1, 2]", "C=text"]) == {"A": True, "B": [1, 2], "C": "text"}


def test_every_shipped_preset_loads_by_name_even_with_a_dot_in_it():
    from agentic_rag.configuration import PRESETS_DIR

    names = sorted(p.stem for p in PRESETS_DIR.glob("*.json"))
    assert "qwen-1.5b" in names
    for name in names:
        Settings.load(preset=name)
    assert Settings.load(preset="qwen-1.5b").LLM_MODEL == "packaged-1.5b"


def test_unknown_key_suggests_the_close_one():
    with pytest.raises(SettingsError, match="RETRIEVAL_K"):
        Settings.load(overrides=["RETRIEVAL_KK=3"])


def test_bad_value_names_the_setting():
    with pytest.raises(SettingsError, match="MMR_LAMBDA"):
        Settings.load(overrides=["MMR_LAMBDA=1.5"])
    with pytest.raises(SettingsError, match="LLM_BACKEND"):
        Settings.load(overrides=["LLM_BACKEND=magic"])
    with pytest.raises(SettingsError, match="KEY=VALUE"):
        Settings.load(overrides=["RETRIEVAL_K"])
    with pytest.raises(SettingsError, match="unknown preset"):
        Settings.load(preset="no-such-preset")


def test_runnable_config_accepts_plain_keys_and_objects():
    s = Settings.from_runnable_config({"configurable": {"retrieval_k": 3, "thread_id": "x"}})
    assert s.RETRIEVAL_K == 3
    obj = Settings.load(overrides={"RETRIEVAL_K": 4})
    assert Settings.from_runnable_config({"configurable": {"settings": obj}}) is obj


def test_secret_is_masked_in_dumps():
    s = Settings.load(overrides={"OPENAI_API_KEY": "sk-secret"})
    assert s.public_dump()["OPENAI_API_KEY"] == "***" and s.openai_api_key == "sk-secret"


def test_the_design_runbook_overrides_are_all_accepted():
    runbook = ("MAX_ROUNDS=1 USE_RERANKER=False USE_HYDE=False RETRIEVAL_POOL_K=24 RETRIEVAL_K=8 MMR_LAMBDA=0.45 "
               "OVERLAP_TAU=0.42 MAX_CONTEXT_TOKENS=1000 MAX_OUTPUT_TOKENS=160 ANCHOR_BONUS=0.07 "
               "FACTOID_ONE_SHOT_RETRIEVAL=True FACTOID_MIN_TOKENS_LEFT=300 JUDGE_POLICY=gray_zone "
               "JUDGE_MAX_CALLS_PER_Q=1 USE_FACTOID_FINALIZER=True")
    s = Settings.load(overrides=runbook.split())
    assert s.MAX_ROUNDS == 1 and s.JUDGE_POLICY == "gray_zone" and s.ANCHOR_BONUS == 0.07


# --- settings mistakes are impossible to miss, secrets are never shown ---------------------------


def test_a_numeric_secret_is_a_key_and_is_never_echoed(monkeypatch):
    monkeypatch.setenv("AGENTIC_RAG_OPENAI_API_KEY", "31415926535")
    assert Settings.load().openai_api_key == "31415926535"  # text, not a number that fails validation
    assert Settings.load(overrides=["EVAL_JUDGE_API_KEY=2718281828"]).EVAL_JUDGE_API_KEY.get_secret_value() == "2718281828"
    with pytest.raises(SettingsError, match="OPENAI_API_KEY") as err:
        Settings.load(overrides={"OPENAI_API_KEY": 31415926535})
    assert "31415926535" not in str(err.value) and "hidden" in str(err.value)
    assert "31415926535" not in json.dumps(Settings.load().public_dump())


def test_the_standard_openai_variables_are_fallbacks_and_the_prefixed_ones_win(monkeypatch):
    monkeypatch.setenv("OPENAI_BASE_URL", "http://127.0.0.1:8011/v1")
    monkeypatch.setenv("OPENAI_API_KEY", "sk-from-env")
    s = Settings.load()
    assert s.OPENAI_BASE_URL == "http://127.0.0.1:8011/v1" and s.openai_api_key == "sk-from-env"
    monkeypatch.setenv("AGENTIC_RAG_OPENAI_BASE_URL", "http://127.0.0.1:9000/v1")
    assert Settings.load().OPENAI_BASE_URL == "http://127.0.0.1:9000/v1"


def test_an_unprefixed_setting_in_the_environment_is_named_in_a_warning(monkeypatch):
    from typer.testing import CliRunner

    from agentic_rag.cli import app
    from agentic_rag.configuration import ignored_env_names

    monkeypatch.setenv("LLM_BACKEND", "openai")
    monkeypatch.setenv("EVAL_JUDGE_API_KEY", "sk-unprefixed-secret")
    monkeypatch.setenv("OPENAI_BASE_URL", "http://127.0.0.1:8011/v1")  # honoured: no warning
    assert ignored_env_names() == ["LLM_BACKEND", "EVAL_JUDGE_API_KEY"]
    res = CliRunner().invoke(app, ["settings"])
    assert res.exit_code == 0
    assert "LLM_BACKEND is ignored" in res.stderr and "AGENTIC_RAG_LLM_BACKEND" in res.stderr
    assert "stays 'local'" in res.stderr
    assert "EVAL_JUDGE_API_KEY is ignored" in res.stderr and "sk-unprefixed-secret" not in res.output
    monkeypatch.setenv("AGENTIC_RAG_LLM_BACKEND", "openai")
    assert "LLM_BACKEND" not in ignored_env_names()


def test_the_openai_backend_without_a_server_is_a_one_line_error(monkeypatch):
    from typer.testing import CliRunner

    from agentic_rag.cli import app

    for name in ("OPENAI_BASE_URL", "OPENAI_API_KEY", "AGENTIC_RAG_OPENAI_BASE_URL", "AGENTIC_RAG_OPENAI_API_KEY"):
        monkeypatch.delenv(name, raising=False)
    res = CliRunner().invoke(app, ["ask", "--dataset", "example", "--id", "0", "-o", "LLM_BACKEND=openai"])
    assert res.exit_code == 2 and "needs OPENAI_BASE_URL" in res.stderr and res.exception.__class__ is SystemExit
