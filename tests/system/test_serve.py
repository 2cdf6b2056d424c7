"""`agentic-rag serve`: a packaged model behind llama.cpp's server, whose log-probabilities give the
draft's confidence signals and the verifier's P(yes) as the in-process model's scores do."""

from __future__ import annotations

import importlib.util
import json
import signal
import socket
import subprocess
import sys
import threading
import time
import types
import urllib.request

import pytest
from langchain_core.messages import HumanMessage
from typer.testing import CliRunner

from agentic_rag import usable_cpus
from agentic_rag.cli import app
from agentic_rag.llm import serve
from agentic_rag.llm.choices import yes_probability
from agentic_rag.llm.logprobs import RETURNED
from agentic_rag.llm.packaged import PACKAGED_MODELS
from agentic_rag.runner import answer
from testkit.processes import (
    CRASHING_SERVER,
    SUITE_SETTINGS,
    port_open,
    serve_stopped_by,
    serve_with,
    start,
    wait_until,
)
from testkit.records import record
from testkit.servers import free_port

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


# --- the model server on every processor, and when it dies ------------------------------------------------

CPUINFO = "processor\t: 0\nvendor_id\t: GenuineIntel\nflags\t\t: fpu sse2 avx2 avx512f avx512_bf16 {amx}\n\n"
AMX = CPUINFO.format(amx="amx_bf16 amx_tile amx_int8")
NO_AMX = CPUINFO.format(amx="")
LLAMA_CPP = pytest.mark.skipif(importlib.util.find_spec("llama_cpp") is None,
                               reason="llama-cpp-python is not installed: pip install 'llama-cpp-python[server]'")


def _serve_on(cpuinfo: str, monkeypatch, tmp_path, *args: str) -> tuple[list[str], object]:
    """`serve` on a processor whose /proc/cpuinfo reads ``cpuinfo``: the command it starts (a child that
    exits at once stands in for it) and the CLI's result. Nothing is installed or assembled."""
    (tmp_path / "cpuinfo").write_text(cpuinfo)
    monkeypatch.setattr(serve, "CPUINFO", tmp_path / "cpuinfo")
    monkeypatch.setattr(serve, "require_server", lambda host, port: None)
    monkeypatch.setattr(serve, "gguf_for_serving", lambda cache, model: serve.Path("m.gguf"))
    started = []

    def start_child(cmd, **popen):
        started.append(cmd)
        return subprocess.Popen([sys.executable, "-c", "print('bye')"], **popen)

    monkeypatch.setattr("agentic_rag.children.start_child", start_child)
    return started, runner.invoke(app, ["serve", *args])


def test_serve_turns_llama_cpps_weight_repacking_off_where_the_processor_has_amx(monkeypatch, tmp_path):
    """On a processor with AMX, llama.cpp repacked the Q4_K/Q6_K weights into its AMX buffer and its server
    died on the first token; serve reads the flags and starts the server without repacking there, and says so."""
    (cmd,), res = _serve_on(AMX, monkeypatch, tmp_path)
    assert cmd[1:3] == ["-m", "agentic_rag.llm.llama_server"] and cmd[cmd.index("--model") + 1] == "m.gguf"
    assert "weight repacking off (this processor has AMX (amx_bf16, amx_int8, amx_tile)" in res.output
    (cmd,), res = _serve_on(NO_AMX, monkeypatch, tmp_path)
    assert cmd[1:3] == ["-m", "llama_cpp.server"] and "weight repacking on (no AMX on this processor)" in res.output
    (cmd,), res = _serve_on(AMX, monkeypatch, tmp_path, "--repack", "on")  # the user's choice wins
    assert cmd[1:3] == ["-m", "llama_cpp.server"] and "weight repacking on (--repack on)" in res.output
    assert serve.weight_repacking("off", NO_AMX) == (False, "--repack off")
    assert serve.amx_flags("") == [] and serve.weight_repacking("auto", "")[0]  # not Linux: nothing to see
    res = runner.invoke(app, ["serve", "--repack", "maybe"])
    assert res.exit_code == 2 and "--repack maybe: choose auto, on, off" in res.output and "Traceback" not in res.output


