"""What the benchmark scripts share: the machine a figure was measured on (CPU, load average), the
cold indexing of a question set, and the JSON + Markdown pair each benchmark writes."""

from __future__ import annotations

import json
import os
import platform
import statistics
import time
from pathlib import Path

from agentic_rag.configuration import Settings

HIGH_LOAD = 1.0  # load average per core above which a row is flagged as measured on a busy machine


def cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor()


def load_average() -> list[float]:
    """The 1-, 5- and 15-minute load averages (the machines benchmarks run on are shared)."""
    return [round(x, 2) for x in os.getloadavg()]


def index_all(dataset: str, n: int, settings: Settings) -> dict:
    """Build every question's index once (cold), timing each: what a full run pays per question."""
    from agentic_rag.datasets.crag import iter_records
    from agentic_rag.eval.runner import select
    from agentic_rag.ingest.ingest import index_for_record

    seconds = []
    for record in select(iter_records(dataset), n, None):
        t0 = time.perf_counter()
        index_for_record(record, settings)
        seconds.append(time.perf_counter() - t0)
    return {"questions": len(seconds), "total_s": round(sum(seconds), 2),
            "median_s": round(statistics.median(seconds), 2), "max_s": round(max(seconds), 2)}


def write_outputs(out: str | Path, report: dict, markdown: str) -> None:
    """OUT.json and OUT.md, and the table on stdout."""
    path = Path(out)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.with_suffix(".json").write_text(json.dumps(report, indent=2))
    path.with_suffix(".md").write_text(markdown)
    print(markdown)


def folder_bytes(folder: Path) -> int:
    """Bytes of the files below ``folder`` (0 when it does not exist)."""
    return sum(p.stat().st_size for p in Path(folder).rglob("*") if p.is_file()) if Path(folder).is_dir() else 0


def distribution_closure_bytes(name: str, extras: tuple[str, ...] = ()) -> int:
    """Bytes on disk of an installed distribution and everything it requires (with ``extras``), each
    counted once: what installing it into an empty environment takes."""
    import re
    from importlib import metadata

    from packaging.requirements import Requirement

    seen: dict[str, int] = {}
    visited: set[tuple[str, tuple[str, ...]]] = set()
    todo = [(name, extras)]
    while todo:
        dist_name, wanted = todo.pop()
        key = re.sub(r"[-_.]+", "-", dist_name).lower()
        if (key, wanted) in visited:
            continue
        visited.add((key, wanted))
        try:
            dist = metadata.distribution(dist_name)
        except metadata.PackageNotFoundError:
            continue
        if key not in seen:
            seen[key] = sum(f.locate().stat().st_size for f in dist.files or () if f.locate().is_file())
        for text in dist.requires or ():
            req = Requirement(text)
            if req.marker is None or any(req.marker.evaluate({"extra": e}) for e in ("", *wanted)):
                todo.append((req.name, tuple(sorted(req.extras))))
    return sum(seen.values())
