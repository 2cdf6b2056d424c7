"""Where a question's time goes, on one machine, measured as ratios within one run.

One process, so the figures include what a user's first run pays:

1. cold start: what the process loads once (imports, LLM, tokenizer, embedder, spaCy, the first index),
   from the one-time costs the package records as it pays them (agentic_rag/timing.py);
2. page indexing per question, cold and warm: built from nothing (extraction, chunking, one embedding
   call for all the record's chunks), rebuilt with the chunk-vector cache warm (a new ARTIFACTS_DIR,
   the same EMBEDDING_CACHE_DIR: no chunk may be embedded again), loaded from the disk cache, and
   taken from the in-process LRU;
3. warm questions: ``--warm-up`` passes of both systems, then ``--repeat`` measured passes in which
   each question is answered by the baseline and the agent one after the other (the order alternating
   per question, so a drift in machine load hits both alike), the remembered query and sentence
   vectors dropped before each, so a bundled question costs what a new one would. From the result rows: per node
   (workers' index / embed / search parts included) median and p95 of wall, own-thread CPU and LLM
   time; the LLM's share of each question's wall time; the agent's wall time over the baseline's.

Indexes and vectors go to a temporary folder, so every run starts cold whatever was cached before.
The load average is recorded before and after: on a shared machine absolute times are inflated, the
ratios much less so.

Writes benchmarks/latency.json and benchmarks/latency.md (the table ``scripts/bench_report.py`` puts in
benchmarks/README.md).

Usage: python scripts/bench_latency.py [--n 10] [--warm-up 1] [--repeat 1] [--preset P] [-o KEY=VALUE ...]
"""

from __future__ import annotations

import argparse
import math
import os
import platform
import resource
import statistics
import sys
import tempfile
import time
from pathlib import Path

from agentic_rag.nodes import Node  # a plain enum: no heavy import before T_START

T_START = time.perf_counter()  # before the package's heavy imports, which are part of a cold start

ROOT = Path(__file__).resolve().parents[1]
BENCH = ROOT / "benchmarks"
SYSTEMS = ("baseline", "agent")
# the order nodes appear in the table (the names in parentheses in the markdown)
NODE_ORDER = tuple(Node)
NODE_ROLES = {Node.WORKER: "workers", Node.CONFIDENCE_GATE: "gate", Node.COLLECT_SIGNALS: "BAUG signals",
              Node.FINAL_CHECK: "final checks (BAUG)", Node.DECIDE: "BAUG policy"}
TARGETS = {"outside_llm_share_max": 0.25, "agent_over_baseline_max": 1.3}


def pct(values: list[float], q: float) -> float | None:
    """The q-quantile (nearest rank) of ``values``."""
    if not values:
        return None
    ordered = sorted(values)
    return ordered[max(0, math.ceil(q * len(ordered)) - 1)]


def stats(values: list[float], digits: int = 1) -> dict[str, float | None]:
    return {"median": round(statistics.median(values), digits) if values else None,
            "p95": round(pct(values, 0.95), digits) if values else None, "n": len(values)}


def load_avg() -> list[float]:
    return [round(x, 2) for x in os.getloadavg()]


def index_timings(records, settings, folder: Path) -> dict:
    """Per record: built from nothing, rebuilt with the chunk-vector cache, loaded from disk, from memory."""
    from agentic_rag.ingest import ingest
    from agentic_rag.retrieval.embeddings import Embedder
    from agentic_rag.timing import node_clock

    embedded: list[int] = []
    real_embed = Embedder.embed

    def counting(self, texts, show_progress=False):
        embedded.append(len(texts))
        return real_embed(self, texts, show_progress)

    cold = settings.replace(ARTIFACTS_DIR=str(folder / "cold"), EMBEDDING_CACHE_DIR=str(folder / "vectors"))
    rebuilt = cold.replace(ARTIFACTS_DIR=str(folder / "rebuilt"))
    rows = []
    Embedder.embed = counting
    try:
        for rec in records:
            row = {"id": rec.interaction_id}
            for name, s in (("cold_build_s", cold), ("vector_cache_build_s", rebuilt), ("disk_load_s", cold),
                            ("memory_hit_s", cold)):
                if name != "memory_hit_s":
                    ingest._MEMORY.clear()
                embedded.clear()
                t0 = time.perf_counter()
                with node_clock() as clock:
                    index = ingest.index_for_record(rec, s)
                row[name] = round(time.perf_counter() - t0, 4)
                if name == "cold_build_s":
                    row.update(chunks=len(index), chunks_embedded_cold=sum(embedded), cold_parts_ms=clock.parts)
                if name == "vector_cache_build_s":
                    row["chunks_embedded_with_cache"] = sum(embedded)
            rows.append(row)
    finally:
        Embedder.embed = real_embed
    keys = ("cold_build_s", "vector_cache_build_s", "disk_load_s", "memory_hit_s")
    parts = sorted({p for r in rows for p in r["cold_parts_ms"]})
    return {"per_record": rows, **{k: stats([r[k] for r in rows], 4) for k in keys},
            "cold_build_parts_ms": {p: stats([r["cold_parts_ms"].get(p, 0.0) for r in rows]) for p in parts},
            "chunks": sum(r["chunks"] for r in rows),
            "chunks_embedded_cold": sum(r["chunks_embedded_cold"] for r in rows),
            "chunks_embedded_with_cache": sum(r["chunks_embedded_with_cache"] for r in rows)}