def test_the_no_repack_server_sets_llama_cpps_switch_or_says_it_has_none(monkeypatch):
    """``agentic_rag.llm.llama_server`` sets ``use_extra_bufts`` off in the parameters every model load
    starts from; a llama-cpp-python without that field would ignore the setting silently, so it is refused."""
    from agentic_rag.llm import llama_server

    class Params:  # a ctypes structure of an older llama-cpp-python: no use_extra_bufts
        _fields_ = [("use_mmap", bool)]

    old = types.SimpleNamespace(llama_model_params=Params, llama_model_default_params=Params)
    monkeypatch.setitem(sys.modules, "llama_cpp", types.SimpleNamespace(__version__="0.3.1", llama_cpp=old))
    monkeypatch.setitem(sys.modules, "llama_cpp.llama_cpp", old)
    with pytest.raises(llama_server.NoRepackSwitch, match="llama-cpp-python 0.3.1 cannot turn .* upgrade it"):
        llama_server.without_repacking()


@LLAMA_CPP
def test_the_no_repack_server_loads_models_without_extra_buffer_types(monkeypatch):
    import llama_cpp.llama_cpp as native

    from agentic_rag.llm import llama_server

    monkeypatch.setattr(native, "llama_model_default_params", native.llama_model_default_params)  # restored after
    assert native.llama_model_default_params().use_extra_bufts is True  # llama.cpp's default: repacking on
    llama_server.without_repacking()
    assert native.llama_model_default_params().use_extra_bufts is False


def test_serve_says_how_its_model_server_died_with_its_last_log_lines_and_exits_3():
    """A model server that dies (llama.cpp on an AMX processor: SIGSEGV on the first token) left serve to exit
    245 after uvicorn's last "GET /v1/models 200 OK", saying nothing; it now says the signal and the last lines."""
    proc = serve_with([sys.executable, "-c", CRASHING_SERVER], free_port())
    _, stderr = proc.communicate(timeout=120)
    assert proc.returncode == 3 and "Traceback" not in stderr, (proc.returncode, stderr[-400:])
    assert serve.SERVER_DIED_EXIT == 3  # the status serve --help and the README document
    assert "error: llama.cpp's server died of SIGSEGV (signal 11)" in stderr.splitlines()[-1]
    tail = stderr[stderr.index("its last 12 log lines:"):]
    assert "| amx repack tensor blk.0.attn_q.weight of type q4_K" in tail and "| log line 29" in tail
    assert "log line 28" not in tail and "log line 0" in stderr  # the whole log was shown as it came


@pytest.mark.model
@LLAMA_CPP
def test_serve_answers_a_real_completion_on_this_processor(tmp_path):
    """`agentic-rag serve` as a user runs it, then one real completion: on an AMX processor llama.cpp's
    server died on it (SIGSEGV) while /v1/models still answered. Whatever the processor, it answers."""
    port = free_port()
    proc = start([sys.executable, "-m", "agentic_rag.cli", "serve", "--model", "packaged", "--port", str(port),
                  "--context-tokens", "2048"], keep=SUITE_SETTINGS)
    said: list[str] = []  # read as it comes: the server's load log alone fills a pipe
    reader = threading.Thread(target=lambda: said.append(proc.stderr.read()), daemon=True)
    reader.start()
    try:
        assert wait_until(lambda: _models_answer(port), proc, timeout=300), "serve did not answer /v1/models"
        request = {"model": "qwen2.5-coder-0.5b", "max_tokens": 8, "temperature": 0,
                   "messages": [{"role": "user", "content": "What is the capital of France? One word."}]}
        req = urllib.request.Request(f"http://127.0.0.1:{port}/v1/chat/completions", data=json.dumps(request).encode(),
                                     headers={"content-type": "application/json"})
        with urllib.request.urlopen(req, timeout=300) as resp:
            reply = json.load(resp)
        assert reply["choices"][0]["message"]["content"].strip() and reply["usage"]["completion_tokens"] >= 1
        time.sleep(0.5)
        assert proc.poll() is None and port_open(port)  # still serving after its first completion
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=60)
        reader.join(timeout=10)
    stderr = "".join(said)
    assert serve.weight_repacking()[1] in stderr  # the start-up line says which switch, and why
    if serve.amx_flags(serve._cpuinfo()):
        assert "weight repacking off" in stderr


def _models_answer(port: int) -> bool:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/v1/models", timeout=5) as resp:
            return resp.status == 200
    except OSError:
        return False
