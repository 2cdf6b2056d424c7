"""LLM layer against the real packaged model: no mocks, few tokens per call.

The converted model lives in the default user cache (shared with real runs), so only the very first
run on a machine pays the ~1 min conversion.
"""

from __future__ import annotations

import dataclasses
import json
import os
import sys
import time
import warnings
from pathlib import Path

import pytest
from langchain_core.messages import AIMessage, HumanMessage, SystemMessage

from agentic_rag.configuration import Settings
from agentic_rag.llm import packaged
from agentic_rag.llm.factory import count_tokens, get_chat_model, get_tokenizer
from agentic_rag.llm.local import ChatLocalTransformers
from agentic_rag.llm.packaged import (
    FAST_MODEL,
    ModelIntegrityError,
    assemble_gguf,
    ensure_converted,
    resolve_local_model,
    sha256_file,
    verify_file,
)
from agentic_rag.llm.usage import UsageLedger, invoke_llm
from testkit.servers import console_script, free_port, running

QUESTION = [
    SystemMessage("Answer in as few words as possible."),
    HumanMessage("What is the capital of France?"),
]
LONG_REQUEST = [HumanMessage("Write a long story about a dragon who learns to cook.")]


@pytest.fixture(scope="session")
def settings() -> Settings:
    return Settings.load(overrides={"LLM_BACKEND": "local", "LLM_MODEL": "packaged"})


@pytest.fixture(scope="session")
def model_dir(settings) -> Path:
    return ensure_converted(settings.paths.MODEL_CACHE_DIR, FAST_MODEL)


@pytest.fixture(scope="session")
def local_llm(settings, model_dir) -> ChatLocalTransformers:
    return get_chat_model(settings, max_tokens=12)


@pytest.fixture(scope="session")
def openai_server(model_dir, tmp_path_factory):
    """A real OpenAI-compatible server (`transformers serve`) pinned to the converted folder."""
    port = free_port()
    # /v1/models scans the HF hub cache and answers 500 if that folder does not exist.
    hub_cache = tmp_path_factory.mktemp("hf-hub")
    env = {**os.environ, "HF_HUB_CACHE": str(hub_cache), "HF_HUB_OFFLINE": "1"}
    transformers = console_script("transformers")
    assert transformers, f"transformers' CLI is not installed in the environment of {sys.executable}"
    cmd = [*transformers, "serve", "--host", "127.0.0.1", "--port", str(port), str(model_dir)]
    base_url = f"http://127.0.0.1:{port}/v1"
    with running(cmd, base_url + "/models", tmp_path_factory.mktemp("serve") / "serve.log", 180, env=env):
        yield base_url


# --- integrity ---------------------------------------------------------------------------------


def test_verify_file_accepts_exact_and_rejects_corrupt(tmp_path):
    path = tmp_path / "model.gguf"
    path.write_bytes(b"GGUF" + bytes(range(256)) * 4)
    size, sha = path.stat().st_size, sha256_file(path)
    verify_file(path, size, sha)

    with pytest.raises(ModelIntegrityError, match=f"expected sha256 {sha}, got [0-9a-f]{{64}}"):
        path.write_bytes(b"GGUX" + bytes(range(256)) * 4)
        verify_file(path, size, sha)
    with pytest.raises(ModelIntegrityError, match=f"expected {size:,} bytes, got {size - 1:,}"):
        path.write_bytes((b"GGUF" + bytes(range(256)) * 4)[:-1])
        verify_file(path, size, sha)


def test_assemble_from_bad_parts_raises_and_leaves_nothing(tmp_path, monkeypatch):
    parts = [tmp_path / "p1.bin", tmp_path / "p2.bin"]
    for part in parts:
        part.write_bytes(b"not a model")
    monkeypatch.setattr(packaged, "part_paths", lambda model: parts)
    cache = tmp_path / "cache"
    with pytest.raises(ModelIntegrityError, match=f"expected {FAST_MODEL.size:,} bytes, got 22"):
        assemble_gguf(cache, FAST_MODEL)
    assert [p.name for p in cache.iterdir() if not p.name.endswith(".lock")] == []


@pytest.mark.model
def test_assembled_gguf_has_pinned_size_and_sha(tmp_path):
    path = assemble_gguf(tmp_path, FAST_MODEL)  # the cache keeps only the converted folder
    assert path.stat().st_size == FAST_MODEL.size
    assert sha256_file(path) == FAST_MODEL.sha256


