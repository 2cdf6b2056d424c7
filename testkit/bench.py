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


def dtype_comparison(rows: dict[str, list[dict]], summaries: dict[str, dict]) -> dict:
    """Two runs of one question set that differ only in LLM_DTYPE, paired by question: each run's time per
    question (wall and inside model calls), the first's time over the second's, and whether each question
    was judged (and answered) the same."""
    from agentic_rag.llm.dtype import choose_dtype

    (a, rows_a), (b, rows_b) = rows.items()
    by_id = {r["id"]: r for r in rows_b}
    pairs = [(r, by_id[r["id"]]) for r in rows_a if r["id"] in by_id]

    def per_run(setting: str, run: list[dict]) -> dict:
        return {"setting": setting, "dtype": choose_dtype(setting).dtype,
                "wall_s": {"median": round(statistics.median(r["latency_ms"] for r in run) / 1000, 2),
                           "total": round(sum(r["latency_ms"] for r in run) / 1000, 1)},
                "llm_s": {"median": round(statistics.median(r["llm_ms"] for r in run) / 1000, 2),
                          "total": round(sum(r["llm_ms"] for r in run) / 1000, 1)},
                "score": summaries[setting].get("score"), "tokens_per_q": summaries[setting].get("tokens_per_q")}

    ratios = [x["latency_ms"] / y["latency_ms"] for x, y in pairs if y["latency_ms"] > 0]
    differ = [x["id"] for x, y in pairs if x["judgement"] != y["judgement"]]
    return {"questions": len(pairs), "runs": [per_run(a, rows_a), per_run(b, rows_b)],
            "wall_ratio": {"per_question_median": round(statistics.median(ratios), 2) if ratios else None,
                           "total": round(sum(x["latency_ms"] for x, _ in pairs) / max(sum(y["latency_ms"] for _, y in pairs), 1e-9), 2)},
            "same_judgement": len(pairs) - len(differ), "judged_otherwise": differ,
            "same_answer": sum(x["prediction"] == y["prediction"] and x["reason"] == y["reason"] for x, y in pairs)}


# A report from before the processor class was recorded: every such figure was taken on an AVX-512 BF16 Xeon
UNRECORDED_CLASS = {"class": "native bf16 (flags not recorded)", "flags": [], "torch_capability": None, "caps": {},
                    "auto_dtype": "bfloat16"}


def merge_class_row(path: Path, row: dict, same: tuple[str, ...] = ("dataset", "system")) -> dict:
    """The report at ``path`` with ``row`` in it: a row of the same processor class and the same ``same``
    fields is replaced, any other kept, so each class measured keeps its own figures. A report of one run
    from before rows were kept becomes its first row."""
    path = Path(path)
    report = json.loads(path.read_text()) if path.is_file() else {"rows": []}
    if "rows" not in report:
        old = report
        old.setdefault("processor", {**UNRECORDED_CLASS, "cpu": (old.get("machine") or {}).get("cpu", "")})
        report = {"rows": [old]}
    key = lambda r: (r["processor"]["class"], r["processor"]["cpu"], *(r.get(k) for k in same))  # noqa: E731
    report["rows"] = [r for r in report["rows"] if key(r) != key(row)] + [row]
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(report, indent=2) + "\n")
    return report


def dtype_markdown(report: dict) -> str:
    """benchmarks/dtype.md: one row per processor class measured."""
    lines = ["# The dtype by processor class", "",
             "Each row: one process on that class answered the same questions twice, first with the first dtype, "
             "then with the second (`LLM_DTYPE`), every page indexed before either run. Time per question is wall "
             "time (inside model calls in brackets), median over the questions; the speed-up is the median of the "
             "per-question ratios (the totals' ratio in brackets). Generated by `scripts/bench_dtype.py`.", "",
             "| processor | class (flags) | dataset, system | first run | second run | first / second, per question | "
             "same judgements | same answers | load before / after |",
             "|---|---|---|---|---|---|---|---|---|"]
    for r in report["rows"]:
        p, (x, y) = r["processor"], r["runs"]
        caps = " ".join(f"{k}={v}" for k, v in p["caps"].items())
        run = lambda s: (f"`{s['setting']}` = {s['dtype']}: {s['wall_s']['median']} s ({s['llm_s']['median']} s)")  # noqa: E731
        lines.append(
            f"| {p['cpu']} | {p['class']} ({', '.join(p['flags'])}{'; ' + caps if caps else ''}) | {r['dataset']}, {r['system']} | "
            f"{run(x)} | {run(y)} | {r['wall_ratio']['per_question_median']}x ({r['wall_ratio']['total']}x) | "
            f"{r['same_judgement']} of {r['questions']} | {r['same_answer']} of {r['questions']} | "
            f"{r['load_average_before'][0]} / {r['load_average_after'][0]} |")
    return "\n".join(lines) + "\n"
