"""A served graph under load: clients that send at once, each request timed, the whole bounded in time,
and what the server holds in memory; and the hostile body the load carries (a request whose few
megabytes parse into millions of objects).

A load test compares the same requests sent alone and among other clients (the latency they pay for
sharing the server), and the server's memory before and after (what a request leaves behind).
"""

from __future__ import annotations

import json
import statistics
import threading
import time
from pathlib import Path

from testkit.processes import descendants
from testkit.servers import post

NO_REPLY = 0  # the status of a request that got no reply at all: refused, reset, or still going at the deadline


def timed_post(port: int, body: bytes, timeout_s: float) -> tuple[int, float]:
    """(HTTP status, seconds) of one POST /runs/wait; ``NO_REPLY`` when none came within ``timeout_s``."""
    t0 = time.monotonic()
    try:
        status, _ = post(port, body, timeout=max(timeout_s, 0.1))
    except (OSError, ValueError):  # no reply, or one cut short
        status = NO_REPLY
    return status, time.monotonic() - t0


def clients_at_once(port: int, plans: list[list[bytes]], within_s: float) -> list[list[tuple[int, float]]]:
    """Each plan is a client that sends its bodies one after another; all the clients start together, and
    each stops by itself at ``within_s`` (a request still going then is ``NO_REPLY``), so a server that
    stalls ends the load on time rather than hanging the test. Per client: (status, seconds) per request."""
    deadline = time.monotonic() + within_s
    results: list[list[tuple[int, float]]] = [[] for _ in plans]
    start = threading.Barrier(len(plans))

    def client(plan: list[bytes], out: list[tuple[int, float]]) -> None:
        start.wait()
        for body in plan:
            if time.monotonic() >= deadline:
                return
            out.append(timed_post(port, body, deadline - time.monotonic()))

    threads = [threading.Thread(target=client, args=(plan, out), daemon=True) for plan, out in zip(plans, results)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(max(deadline - time.monotonic(), 0) + 5)
    return results


def p95(seconds: list[float]) -> float:
    """The 95th percentile (of a few samples: interpolated between the largest ones)."""
    return statistics.quantiles(seconds, n=20, method="inclusive")[-1] if len(seconds) > 1 else seconds[0]


def rss_mb(pid: int) -> float:
    """Resident memory of a process and everything below it, in MB (Linux /proc): what a server holds."""
    total_kb = 0
    for each in (pid, *descendants(pid)):
        try:
            status = Path(f"/proc/{each}/status").read_text()
        except OSError:  # ended meanwhile
            continue
        total_kb += next((int(line.split()[1]) for line in status.splitlines() if line.startswith("VmRSS:")), 0)
    return total_kb / 1000


def crowded_metadata(body: dict, empties: int) -> bytes:
    """``body`` as JSON with ``metadata`` holding ``empties`` empty objects: three bytes each on the wire,
    a dict each once parsed (60 MB, 20 million of them, once took a server from 875 MB to 9.3 GB)."""
    head = json.dumps({**body, "metadata": {}}).encode()[:-3]  # without the closing `{}}`
    return head + b'{"x": [' + b",".join([b"{}"] * empties) + b"]}}"