@pytest.mark.model
def test_conversion_is_done_once(settings, model_dir):
    start = time.perf_counter()
    assert ensure_converted(settings.paths.MODEL_CACHE_DIR, FAST_MODEL) == model_dir
    assert time.perf_counter() - start < 1.0
    marker = json.loads((model_dir / packaged.CONVERTED_MARKER).read_text())
    assert marker["source_key"] == FAST_MODEL.sha256
    assert (model_dir / "model.safetensors").is_file() and (model_dir / "tokenizer.json").is_file()
    # the cache holds the converted folder alone, not a second copy of the model as a GGUF
    assert not (Path(settings.paths.MODEL_CACHE_DIR) / FAST_MODEL.gguf_name).exists()
    assert resolve_local_model(settings) == model_dir
    assert resolve_local_model(settings.replace(LLM_MODEL=str(model_dir))) == model_dir


def test_a_missing_part_package_says_how_to_install_it(tmp_path):
    spec = dataclasses.replace(
        packaged.PACKAGED_MODELS["packaged-1.5b"], part_modules=("agentic_rag_no_such_part_package",)
    )
    with pytest.raises(ModelIntegrityError, match=r"agentic-rag-no-such-part-package is not installed.*'packaged-1\.5b'.*reinstall"):
        assemble_gguf(tmp_path, spec)  # both generators are plain dependencies now
    with pytest.raises(ModelIntegrityError, match=r"pip install 'agentic-rag\[some-extra\]'"):
        assemble_gguf(tmp_path, dataclasses.replace(spec, extra="some-extra"))


def test_every_packaged_model_names_its_own_files(settings, tmp_path):
    specs = list(packaged.PACKAGED_MODELS.values())
    for field in ("name", "gguf_name", "sha256", "converted_dir", "probe_file"):
        assert len({getattr(s, field) for s in specs}) == len(specs), field
    assert all(len(s.sha256) == 64 and s.size > 0 and s.part_modules for s in specs)
    assert packaged.packaged_model_for_key(FAST_MODEL.sha256) is FAST_MODEL
    # the default model is the one the default settings generate with
    assert packaged.PACKAGED_MODELS[Settings.load(preset="default").llm.LLM_MODEL] is packaged.DEFAULT_MODEL
    assert packaged.packaged_model_for_key("0" * 64) is None


def test_missing_model_path_is_a_clear_error(settings, tmp_path):
    with pytest.raises(FileNotFoundError, match="does not exist"):
        resolve_local_model(settings.replace(LLM_MODEL=str(tmp_path / "nope.gguf")))


# --- local backend -----------------------------------------------------------------------------


@pytest.mark.model
def test_local_answers_deterministically_with_tokenizer_usage(local_llm):
    first, second = local_llm.invoke(QUESTION), local_llm.invoke(QUESTION)
    assert first.content == second.content
    assert "paris" in first.content.lower()
    assert first.response_metadata["finish_reason"] == "stop"
    assert first.response_metadata["model_name"] == "qwen2.5-coder-0.5b-instruct-bf16"

    usage = first.usage_metadata
    assert usage["input_tokens"] == local_llm.get_num_tokens_from_messages(QUESTION)
    # The generated ids include the end-of-turn token, which decoding drops from the text.
    assert usage["output_tokens"] == local_llm.get_num_tokens(first.content) + 1
    assert usage["total_tokens"] == usage["input_tokens"] + usage["output_tokens"]


@pytest.mark.model
def test_local_respects_token_cap(settings, local_llm):
    reply = invoke_llm(local_llm, LONG_REQUEST, "cap", UsageLedger(), max_tokens=2)
    assert reply.usage_metadata["output_tokens"] == 2
    assert reply.response_metadata["finish_reason"] == "length"
    short = get_chat_model(settings, max_tokens=3)  # the same weights under another default cap
    reply = short.invoke(LONG_REQUEST)
    assert reply.usage_metadata["output_tokens"] == short.max_new_tokens == 3
    assert reply.response_metadata["finish_reason"] == "length"