def run_row(system: str, rec, settings, new_question: bool = True) -> dict:
    """One answer. ``new_question``: the embedder forgets the vectors of earlier passes first, so a
    repeated question costs what a new one would on a warm process (models and indexes loaded)."""
    import graphs  # noqa: F401  (registers the agent and baseline graphs with agentic_rag.runner)
    from agentic_rag.retrieval.embeddings import get_embedder
    from agentic_rag.runner import answer

    if new_question:
        get_embedder(settings).forget()
    result = answer(system, settings, record=rec)
    return {"system": system, "id": rec.interaction_id, "status": result.status, "reason": result.reason,
            "latency_ms": result.latency_ms, "llm_ms": result.llm_ms, "cpu_ms": result.cpu_ms,
            "llm_calls": result.llm_calls, "tokens": result.tokens.get("total", 0),
            "events": [{k: e.get(k) for k in ("node", "round", "ms", "cpu_ms", "llm_ms", "parts_ms")} for e in result.events],
            "load": round(os.getloadavg()[0], 2)}


def node_table(rows: list[dict]) -> dict:
    """Per node: median / p95 over node runs of wall, own-thread CPU and LLM ms; worker parts too."""
    out: dict[str, dict] = {}
    names = {e["node"] for r in rows for e in r["events"]}
    for node in [n for n in NODE_ORDER if n in names] + sorted(names - set(NODE_ORDER)):
        runs = [e for r in rows for e in r["events"] if e["node"] == node]
        entry = {"runs": len(runs), "wall_ms": stats([e["ms"] for e in runs]),
                 "cpu_ms": stats([e.get("cpu_ms") or 0.0 for e in runs]),
                 "llm_ms": stats([e.get("llm_ms") or 0.0 for e in runs])}
        parts = sorted({p for e in runs for p in (e.get("parts_ms") or {})})
        if parts:
            entry["parts_ms"] = {p: stats([(e.get("parts_ms") or {}).get(p, 0.0) for e in runs]) for p in parts}
        out[node] = entry
    return out


