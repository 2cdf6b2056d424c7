"""Where the items of a run are computed: threads in this process, or Ray actors on a cluster.

Both executors take a function and a list of items and hand results back to the caller as they
finish, so the caller (the eval runner, a corpus ingest) stays the one process that writes files:
a Ray actor never touches the run folder. What an item's function would have written as telemetry
is captured in the actor and returned with its result (``agentic_rag.telemetry.captured``).

Ray actors load their models once (``warm``) and then take one item at a time. An actor that dies
(its process killed, its node lost) costs nothing but time: its item goes back to the queue and is
run by another actor, and a fresh actor takes the dead one's place. Each item is handed back at
most once, so a retried item can never give two results.
"""

from __future__ import annotations

import importlib
import math
import os
import signal
import socket
import sys
import threading
import time
from collections import deque
from concurrent.futures import ThreadPoolExecutor, as_completed
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, Callable, Iterator, Sequence

from agentic_rag.errors import UserError
from agentic_rag.runner import graph_registrar
from agentic_rag.telemetry import captured

RAY_EXTRA = "pip install 'agentic-rag[ray]'"
# Ray rewrites 127.0.0.1 into the machine's network address; a local instance is told to stay on loopback
_LOOPBACK_ONLY = "RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER"

# an item's position in the list, its result, and the telemetry lines its function wrote as (path, line)
Outcome = tuple[int, Any, list[tuple[str, str]]]


class ExecutorError(UserError, RuntimeError):
    """The executor cannot run (Ray missing, cluster unreachable or too small, workers that keep dying)."""


class LocalExecutor:
    """Items in ``workers`` threads of this process (the functions write their own telemetry)."""

    name = "local"

    def __init__(self, workers: int = 1) -> None:
        self.workers = max(1, workers)

    def __enter__(self) -> "LocalExecutor":
        return self

    def __exit__(self, *exc: Any) -> None:
        pass

    def worker_settings(self, settings):
        """Torch keeps every core however many questions are answered at once: the in-process model
        runs one call at a time (a lock), so giving each question a share of the cores only slows the
        one call that runs (benchmarks/under_load_split.md); the passive OpenMP wait set at import is what
        keeps the waiting threads off the cores."""
        return settings

    def map(self, fn: Callable[[Any], Any], items: Sequence[Any], warm: Callable[[], Any] | None = None) -> Iterator[Outcome]:
        pool = ThreadPoolExecutor(max_workers=self.workers)
        futures = {pool.submit(fn, item): i for i, item in enumerate(items)}
        try:
            for future in as_completed(futures):
                yield futures[future], future.result(), []
        except BaseException:
            # queued items are dropped, not run: the caller gets control back now, not after the list
            pool.shutdown(wait=False, cancel_futures=True)
            raise
        pool.shutdown()