@pytest.mark.model
def test_local_stop_strings(local_llm):
    prompt = [HumanMessage("Write the numbers 1 to 10 separated by commas, nothing else.")]
    reply = local_llm.invoke(prompt, stop=["5"])
    assert "5" not in reply.content and "4" in reply.content
    assert reply.response_metadata["finish_reason"] == "stop"


@pytest.mark.model
def test_support_verifier_reads_a_graded_yes_from_one_prefill_of_the_real_model(settings, local_llm):
    from agentic_rag.baug.verifier import verify_messages
    from agentic_rag.llm.choices import yes_probability

    quote = {"sentences": [{"supported": True, "quote": "Paris is the capital and largest city of France."}]}
    right = verify_messages("What is the capital of France?", "Paris", quote, "")
    wrong = verify_messages("What is the capital of France?", "Lyon", quote, "")
    p_right, usage = yes_probability(right, settings, "verify", local_llm)
    p_wrong, _ = yes_probability(wrong, settings, "verify", local_llm)
    assert 0.0 < p_wrong < p_right < 1.0 and p_right > 0.5
    # one prefill: the prompt's tokens and one output token, booked under the stage
    assert usage["verify"]["calls"] == 1 and usage["verify"]["output_tokens"] == 1
    assert usage["verify"]["input_tokens"] == local_llm.get_num_tokens_from_messages(right)
    reply = local_llm.invoke(right, score_choices=["yes", "no"])
    assert reply.content in {"yes", "no"} and abs(sum(reply.response_metadata["choice_probs"].values()) - 1) < 1e-4


@pytest.mark.model
def test_relevance_grader_ranks_the_passage_that_answers_above_an_unrelated_one_with_the_real_model(settings, local_llm):
    from agentic_rag.supervisor.grader import GRADE_STAGE, grade_messages, llm_grades

    question = "What is the capital of France?"
    passages = [{"text": "Paris is the capital and largest city of France."},
                {"text": "France is a country in Western Europe with many cities."},
                {"text": "Tomatoes grow best in warm soil with six hours of sun a day."}]
    s = settings.replace(USE_RERANKER=True, RERANKER_KIND="llm", MAX_LLM_CALLS=8)
    grades, usage = llm_grades(question, passages, {}, s, local_llm)
    # the 0.5B grades in a narrow band (about 1.5-1.7 here), but in the right order:
    # states the answer > same topic > unrelated
    assert 0.0 <= grades[2] < grades[1] < grades[0] <= 3.0
    # one prefill per passage: its prompt tokens and one output token, booked under the grade stage
    assert usage[GRADE_STAGE]["calls"] == 3 and usage[GRADE_STAGE]["output_tokens"] == 3
    expected_in = sum(local_llm.get_num_tokens_from_messages(grade_messages(question, p["text"])) for p in passages)
    assert usage[GRADE_STAGE]["input_tokens"] == expected_in


@pytest.mark.model
def test_chat_models_and_tokenizers_are_cached(settings, local_llm):
    assert get_chat_model(settings, max_tokens=12) is local_llm
    assert get_tokenizer(settings) is local_llm.tokenizer
    assert count_tokens("hello world", settings) == local_llm.get_num_tokens("hello world") == 2


# --- usage ledger ------------------------------------------------------------------------------


def test_ledger_reads_openai_token_usage_fallback():
    ledger = UsageLedger()
    ledger.record("grade", AIMessage("x", usage_metadata={"input_tokens": 3, "output_tokens": 2, "total_tokens": 5}))
    ledger.record(
        "grade",
        AIMessage("y", response_metadata={"token_usage": {"prompt_tokens": 7, "completion_tokens": 1, "total_tokens": 8}}),
    )
    ledger.record("answer", AIMessage("z"))
    assert ledger.calls == 3
    assert ledger.total_tokens == 13
    assert ledger.by_stage["grade"] == {"input_tokens": 10, "output_tokens": 3, "total_tokens": 13, "calls": 2}
    assert ledger.to_dict()["by_stage"]["answer"]["calls"] == 1
    assert json.loads(json.dumps(ledger.to_dict()))["total_tokens"] == 13


# --- openai backend ----------------------------------------------------------------------------


