"""`--executor ray` on a real Ray cluster of two nodes that this module starts on the loopback network.

The head and the worker node are two `ray start --block` processes, each in its own process group,
reserving one CPU each; the run connects with ``--address`` as a user's would. Ray turns 127.0.0.1
into the machine's network address, so the nodes listen on 127.0.0.2 and 127.0.0.3 (loopback too,
which it keeps). The model is the scripted one: these tests are about where questions run, what
comes back and what is written, not about answers.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

ray = pytest.importorskip("ray", reason="the ray extra is not installed")

from agentic_rag.cli import app  # noqa: E402
from agentic_rag.eval.executors import RayExecutor  # noqa: E402
from agentic_rag.eval.results import read_results  # noqa: E402
from agentic_rag.eval.resume import EvalInterrupted  # noqa: E402
from agentic_rag.eval.runner import run_eval  # noqa: E402
from agentic_rag.telemetry import read_rows  # noqa: E402
from testkit.fakes import HoldingChat  # noqa: E402
from testkit.processes import TIMING  # noqa: E402
from testkit.records import toy_dataset as dataset  # noqa: E402
from testkit.scripted_runs import fake, interrupt_after  # noqa: E402
from testkit.servers import console_script, free_port  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
HEAD_IP, WORKER_IP = "127.0.0.2", "127.0.0.3"
QUESTIONS = 6
runner = CliRunner()


@pytest.fixture(scope="module", autouse=True)
def no_token(tmp_path_factory):
    """No Ray token (the cluster is on loopback, and a token file would land in the user's home), and
    the variables a local instance sets are removed again after these tests."""
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("RAY_AUTH_MODE", "disabled")
        mp.setenv("RAY_USAGE_STATS_ENABLED", "0")
        mp.setenv("RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER", "0")  # what a local instance sets, undone after the module
        yield


def _ray_start(args: list[str], temp: str, log: Path) -> subprocess.Popen:
    env = {**os.environ,
           # the workers import this checkout (and testkit.fakes), whatever is installed
           "PYTHONPATH": os.pathsep.join([str(ROOT), *filter(None, [os.environ.get("PYTHONPATH")])])}
    env.pop("RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER", None)  # a local instance's switch; it forbids a second node
    cmd = [*console_script("ray"), "start", *args, "--num-cpus", "1", "--temp-dir", temp, "--block",
           "--dashboard-agent-listen-port", str(free_port()), "--disable-usage-stats"]
    return subprocess.Popen(cmd, stdout=open(log, "wb"), stderr=subprocess.STDOUT, env=env, start_new_session=True)


def _stop(procs: list[subprocess.Popen], temp: str) -> None:
    """Kill each node's whole process group (raylet, GCS, the actors), then anything else still running
    from this cluster's own temp folder: only processes this module started."""
    for proc in procs:
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        proc.wait()
    for pid in os.listdir("/proc"):
        if pid.isdigit():
            try:
                cmdline = Path(f"/proc/{pid}/cmdline").read_bytes()
            except OSError:
                continue
            if temp.encode() in cmdline:
                try:
                    os.kill(int(pid), signal.SIGKILL)
                except ProcessLookupError:
                    pass


@pytest.fixture(scope="module")
def cluster(tmp_path_factory) -> str:
    if console_script("ray") is None:
        pytest.skip("the ray command is not installed")
    temp = tempfile.mkdtemp(prefix="rt", dir="/tmp")  # Ray's socket paths must stay short
    logs = tmp_path_factory.mktemp("ray-logs")
    port = free_port()
    address = f"{HEAD_IP}:{port}"
    procs = []
    try:
        procs.append(_ray_start(["--head", "--node-ip-address", HEAD_IP, "--port", str(port), "--include-dashboard=false",
                                 "--ray-client-server-port", str(free_port())], temp, logs / "head.log"))
        _wait_for(lambda: _reachable(HEAD_IP, port), 60, "the head node", logs / "head.log", procs)
        procs.append(_ray_start(["--address", address, "--node-ip-address", WORKER_IP], temp, logs / "worker.log"))
        _wait_for(lambda: _alive_nodes(address) == 2, 60, "the worker node", logs / "worker.log", procs)
        yield address
    finally:
        _stop(procs, temp)
        shutil.rmtree(temp, ignore_errors=True)


def _reachable(host: str, port: int) -> bool:
    import socket

    try:
        with socket.create_connection((host, port), timeout=1):
            return True
    except OSError:
        return False


def _alive_nodes(address: str) -> int:
    ray.init(address=address, log_to_driver=False, logging_level="error")
    try:
        return sum(n["Alive"] for n in ray.nodes())
    finally:
        ray.shutdown()


def _wait_for(check, timeout_s: float, what: str, log: Path, procs: list[subprocess.Popen]) -> None:
    deadline = time.monotonic() + timeout_s
    while not check():
        if any(p.poll() is not None for p in procs) or time.monotonic() > deadline:
            pytest.fail(f"{what} did not start:\n{log.read_text(errors='replace')[-3000:]}")
        time.sleep(0.5)


@pytest.fixture(scope="module")
def toy(tmp_path_factory) -> Path:
    return dataset(tmp_path_factory.mktemp("toy"), QUESTIONS)


@pytest.fixture(scope="module")
def local_run(toy, tmp_path_factory) -> dict:
    """The same questions on the default executor (threads in this process): the reference."""
    from agentic_rag.configuration import Settings

    out = tmp_path_factory.mktemp("local")
    settings = Settings.load(overrides={"ARTIFACTS_DIR": str(out / "artifacts")})
    return run_eval(toy, "agent", settings, out / "run", progress=False, extra_config={"llm": fake()})


def _rounds(run_dir: Path) -> Counter:
    return Counter(row["question_id"] for row in read_rows(run_dir / "telemetry.jsonl"))


def test_a_cluster_run_answers_as_the_local_one_and_resumes(cluster, toy, local_run, tmp_path, settings):
    out = tmp_path / "run"
    with pytest.raises(EvalInterrupted):
        run_eval(toy, "agent", settings, out, progress=False, extra_config={"llm": fake()},
                 executor=RayExecutor(2, settings, address=cluster), on_result=interrupt_after(2))
    assert 2 <= len(read_results(out / "results.jsonl")) < QUESTIONS
    resumed = run_eval(toy, "agent", settings, out, resume=True, progress=False, extra_config={"llm": fake()},
                       executor=RayExecutor(2, settings, address=cluster))
    ids = [row["id"] for row in read_results(out / "results.jsonl")]
    assert len(ids) == QUESTIONS and len(set(ids)) == QUESTIONS
    judged = {row["id"]: (row["judgement"], row["status"], row["prediction"]) for row in resumed["rows"]}
    assert judged == {row["id"]: (row["judgement"], row["status"], row["prediction"]) for row in local_run["rows"]}
    drop = lambda s: {k: v for k, v in s.items() if k not in TIMING}  # noqa: E731
    assert drop(resumed["summary"]) == drop(local_run["summary"])
    # the driver wrote the workers' telemetry: each question's rounds once, as the local run has them
    assert _rounds(out) == _rounds(Path(local_run["out"]))


def test_a_worker_killed_mid_question_has_its_question_answered_once_elsewhere(cluster, toy, local_run, tmp_path, settings):
    hold = tmp_path / "hold"
    hold.mkdir()
    executor = RayExecutor(2, settings, address=cluster)
    killed: dict = {}

    def kill_the_holder() -> None:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            held = hold / "held"
            if held.is_file():
                pid = int(held.read_text())
                for worker in executor.workers_where():  # each actor says which process it is
                    if worker["pid"] == pid:
                        os.kill(pid, signal.SIGKILL)
                        killed.update(worker)
                        return
            time.sleep(0.2)

    thread = threading.Thread(target=kill_the_holder, daemon=True)
    thread.start()
    model = HoldingChat(hold_dir=str(hold), replies=fake().replies)
    out = tmp_path / "run"
    run_eval(toy, "agent", settings, out, progress=False, extra_config={"llm": model}, executor=executor)
    thread.join(timeout=5)
    assert killed, "no worker was found holding a question"
    assert executor.retried == [killed["item"]] and [lost["worker"] for lost in executor.lost] == [killed["worker"]]
    ids = [row["id"] for row in read_results(out / "results.jsonl")]
    assert sorted(ids) == sorted(row["id"] for row in local_run["rows"])  # every question, each once
    assert _rounds(out) == _rounds(Path(local_run["out"]))  # the killed attempt left no rounds behind


def test_ingest_on_a_local_ray_instance_builds_the_same_index(tmp_path, monkeypatch):
    docs = tmp_path / "docs"
    docs.mkdir()
    for i, topic in enumerate(("harbour bridge", "opera house", "botanic garden")):
        (docs / f"{i}.txt").write_text(f"The {topic} of the city. " * 40 + f"\n\nIt opened in 19{50 + i}. " * 10)
    # the local instance's workers import what this process imports
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(ROOT), *sys.path]))
    common = ["-o", f"ARTIFACTS_DIR={tmp_path / 'art'}", "-o", "RAY_INGEST_BATCH=2"]
    here = runner.invoke(app, ["ingest", str(docs), "--out", str(tmp_path / "local"), *common])
    assert here.exit_code == 0, here.output
    there = runner.invoke(app, ["ingest", str(docs), "--out", str(tmp_path / "ray"), "--executor", "ray", *common])
    assert there.exit_code == 0, there.output
    assert json.loads(there.stdout)["executor"] == "ray" and not ray.is_initialized()
    for name in ("pages.jsonl", "chunks.jsonl"):
        assert (tmp_path / "ray" / name).read_text() == (tmp_path / "local" / name).read_text()
    a, b = np.load(tmp_path / "local" / "embeddings.npy"), np.load(tmp_path / "ray" / "embeddings.npy")
    assert a.shape == b.shape and np.allclose(a, b, atol=1e-5)


