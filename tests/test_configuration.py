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