@pytest.mark.model
def test_openai_backend_against_real_server(settings, model_dir, openai_server, local_llm):
    from langchain_openai import ChatOpenAI

    # `transformers serve` pinned to a folder only accepts requests naming that exact path.
    remote = settings.replace(LLM_BACKEND="openai", LLM_MODEL=str(model_dir), OPENAI_BASE_URL=openai_server)
    llm = get_chat_model(remote, max_tokens=8)
    assert isinstance(llm, ChatOpenAI)

    ledger = UsageLedger()
    reply = invoke_llm(llm, QUESTION, "answer", ledger)
    assert "paris" in reply.content.lower()
    assert reply.usage_metadata["input_tokens"] > 0 and reply.usage_metadata["output_tokens"] > 0
    capped = invoke_llm(llm, LONG_REQUEST, "answer", ledger, max_tokens=3)
    assert capped.usage_metadata["output_tokens"] <= 3
    assert capped.response_metadata["finish_reason"] == "length"

    assert ledger.calls == 2
    assert ledger.by_stage["answer"]["total_tokens"] == ledger.total_tokens > 0
    # Same weights, same chat template, greedy: the prompt is tokenized identically.
    assert reply.usage_metadata["input_tokens"] == local_llm.get_num_tokens_from_messages(QUESTION)
    assert count_tokens("hello world", remote) == 2


if __name__ == "__main__":
    sys.exit(pytest.main([__file__, "-q"]))


@pytest.mark.model
def test_llm_cache_replays_identical_calls_with_usage(tmp_path, monkeypatch, model_dir):
    from langchain_core.messages import HumanMessage

    from agentic_rag.configuration import Settings
    from agentic_rag.llm.factory import get_chat_model
    from agentic_rag.llm.local import ChatLocalTransformers
    from agentic_rag.llm.usage import UsageLedger, invoke_llm

    computed = []
    real_generate = ChatLocalTransformers._generate
    monkeypatch.setattr(ChatLocalTransformers, "_generate",
                        lambda self, *a, **k: computed.append(1) or real_generate(self, *a, **k))
    s = Settings.load(overrides={"LLM_CACHE_PATH": str(tmp_path / "llm.sqlite")})
    model = get_chat_model(s)
    assert model.cache is not None and get_chat_model(s) is model
    ledger = UsageLedger()
    msgs = [HumanMessage(content="Name the capital of Italy in one word.")]
    first = invoke_llm(model, msgs, "generation", ledger, max_tokens=6, prompt_state_layer=3)
    with warnings.catch_warnings():
        # a replay must not lean on langchain's deserialisation default, announced to change
        warnings.filterwarnings("error", message="The default value of `allowed_objects`")
        second = invoke_llm(model, msgs, "generation", ledger, max_tokens=6, prompt_state_layer=3)
    assert len(computed) == 1  # the second call was replayed, not computed
    assert first.content == second.content and first.response_metadata == second.response_metadata
    assert ledger.by_stage["generation"]["calls"] == 2
    assert ledger.by_stage["generation"]["total_tokens"] == 2 * first.usage_metadata["total_tokens"]
    assert (tmp_path / "llm.sqlite").stat().st_size > 0
    # the same converted model in another folder is the same model: replayed, not recomputed
    moved = tmp_path / "moved"
    moved.mkdir()
    for f in model_dir.iterdir():
        (moved / f.name).symlink_to(f)
    third = invoke_llm(get_chat_model(s.replace(LLM_MODEL=str(moved))), msgs, "generation", ledger,
                       max_tokens=6, prompt_state_layer=3)
    assert len(computed) == 1 and third.content == first.content


# --- optional LLM judge for evaluation (through the openai backend) ------------------------------


@pytest.mark.model
def test_llm_judge_against_a_real_server(settings, model_dir, openai_server):
    """A real model behind `transformers serve` grades by CRAG's protocol: its reply holds a score."""
    from agentic_rag.eval.judge import judge
    from agentic_rag.eval.llm_judge import llm_judge

    s = settings.replace(EVAL_JUDGE="llm", EVAL_JUDGE_BASE_URL=openai_server, EVAL_JUDGE_MODEL=str(model_dir))
    said = "The capital city is Paris."
    ruled = judge(said, said, "Paris", [], False, question="What is the capital of France?")
    j, usage = llm_judge("What is the capital of France?", "Paris", [], said, ruled, s)
    assert j.label in {"accurate", "incorrect"} and j.rule == "llm_judge"
    assert usage["eval_judge"]["calls"] == 1 and usage["eval_judge"]["total_tokens"] > 0