def test_executor_mistakes_are_one_line_errors(tmp_path, monkeypatch):
    common = ["--n", "1", "--out", str(tmp_path / "run"), "-o", f"ARTIFACTS_DIR={tmp_path}"]
    res = runner.invoke(app, ["eval", "--executor", "ray", "--address", f"127.0.0.1:{free_port()}", *common])
    assert res.exit_code == 2 and "cannot connect to the Ray cluster at 127.0.0.1:" in res.output
    assert len(res.output.strip().splitlines()) == 1 and not (tmp_path / "run").exists()
    res = runner.invoke(app, ["eval", "--executor", "ray", "--address", "nohost", *common])
    assert res.exit_code == 2 and "--address takes HOST:PORT" in res.output
    res = runner.invoke(app, ["eval", "--address", "127.0.0.1:1", *common])
    assert res.exit_code == 2 and "--address is for --executor ray" in res.output
    res = runner.invoke(app, ["eval", "--executor", "ray", "--checkpoints", *common])
    assert res.exit_code == 2 and "use --executor local" in res.output
    monkeypatch.setitem(sys.modules, "ray", None)  # as if the extra were not installed
    for command in (["eval", *common], ["ingest", "example", "--out", str(tmp_path / "index")]):
        res = runner.invoke(app, [command[0], "--executor", "ray", *command[1:]])
        assert res.exit_code == 2 and "pip install 'agentic-rag[ray]'" in res.output, res.output
        assert len(res.output.strip().splitlines()) == 1


def test_ray_init_does_not_take_over_sigterm(settings):
    """Ray's init installs its own SIGTERM handler, so a stopped `eval --executor ray` aborted (exit -6)
    instead of saving its rows and printing the resume command (exit 143): the run's handler is kept."""
    from agentic_rag.eval.executors import RayExecutor

    class FakeRay:
        def is_initialized(self):
            return False

        def init(self, **kwargs):
            signal.signal(signal.SIGTERM, signal.SIG_DFL)
            signal.signal(signal.SIGHUP, signal.SIG_DFL)

    def ours(signum, frame):  # pragma: no cover - never delivered
        raise KeyboardInterrupt

    before = {s: signal.getsignal(s) for s in (signal.SIGTERM, signal.SIGHUP)}
    try:
        signal.signal(signal.SIGTERM, ours)
        signal.signal(signal.SIGHUP, ours)
        executor = RayExecutor(workers=1, settings=settings)
        executor._module = FakeRay()
        executor._connect()
        assert signal.getsignal(signal.SIGTERM) is ours and signal.getsignal(signal.SIGHUP) is ours
    finally:
        for s, handler in before.items():
            signal.signal(s, handler)
