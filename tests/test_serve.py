"""`agentic-rag serve`: a packaged model behind llama.cpp's server, whose log-probabilities give the
draft's confidence signals and the verifier's P(yes) as the in-process model's scores do."""

from __future__ import annotations

import importlib.util
import signal
import socket

import pytest
from langchain_core.messages import HumanMessage
from typer.testing import CliRunner

from agentic_rag import usable_cpus
from agentic_rag.cli import app
from agentic_rag.gate.judge import yes_probability
from agentic_rag.llm import serve
from agentic_rag.llm.logprobs import RETURNED
from agentic_rag.llm.packaged import PACKAGED_MODELS
from agentic_rag.runner import answer
from agentic_rag.testing.processes import serve_stopped_by
from agentic_rag.testing.records import record
from agentic_rag.testing.servers import free_port

runner = CliRunner()


def test_serve_without_llama_cpp_is_one_line_naming_the_install(monkeypatch, tmp_path):
    monkeypatch.setattr(serve.importlib.util, "find_spec", lambda name: None)
    res = runner.invoke(app, ["serve", "-o", f"MODEL_CACHE_DIR={tmp_path}"])
    assert res.exit_code == 2 and "Traceback" not in res.output
    assert "llama-cpp-python[server]" in res.output
    assert list(tmp_path.iterdir()) == []  # nothing assembled for a server that cannot start


def test_serve_on_a_port_another_process_holds_is_one_line_before_anything_is_assembled(monkeypatch, tmp_path):
    monkeypatch.setattr(serve.importlib.util, "find_spec", lambda name: object())  # as if llama.cpp were installed
    with socket.socket() as held:
        held.bind(("127.0.0.1", 0))
        held.listen()
        port = held.getsockname()[1]
        res = runner.invoke(app, ["serve", "--port", str(port), "-o", f"MODEL_CACHE_DIR={tmp_path}"])
    assert res.exit_code == 2 and "Traceback" not in res.output
    assert f"cannot listen on 127.0.0.1:{port}" in res.output and "choose another --port" in res.output
    assert list(tmp_path.iterdir()) == []


def test_serve_names_the_packaged_models_when_given_another():
    res = runner.invoke(app, ["serve", "--model", "qwen-7b"])
    assert res.exit_code == 2 and "no packaged model 'qwen-7b'" in res.output
    assert "packaged-1.5b (qwen2.5-coder-1.5b)" in res.output


def test_a_model_is_served_under_its_short_name_by_either_name():
    for name in ("packaged-1.5b", "qwen2.5-coder-1.5b"):
        assert serve.packaged(name) is PACKAGED_MODELS["packaged-1.5b"]
    cmd = serve.server_command(serve.Path("m.gguf"), "qwen2.5-coder-1.5b", "127.0.0.1", 8765, 4096)
    assert cmd[1:3] == ["-m", "llama_cpp.server"] and cmd[cmd.index("--model_alias") + 1] == "qwen2.5-coder-1.5b"
    # every usable core decodes: the server's own default is half of os.cpu_count(), one thread on 2 cores
    assert cmd[cmd.index("--n_threads") + 1] == cmd[cmd.index("--n_threads_batch") + 1] == str(usable_cpus())


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGHUP, signal.SIGKILL, signal.SIGINT],
                         ids=lambda sig: sig.name)
def test_serve_stopped_by_a_signal_takes_its_server_with_it(sig, tmp_path):
    """`agentic-rag serve --port P &`, then `kill` of that process alone: the server it started must not
    stay behind, re-parented to init and holding the port. SIGTERM/SIGHUP: serve stops it; SIGKILL: the
    kernel does (PR_SET_PDEATHSIG); SIGINT: as Ctrl-C in a terminal. Python's http.server stands in for
    llama.cpp's server (llama-cpp-python is not installed here); the command and its code are serve's."""
    code, closed_after_s, stderr = serve_stopped_by(sig, tmp_path)
    assert closed_after_s is not None, "the server outlived `serve`"
    assert code == (130 if sig == signal.SIGINT else -sig) and "Traceback" not in stderr


@pytest.mark.model
@pytest.mark.skipif(importlib.util.find_spec("llama_cpp") is None,
                    reason="llama-cpp-python is not installed: pip install 'llama-cpp-python[server]'")
def test_the_served_packaged_0_5b_gives_the_drafts_signals_and_the_verifiers_split(agent_settings, tmp_path):
    model = PACKAGED_MODELS["packaged"]
    proc, url = serve.start_server(model, tmp_path / "cache", free_port(), tmp_path / "server.log")
    try:
        s = agent_settings.replace(LLM_BACKEND="openai", OPENAI_BASE_URL=url, LLM_MODEL=model.short_name,
                                   OPENAI_API_KEY="none", MAX_OUTPUT_TOKENS=24)
        result = answer("agent", s, record=record())
        split, _ = yes_probability([HumanMessage("Is Paris the capital of France? Answer yes or no.")], s, "verify")
    finally:
        proc.terminate()
        proc.wait(timeout=30)
    assert result.signals["logprobs"] == RETURNED
    assert result.signals["lp_min"] <= result.signals["lp_mean"] <= 0.0 < result.signals["p_first"] <= 1.0
    assert split > 0.5  # read from the first token's top_logprobs, not a decoded word