@pytest.mark.model
def test_eval_workers_send_concurrent_requests_to_an_openai_server(model_dir, openai_server, tmp_path, monkeypatch):
    """The scale-out path for the generator: `eval --workers 2` against an OpenAI-compatible server
    has two questions' calls in flight at once, and every question is answered by the server."""
    import threading

    from agentic_rag.eval.runner import run_eval
    from agentic_rag.llm.remote import RemoteChat
    from testkit.records import toy_dataset as dataset

    in_flight, peak, lock = [0], [0], threading.Lock()
    real = RemoteChat._generate

    def counted(self, *args, **kwargs):  # the real request, counted while it is out
        with lock:
            in_flight[0] += 1
            peak[0] = max(peak[0], in_flight[0])
        try:
            return real(self, *args, **kwargs)
        finally:
            with lock:
                in_flight[0] -= 1

    monkeypatch.setattr(RemoteChat, "_generate", counted)
    data = dataset(tmp_path, 2)  # the small hand-written Oscars record, twice
    remote = Settings.load(overrides={
        "ARTIFACTS_DIR": str(tmp_path / "artifacts"), "LLM_BACKEND": "openai", "LLM_MODEL": str(model_dir),
        "OPENAI_BASE_URL": openai_server, "MAX_OUTPUT_TOKENS": 4,
    })
    res = run_eval(data, "baseline", remote, tmp_path / "run", workers=2, progress=False)
    assert len(res["rows"]) == 2 and res["summary"]["llm_unavailable"] == 0
    assert all(r["llm_calls"] >= 1 and r["tokens"]["total"] > 0 for r in res["rows"])
    assert peak[0] == 2


def test_conversion_asks_transformers_for_dense_weights_so_it_prints_no_dtype_advice(tmp_path, monkeypatch):
    # Left to choose, transformers keeps GGUF blocks packed and warns "Pass `dtype=torch.float32`",
    # advice a user of a one-time bf16 conversion cannot act on; the conversion asks for dequantized
    # weights outright (verified by hand on the packaged 0.5B: no warning, 111 s on a loaded machine).
    import transformers

    seen = {}

    def capture(*args, **kwargs):
        seen.update(kwargs)
        raise RuntimeError("captured")

    monkeypatch.setattr(transformers.AutoTokenizer, "from_pretrained", lambda *a, **k: None)
    monkeypatch.setattr(transformers.AutoModelForCausalLM, "from_pretrained", capture)
    gguf = tmp_path / "m.gguf"
    gguf.write_bytes(b"GGUF")
    with pytest.raises(RuntimeError, match="captured"):
        packaged.convert_gguf(gguf, tmp_path / "out", source_key="k")
    config = seen["quantization_config"]
    assert config.dequantize is True and seen["gguf_file"] == "m.gguf"
    assert not (tmp_path / "out").exists()  # nothing half-written left behind


# --- the dtype, by processor -------------------------------------------------------------------

X86_NO_BF16 = frozenset({"avx2", "fma", "avx512f", "avx512_vnni"})  # e.g. Cascade Lake, Zen 2/3


INTEL, AMD = "GenuineIntel", "AuthenticAMD"