def system_summary(rows: list[dict]) -> dict:
    wall = [r["latency_ms"] for r in rows]
    share = [r["llm_ms"] / r["latency_ms"] for r in rows if r["latency_ms"] > 0]
    total_wall, total_llm = sum(wall), sum(r["llm_ms"] for r in rows)
    return {
        "questions": len(rows),
        "wall_ms": stats(wall),
        "llm_ms": stats([r["llm_ms"] for r in rows]),
        "outside_llm_ms": stats([r["latency_ms"] - r["llm_ms"] for r in rows]),
        "process_cpu_ms": stats([r["cpu_ms"] for r in rows]),
        "llm_share_of_wall": round(total_llm / total_wall, 4) if total_wall else None,
        "outside_llm_share": round(1 - total_llm / total_wall, 4) if total_wall else None,
        "llm_share_per_question": stats([100 * s for s in share]) | {"unit": "%"},
        "nodes": node_table(rows),
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--dataset", default="example")
    ap.add_argument("--n", type=int, default=None, help="first N questions (default: all)")
    ap.add_argument("--warm-up", type=int, default=1, help="unmeasured passes of both systems before measuring")
    ap.add_argument("--repeat", type=int, default=1, help="measured passes")
    ap.add_argument("--preset", default=None)
    ap.add_argument("-o", "--override", action="append", default=[], metavar="KEY=VALUE")
    ap.add_argument("--out", default=str(BENCH / "latency.json"))
    args = ap.parse_args(argv)

    from agentic_rag.configuration import Settings, parse_overrides
    from agentic_rag.datasets.crag import iter_records
    from agentic_rag.timing import record_startup, startup_report

    record_startup("imports (settings, data)", time.perf_counter() - T_START)
    load_before = load_avg()
    records = list(iter_records(args.dataset))[: args.n]
    with tempfile.TemporaryDirectory(prefix="bench-latency-") as tmp:
        folder = Path(tmp)
        overrides = {**parse_overrides(args.override), "ARTIFACTS_DIR": str(folder / "cold"),
                     "EMBEDDING_CACHE_DIR": str(folder / "vectors"), "TELEMETRY_PATH": str(folder / "telemetry.jsonl")}
        settings = Settings.load(preset=args.preset, overrides=overrides)
        t0 = time.perf_counter()
        indexing = index_timings(records, settings, folder)
        print(f"indexing: {time.perf_counter() - t0:.1f} s for {len(records)} records", file=sys.stderr, flush=True)
        first = run_row("agent", records[0], settings)  # pays the model loads
        startup = startup_report()
        for p in range(args.warm_up):
            for rec in records:
                for system in SYSTEMS:
                    run_row(system, rec, settings)
            print(f"warm-up pass {p + 1} done", file=sys.stderr, flush=True)
        rows: list[dict] = []
        for p in range(args.repeat):
            for i, rec in enumerate(records):
                for system in SYSTEMS if (i + p) % 2 == 0 else SYSTEMS[::-1]:
                    rows.append(run_row(system, rec, settings))
                    r = rows[-1]
                    print(f"{system:8s} {rec.interaction_id[:8]} {r['latency_ms'] / 1000:6.1f} s, LLM {r['llm_ms'] / 1000:6.1f} s, "
                          f"load {r['load']}", file=sys.stderr, flush=True)
    by_system = {s: [r for r in rows if r["system"] == s] for s in SYSTEMS}
    pairs = {}
    for r in rows:
        pairs.setdefault(r["id"], {}).setdefault(r["system"], []).append(r["latency_ms"])
    ratios = [statistics.fmean(v["agent"]) / statistics.fmean(v["baseline"]) for v in pairs.values()
              if v.get("agent") and v.get("baseline")]
    agent_total = sum(r["latency_ms"] for r in by_system["agent"])
    base_total = sum(r["latency_ms"] for r in by_system["baseline"])
    summary = {s: system_summary(v) for s, v in by_system.items()}
    out = {
        "dataset": args.dataset,
        "questions": len(records),
        "warm_up_passes": args.warm_up,
        "measured_passes": args.repeat,
        "settings": {"preset": args.preset or "default", "overrides": parse_overrides(args.override)},
        "machine": {"cpus": os.cpu_count(), "platform": platform.platform(), "python": platform.python_version(),
                    "load_average_before": load_before, "load_average_after": load_avg()},
        "cold_start": {"one_time_s": startup, "first_agent_question_s": round(first["latency_ms"] / 1000, 2)},
        "indexing": indexing,
        "systems": summary,
        "agent_over_baseline": {"per_question": stats(ratios), "total": round(agent_total / base_total, 4) if base_total else None},
        "model": settings.llm.LLM_MODEL,
        # the process's high-water mark: generator, embedder, spaCy and the indexes, as a user's run holds them
        "peak_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024),
        "targets": TARGETS,
        "rows": rows,
    }
    out["met"] = {
        "outside_llm_share": summary["agent"]["outside_llm_share"] is not None
        and summary["agent"]["outside_llm_share"] <= TARGETS["outside_llm_share_max"],
        "agent_over_baseline": out["agent_over_baseline"]["total"] is not None
        and out["agent_over_baseline"]["total"] <= TARGETS["agent_over_baseline_max"],
        "page_embedded_once": indexing["chunks_embedded_with_cache"] == 0,
    }
    from agentic_rag.llm.dtype import processor_class
    from testkit.bench import merge_class_row

    out["processor"] = processor_class()
    report = merge_class_row(Path(args.out), out, ("dataset", "model"))
    text = "\n".join(class_markdown(report)) + "\n"
    Path(args.out).with_suffix(".md").write_text(text)
    print(text)
    return 0


def class_markdown(report: dict) -> list[str]:
    """benchmarks/latency.md: one summary row per processor class measured, then each class's tables."""
    lines = ["Time per question by processor class (`LLM_DTYPE=auto`: bfloat16 where the processor computes it "
             "natively, else float32): warm questions, median / p95 in s.", "",
             "| processor | class (flags) | dtype | questions | agent | baseline | agent / baseline | cold start: first "
             "agent question |", "|---|---|---|---|---|---|---|---|"]
    for d in report["rows"]:
        proc, agent, base = d["processor"], d["systems"]["agent"], d["systems"]["baseline"]
        dtype = (d["settings"]["overrides"].get("LLM_DTYPE") or proc.get("auto_dtype") or "bfloat16")
        lines.append(f"| {proc['cpu']} | {proc['class']} ({', '.join(proc['flags']) or 'not recorded'}) | {dtype} | "
                     f"{d['questions']} | {_fmt(agent['wall_ms'], 1000, 1)} | {_fmt(base['wall_ms'], 1000, 1)} | "
                     f"{d['agent_over_baseline']['total']:.2f}x | {d['cold_start']['first_agent_question_s']} s |")
    for d in report["rows"]:
        lines += ["", f"## {d['processor']['cpu']}: {d['processor']['class']}", "", *markdown(d)]
    return lines


def _fmt(s: dict | None, scale: float = 1.0, digits: int = 0) -> str:
    if not s or s.get("median") is None:
        return "-"
    return f"{s['median'] / scale:.{digits}f} / {s['p95'] / scale:.{digits}f}"


def markdown(d: dict) -> list[str]:
    """The tables of benchmarks/latency.md and of the README's latency section."""
    agent, base = d["systems"]["agent"], d["systems"]["baseline"]
    ratio = d["agent_over_baseline"]
    ix = d["indexing"]
    met = lambda ok: "met" if ok else "not met"  # noqa: E731
    over = ", ".join(f"{k}={v}" for k, v in d["settings"]["overrides"].items()) or "none"
    lines = [
        f"{d['questions']} questions of `{d['dataset']}`, preset `{d['settings']['preset']}`"
        + (f" (generator `{d['model']}`)" if d.get("model") else
           " (the packaged 0.5B, the default when this was measured; now preset `fast`)") + f" (overrides: {over}), "
        f"{d['warm_up_passes']} warm-up and {d['measured_passes']} measured pass(es) in one process on "
        f"{d['machine']['cpus']} CPUs; load average {d['machine']['load_average_before'][0]} before, "
        f"{d['machine']['load_average_after'][0]} after (a shared machine inflates absolute times; compare ratios).",
        "",
        "| target | measured | |",
        "|---|---|---|",
        f"| time outside LLM calls <= {100 * d['targets']['outside_llm_share_max']:.0f}% of the agent's wall time (warm) | "
        f"{100 * agent['outside_llm_share']:.1f}% (baseline {100 * base['outside_llm_share']:.1f}%) | "
        f"{met(d['met']['outside_llm_share'])} |",
        f"| agent wall time <= {d['targets']['agent_over_baseline_max']}x the baseline's | {ratio['total']:.2f}x over all "
        f"questions (per question median {ratio['per_question']['median']:.2f}x, p95 {ratio['per_question']['p95']:.2f}x) | "
        f"{met(d['met']['agent_over_baseline'])} |",
        f"| a page embedded once (chunk vectors cached by model and text) | {ix['chunks_embedded_with_cache']} of "
        f"{ix['chunks']} chunks embedded again on a rebuild in a new artifacts folder | {met(d['met']['page_embedded_once'])} |",
        "",
        "Warm questions, per node run: median / p95 in ms (LLM = wall time inside model calls; CPU = the node's own "
        "thread, so the model's intra-op threads are not in it).",
        "",
        "| system | node | runs | wall | CPU | LLM |",
        "|---|---|---|---|---|---|",
    ]
    for name, summary in (("agent", agent), ("baseline", base)):
        for node, e in summary["nodes"].items():
            label = f"{node} ({NODE_ROLES[node]})" if node in NODE_ROLES and NODE_ROLES[node] != node else node
            lines.append(f"| {name} | {label} | {e['runs']} | {_fmt(e['wall_ms'])} | {_fmt(e['cpu_ms'])} | {_fmt(e['llm_ms'])} |")
            for part, s in (e.get("parts_ms") or {}).items():
                lines.append(f"| {name} | &nbsp;&nbsp;{node}: {part} | | {_fmt(s)} | | |")
        lines.append(f"| {name} | **question** | {summary['questions']} | {_fmt(summary['wall_ms'])} | "
                     f"{_fmt(summary['process_cpu_ms'])} (process) | {_fmt(summary['llm_ms'])} |")
    cold = d["cold_start"]
    steps = ", ".join(f"{k} {v:.1f} s" for k, v in cold["one_time_s"].items())
    lines += [
        "",
        f"Cold start (one-time costs of a fresh process): {steps}; the first agent question took "
        f"{cold['first_agent_question_s']} s."
        + (f" Peak memory of the process (RSS): {d['peak_rss_mb']:,} MB." if d.get("peak_rss_mb") else ""),
        "",
        "Page indexing per question (median / p95 in s): "
        f"built from nothing {_fmt(ix['cold_build_s'], digits=2)} ({ix['chunks_embedded_cold']} chunks embedded; "
        + ", ".join(f"{p} {_fmt(v, 1000, 2)}" for p, v in ix["cold_build_parts_ms"].items()) + "); "
        f"rebuilt with the vector cache {_fmt(ix['vector_cache_build_s'], digits=2)}; "
        f"loaded from the disk cache {_fmt(ix['disk_load_s'], digits=3)}; from memory {_fmt(ix['memory_hit_s'], digits=4)}.",
    ]
    return lines


if __name__ == "__main__":
    sys.exit(main())
