"""Children end with their parent (agentic_rag/children.py): every process the project starts goes
through ``start_child``, and stopping one stops its whole process group. `serve` stopped by a signal:
tests/system/test_serve.py."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

from agentic_rag.children import start_child, stop_child
from agentic_rag.llm import serve
from agentic_rag.llm.packaged import PACKAGED_MODELS
from testkit.processes import port_open, seconds_until_ended
from testkit.servers import free_port

PACKAGE = Path(__file__).resolve().parents[2] / "agentic_rag"
STARTS_A_CHILD = re.compile(r"subprocess\.(Popen|call|check_call)\(|os\.(fork|spawn\w*|posix_spawn\w*)\(")


def test_every_child_the_project_starts_goes_through_start_child():
    starts = [f"{path.relative_to(PACKAGE)}:{n}" for path in PACKAGE.rglob("*.py") if path.name != "children.py"
              for n, line in enumerate(path.read_text().splitlines(), 1) if STARTS_A_CHILD.search(line)]
    assert starts == []


def test_start_server_runs_the_server_in_a_group_of_its_own_that_stop_child_ends(monkeypatch, tmp_path):
    (tmp_path / "v1").mkdir()
    (tmp_path / "v1" / "models").write_text("{}")  # what start_server waits for
    monkeypatch.setattr(serve, "prepared_command", lambda model, cache, host, port, n_ctx: [
        sys.executable, "-m", "http.server", str(port), "--bind", host, "--directory", str(tmp_path)])
    port = free_port()
    proc, url = serve.start_server(PACKAGED_MODELS["packaged"], tmp_path, port, tmp_path / "server.log", timeout_s=60)
    try:
        assert url == f"http://127.0.0.1:{port}/v1" and os.getpgid(proc.pid) == proc.pid != os.getpgid(0)
    finally:
        code = stop_child(proc)
    assert code is not None and not port_open(port)


def test_stop_child_ends_what_the_child_started_too():
    grandchild = "import subprocess, sys, time; p = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(300)']); " \
                 "print(p.pid, flush=True); time.sleep(300)"
    proc = start_child([sys.executable, "-c", grandchild], stdout=subprocess.PIPE, text=True)
    pid = int(proc.stdout.readline())
    stop_child(proc)
    assert proc.returncode is not None and seconds_until_ended([pid], timeout=5) is not None