@pytest.mark.parametrize("flags, env, dtype", [
    (frozenset({"avx2", "fma"}), {}, "float32"),  # an AVX2-only host (most laptops, AMD before Zen 4)
    (X86_NO_BF16, {}, "float32"),  # AVX-512 without BF16: bfloat16 is still emulated
    (X86_NO_BF16 | {"avx512_bf16"}, {}, "float32"),  # Intel without AMX (Cooper Lake): float32 answers faster
    (X86_NO_BF16 | {"avx512_bf16", "amx_bf16", "amx_tile"}, {}, "bfloat16"),  # Sapphire Rapids and later
    (frozenset({"avx2", "amx_bf16", "amx_tile"}), {}, "bfloat16"),
    (frozenset({"fp", "asimd", "bf16", "i8mm"}), {}, "bfloat16"),  # Arm with BF16 (Graviton 3, Neoverse V1)
    (frozenset({"fp", "asimd"}), {}, "float32"),
    (frozenset(), {}, "float32"),  # flags unreadable: the dtype that is never emulated
    # a native-bf16 processor capped to AVX2 (how an AVX2 host is approximated) computes in float32
    (X86_NO_BF16 | {"avx512_bf16"}, {"ONEDNN_MAX_CPU_ISA": "AVX2"}, "float32"),
    (X86_NO_BF16 | {"avx512_bf16"}, {"ATEN_CPU_CAPABILITY": "avx2"}, "float32"),
    (X86_NO_BF16 | {"avx512_bf16", "amx_bf16"}, {"ONEDNN_MAX_CPU_ISA": "AVX512_CORE_AMX"}, "bfloat16"),
])
def test_auto_picks_bfloat16_only_where_the_processor_computes_it_natively_and_answers_faster(flags, env, dtype):
    from agentic_rag.llm.dtype import choose_dtype

    choice = choose_dtype("auto", flags, env, vendor=INTEL)
    assert choice.dtype == dtype and choice.reason.startswith("auto: ")
    for named in ("bfloat16", "float32"):  # a named dtype is kept on any processor
        assert choose_dtype(named, flags, env, vendor=INTEL).dtype == named
    with pytest.raises(ValueError, match="LLM_DTYPE must be one of auto, bfloat16, float32"):
        choose_dtype("float16", flags, env)


def test_amds_avx512_bf16_computes_in_bfloat16_and_intels_without_amx_in_float32():
    """The same flags split by maker (benchmarks/dtype.md): an AMD EPYC answered 3.2x faster in bfloat16, the
    Intel Xeon 1.2x slower; a cap below the instructions still means float32 on either."""
    from agentic_rag.llm.dtype import choose_dtype

    flags = X86_NO_BF16 | {"avx512_bf16"}
    amd, intel = choose_dtype("auto", flags, {}, vendor=AMD), choose_dtype("auto", flags, {}, vendor=INTEL)
    assert (amd.dtype, intel.dtype) == ("bfloat16", "float32")
    assert "AMD" in amd.reason and "no AMX" in intel.reason
    assert choose_dtype("auto", flags, {"ONEDNN_MAX_CPU_ISA": "AVX2"}, vendor=AMD).dtype == "float32"
    assert choose_dtype("auto", X86_NO_BF16, {}, vendor=AMD).dtype == "float32"  # Zen 2/3: no BF16 to compute in
    assert choose_dtype("auto", flags, {}, vendor="").dtype == "float32"  # maker unknown: the Intel finding stands


def test_this_machines_flags_are_read_and_name_its_class():
    from agentic_rag.llm.dtype import choose_dtype, cpu_flags, processor_class

    klass = processor_class()
    assert klass["auto_dtype"] == choose_dtype("auto").dtype
    if Path("/proc/cpuinfo").is_file():
        assert cpu_flags() and set(klass["flags"]) <= cpu_flags()
        # bfloat16 only where it is native (float32 also on an Intel processor native without AMX: it answers faster)
        assert klass["auto_dtype"] == "float32" or "no native bf16" not in klass["class"]


@pytest.mark.model
def test_the_local_model_computes_in_the_chosen_dtype_from_one_copy_on_disk(settings, model_dir, local_llm):
    """auto loads the weights in the dtype this processor computes fastest, upcast at load from the one
    bfloat16 folder; each dtype answers, and a replay never crosses dtypes (their numerics differ)."""
    import torch

    from agentic_rag.llm.dtype import choose_dtype
    from agentic_rag.llm.local import _load

    assert local_llm.dtype == choose_dtype("auto").dtype
    assert next(_load(local_llm.model_path, local_llm.dtype)[0].parameters()).dtype == getattr(torch, local_llm.dtype)
    other = "float32" if local_llm.dtype == "bfloat16" else "bfloat16"
    twin = get_chat_model(settings.replace(LLM_DTYPE=other), max_tokens=12)
    assert twin.dtype == other and twin is not local_llm
    assert next(_load(twin.model_path, other)[0].parameters()).dtype == getattr(torch, other)
    assert "paris" in twin.invoke(QUESTION).content.lower()
    assert twin._identifying_params["dtype"] != local_llm._identifying_params["dtype"]
    assert [p.name for p in model_dir.glob("*.safetensors")] == ["model.safetensors"]  # no second copy