class _Worker:
    """The body of one Ray actor: models loaded once, then one item at a time."""

    def __init__(self, warm: Callable[[], Any] | None, registrar: str | None = None) -> None:
        if registrar:  # what registered the graphs in the driver (the app layer) registers them here too
            importlib.import_module(registrar)
        if warm is not None:
            warm()

    def where(self) -> dict[str, Any]:
        """This actor's process, node and resident memory (answered even while an item runs: its own
        concurrency group)."""
        import ray

        with open("/proc/self/statm") as fh:  # resident pages, second field
            rss = int(fh.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
        return {"pid": os.getpid(), "node": ray.util.get_node_ip_address(), "rss_mb": round(rss / 2**20)}

    def run(self, fn: Callable[[Any], Any], item: Any) -> tuple[Any, list[tuple[str, str]]]:
        with captured() as telemetry:
            result = fn(item)
        return result, telemetry


@dataclass
class _Slot:
    """One actor of the pool and what it is doing."""

    actor: Any
    number: int
    started: float = field(default_factory=time.monotonic)
    ready: bool = False
    item: int | None = None  # index of the item it runs


class RayExecutor:
    """Items on ``workers`` Ray actors: on the cluster at ``address``, or on a local instance started here.

    The actors start with the first ``map`` and stop when it ends, or, inside ``with executor:``, when
    the block ends (an ingest runs two stages on the same loaded actors)."""

    name = "ray"

    def __init__(self, workers: int, settings, address: str | None = None) -> None:
        self.workers = max(1, workers)
        self.address = address
        self.cpus = settings.scale.RAY_CPUS_PER_WORKER
        self.attempts = settings.scale.RAY_ITEM_ATTEMPTS
        self.replacements = settings.scale.RAY_WORKER_REPLACEMENTS
        self.start_timeout_s = settings.scale.RAY_WORKER_START_TIMEOUT_S
        self.connect_timeout_s = settings.scale.RAY_CONNECT_TIMEOUT_S
        self.retried: list[int] = []  # items sent again after their actor died, in order
        self.lost: list[dict[str, Any]] = []  # what is known of each actor that died
        self.ready_s: list[float] = []  # seconds from connecting to each actor having loaded its models
        self._slots: list[_Slot] = []
        self._ray = None
        self._held = 0
        self._module = self._import_ray()  # a missing Ray is a one-line error before any work
        if address is not None:
            _check_reachable(address, self.connect_timeout_s)

    def __enter__(self) -> "RayExecutor":
        self._held += 1
        return self

    def __exit__(self, *exc: Any) -> None:
        self._held -= 1
        if not self._held:
            self.close()

    def worker_settings(self, settings):
        """Settings as a worker runs them: torch on the CPUs the worker reserved, not on every core of its node."""
        if settings.llm.TORCH_THREADS == 0:
            return settings.replace(TORCH_THREADS=max(1, math.ceil(self.cpus)))
        return settings

    # -- connection -------------------------------------------------------------------------------
    def _import_ray(self):
        if self.address is None:  # set before Ray reads it: a local instance listens on loopback only
            os.environ.setdefault(_LOOPBACK_ONLY, "0")
        try:
            import ray
        except ImportError:
            raise ExecutorError(f"--executor ray needs Ray, which is not installed: {RAY_EXTRA}") from None
        if self.address is None and os.environ.get(_LOOPBACK_ONLY) == "0":
            from ray._private import ray_constants  # read at Ray's import: an earlier import in this process

            ray_constants.ENABLE_RAY_CLUSTER = False
        return ray

    def _connect(self) -> None:
        ray = self._module
        os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")  # nothing leaves the machine
        # the workers' own output (model-loading bars) would break the driver's progress bar; it stays in
        # the Ray session's log folder
        quiet = {"log_to_driver": False, "logging_level": "warning"}
        if ray.is_initialized():
            ray.shutdown()
        with _own_stop_signals():
            self._init(ray, quiet)
        self._ray = ray

    def _init(self, ray, quiet: dict[str, Any]) -> None:
        if self.address is None:
            # reachable from this machine only, for this run only: Ray's token would be written to the
            # user's home and then switch on token checks for every later cluster started there
            os.environ.setdefault("RAY_AUTH_MODE", "disabled")
            ray.init(num_cpus=math.ceil(self.workers * self.cpus), include_dashboard=False, **quiet)
        else:
            try:
                ray.init(address=self.address, **quiet)
            except Exception as exc:  # noqa: BLE001 - whatever Ray raises, the user gets one line
                raise ExecutorError(f"cannot connect to the Ray cluster at {self.address}: {_first_line(exc)}") from None
            have, need = ray.cluster_resources().get("CPU", 0), self.workers * self.cpus
            if have < need:
                ray.shutdown()
                raise ExecutorError(
                    f"the Ray cluster at {self.address} has {have:g} CPUs; {self.workers} workers need {need:g} "
                    f"(RAY_CPUS_PER_WORKER={self.cpus:g} each): lower --workers or add nodes")

    # -- pool -------------------------------------------------------------------------------------
    def _start_actor(self, running: dict[Any, _Slot]) -> None:
        slot = _Slot(self._actor_class.remote(self._warm, graph_registrar()), self._next_number)
        self._next_number += 1
        self._slots.append(slot)
        running[slot.actor.where.options(concurrency_group="control").remote()] = slot  # answers once loaded

    def workers_where(self) -> list[dict[str, Any]]:
        """Process id, node, memory and current item of each started actor, asked of the actors themselves."""
        live = [s for s in self._slots if s.ready]
        where = self._ray.get([s.actor.where.options(concurrency_group="control").remote() for s in live])
        return [{"worker": s.number, "item": s.item, **w} for s, w in zip(live, where)]

    def map(self, fn: Callable[[Any], Any], items: Sequence[Any], warm: Callable[[], Any] | None = None) -> Iterator[Outcome]:
        """``(index, fn(item), telemetry)`` for every item, in the order they finish; ``warm`` loads an
        actor's models (used when the actors start, that is on the first ``map``)."""
        running: dict[Any, _Slot] = {}  # pending call -> its actor's slot (a start, or an item)
        if not items:
            return
        try:
            if self._ray is None:
                self._t0 = time.monotonic()
                self._connect()
                self._actor_class = self._ray.remote(
                    num_cpus=self.cpus, max_restarts=0, max_task_retries=0, concurrency_groups={"control": 1},
                )(_Worker)
                self._warm, self._next_number, self._replaced = self._ray.put(warm), 0, 0
                for _ in range(min(self.workers, len(items))):
                    self._start_actor(running)
            yield from self._dispatch(self._ray.put(fn), items, running)
        finally:
            if not self._held:
                self.close()

    def _dispatch(self, fn_ref, items: Sequence[Any], running: dict[Any, _Slot]) -> Iterator[Outcome]:
        ray = self._ray
        queue = deque(range(len(items)))
        attempts = [0] * len(items)
        handed: set[int] = set()
        while queue or any(s.item is not None for s in self._slots):
            for slot in self._slots:
                if queue and slot.ready and slot.item is None:
                    slot.item = queue.popleft()
                    attempts[slot.item] += 1
                    running[slot.actor.run.remote(fn_ref, items[slot.item])] = slot
            done, _ = ray.wait(list(running), num_returns=1, timeout=1.0)
            if not done:
                self._check_start_timeout()
                continue
            slot = running.pop(done[0])
            try:
                value = ray.get(done[0])
            except ray.exceptions.RayActorError as exc:
                if exc.actor_init_failed:
                    raise ExecutorError(f"a Ray worker could not load its models: {_cause_line(exc)}") from None
                self._lose(slot, exc, running)
                if slot.item is not None:
                    if attempts[slot.item] >= self.attempts:
                        raise ExecutorError(
                            f"item {slot.item} was running on {attempts[slot.item]} Ray workers that each died "
                            f"(RAY_ITEM_ATTEMPTS={self.attempts}); the results so far are kept") from None
                    self.retried.append(slot.item)
                    queue.appendleft(slot.item)
                if self._replaced < self.replacements:
                    self._replaced += 1
                    self._start_actor(running)
                elif not self._slots:
                    raise ExecutorError(f"every Ray worker died and the {self.replacements} replacements "
                                        "(RAY_WORKER_REPLACEMENTS) are used up; the results so far are kept") from None
                continue
            except ray.exceptions.RayTaskError as exc:  # the item's own error, as a thread would raise it
                raise (exc.cause if isinstance(exc.cause, BaseException) else exc) from None
            if not slot.ready:
                slot.ready = True
                self.ready_s.append(round(time.monotonic() - self._t0, 2))
                continue
            index, slot.item = slot.item, None
            if index in handed:  # never twice, whatever the cluster did
                continue
            handed.add(index)
            result, telemetry = value
            yield index, result, telemetry

    def _lose(self, slot: _Slot, exc: BaseException, running: dict[Any, _Slot]) -> None:
        """Forget a dead actor (and any other call still pending on it)."""
        for ref in [r for r, s in running.items() if s is slot]:
            del running[ref]
        self._slots.remove(slot)
        self.lost.append({"worker": slot.number, "item": slot.item, "error": _first_line(exc)})
        try:
            self._ray.kill(slot.actor, no_restart=True)
        except Exception:  # noqa: BLE001 - already gone
            pass
        print(f"warning: Ray worker {slot.number} was lost ({_first_line(exc)})"
              + ("; its item goes to another worker" if slot.item is not None else ""), file=sys.stderr)

    def _check_start_timeout(self) -> None:
        """Every actor still loading after the limit: the cluster cannot place them, or loads too slowly."""
        if self._slots and not any(s.ready for s in self._slots):
            oldest = min(s.started for s in self._slots)
            if time.monotonic() - oldest > self.start_timeout_s:
                raise ExecutorError(
                    f"no Ray worker started within {self.start_timeout_s:g} s (RAY_WORKER_START_TIMEOUT_S): "
                    f"the cluster may lack {self.cpus:g} free CPUs per worker, or loading the models is slower")

    def close(self) -> None:
        """Stop the actors and leave the cluster (a local instance stops with it)."""
        ray, self._ray = self._ray, None
        if ray is None:
            return
        for slot in self._slots:
            try:
                ray.kill(slot.actor, no_restart=True)
            except Exception:  # noqa: BLE001 - already gone
                pass
        self._slots = []
        ray.shutdown()


def make_executor(name: str, workers: int, settings, address: str | None = None):
    """The executor a command line asked for (``--executor``, ``--workers``, ``--address``)."""
    if workers < 1:
        raise ExecutorError(f"--workers must be 1 or more, not {workers}")
    if name == "local":
        if address is not None:
            raise ExecutorError("--address is for --executor ray")
        return LocalExecutor(workers)
    if name == "ray":
        return RayExecutor(workers, settings, address)
    raise ExecutorError(f"unknown executor {name!r}: expected 'local' or 'ray'")


def _host_port(address: str) -> tuple[str, int]:
    host, sep, port = address.rpartition(":")
    if not sep or not host or not port.isdigit():
        raise ExecutorError(f"--address takes HOST:PORT (the address `ray start --head` prints), not {address!r}")
    return host.strip("[]"), int(port)


def _check_reachable(address: str, timeout_s: float) -> None:
    """Fail at once, with the reason, where Ray would retry for a minute and print a traceback."""
    try:
        with socket.create_connection(_host_port(address), timeout=timeout_s):
            pass
    except OSError as exc:
        raise ExecutorError(f"cannot connect to the Ray cluster at {address}: {exc.strerror or exc}") from None


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__


def _cause_line(exc: BaseException) -> str:
    """The last line of the creation task's traceback: the exception that stopped the model load."""
    lines = [line for line in str(exc).strip().splitlines() if line.strip()]
    return lines[-1].strip() if lines else type(exc).__name__


@contextmanager
def _own_stop_signals():
    """Keep the handlers SIGTERM and SIGHUP had before ``ray.init``, which installs its own: a stopped run
    must still save its rows and print how to resume (exit 143), not abort with Ray's."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    before = {sig: signal.getsignal(sig) for sig in (signal.SIGTERM, signal.SIGHUP)}
    try:
        yield
    finally:
        for sig, handler in before.items():
            signal.signal(sig, handler)
