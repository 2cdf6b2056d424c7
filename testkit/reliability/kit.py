"""The CRAG starter-kit adapter. The adapter class in a process of its own, driven as the kit's
local_evaluation.py drives it (one batch, a dict of lists), with the openai backend on the fault server
and the kit folder as its cwd. The adapter is an entry point, above this package's layer: only the
child imports it (its answer for "I don't know" comes back in the child's output)."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from typing import Any

from testkit.processes import ROOT, child_env
from testkit.records import kit_batches
from testkit.reliability.cases import GOOD, KEY, Context, case, process_outcome

KIT_RUN = """
import json, sys, time
from agentic_rag.crag_adapter import CRAG_IDK, UserModel
batch = json.load(open(sys.argv[1]))
model = UserModel(batch_size=len(batch["query"]))
t0 = time.monotonic()
answers = model.batch_generate_answer(batch)
print(json.dumps({"answers": answers, "rows": model.last_batch, "batch_s": round(time.monotonic() - t0, 2),
                  "init_s": model.load_seconds, "idk": CRAG_IDK}))
"""


def kit_batch(ctx: Context, n: int) -> dict[str, list]:
    from agentic_rag.datasets.crag import iter_records

    return next(kit_batches(list(iter_records(ctx.toy))[:n], n))


def kit_run(ctx: Context, name: str, batch: dict[str, list], **settings: Any) -> dict[str, Any]:
    """One batch through UserModel in a subprocess whose working directory is an empty "kit" folder."""
    folder = ctx.folder(name)
    kit, cache = folder / "kit", folder / "crag_cache"
    kit.mkdir(parents=True)
    (folder / "batch.json").write_text(json.dumps(batch))
    values = {"LLM_BACKEND": "openai", "OPENAI_BASE_URL": ctx.server.url, "LLM_MODEL": "m", "LLM_BACKOFF_S": 0.1,
              "CRAG_ARTIFACTS_DIR": cache, **settings}
    env = {**{f"AGENTIC_RAG_{k}": str(v) for k, v in values.items()}, "OPENAI_API_KEY": KEY}
    t0 = time.monotonic()
    proc = subprocess.run([sys.executable, "-c", KIT_RUN, str(folder / "batch.json")], cwd=kit, capture_output=True,
                          text=True, env={**child_env(), **env}, timeout=1800)
    out = json.loads(proc.stdout.splitlines()[-1]) if proc.returncode == 0 and proc.stdout.strip() else {}
    written = [p for p in cache.rglob("*") if p.is_file()]
    return {"proc": proc, "process_s": round(time.monotonic() - t0, 1), "answers": out.get("answers", []),
            "rows": out.get("rows", []), "batch_s": out.get("batch_s"), "init_s": out.get("init_s"),
            "idk": out.get("idk"),  # the adapter's answer for "I don't know"
            "in_kit_folder": sorted(str(p.relative_to(kit)) for p in kit.rglob("*")),
            "in_cache": sorted(str(p.relative_to(cache)) for p in written),
            "key_leaked": KEY in proc.stdout + proc.stderr or any(KEY.encode() in p.read_bytes() for p in written)}


def kit_outcome(run: dict[str, Any], n: int) -> dict[str, Any]:
    proc = run["proc"]
    statuses = [r["status"] for r in run["rows"]]
    return {**process_outcome(proc, proc.stderr, 0), "rows_lost": n - len(run["answers"]), "key_leaked": run["key_leaked"],
            "outcome": f"{len(run['answers'])} answers, "
                       + ", ".join(f"{s} x{statuses.count(s)}" for s in dict.fromkeys(statuses)),
            "detail": {k: v for k, v in run.items() if k not in ("proc", "in_cache", "idk")}
                      | {"files_in_cache": len(run["in_cache"]), "stderr_tail": proc.stderr[-600:]}}


@case("kit", "a broken record in a batch", "question 2 of 3 has a list as page_result")
def _kit_broken(ctx: Context) -> dict[str, Any]:
    batch = kit_batch(ctx, 3)
    batch["search_results"][1] = [{"page_name": "broken", "page_result": ["<p>x</p>"]}]
    ctx.serve(GOOD)
    # the scripted server answers every call with GOOD, the verifier's yes/no question too, which the
    # final check would read as "no": the case is about the broken record, so the verifier is off
    run = kit_run(ctx, "kit_broken", batch, VERIFIER_ENABLED=False)
    res = kit_outcome(run, 3)
    a = run["answers"]
    res["outcome"] += f"; answers {a}; logged: {next((r.get('error', '') for r in run['rows'] if r.get('error')), '')[:90]}"
    res["ok_expected"] = (len(a) == 3 and a[1] == run["idk"] and all(x.startswith("Finding Nemo") for x in (a[0], a[2]))
                          and [r["status"] for r in run["rows"]] == ["answered", "failed", "answered"])
    return res


@case("kit", "a model that hangs", "every call hangs; CRAG_SECONDS_PER_QUERY=8, a batch of 3")
def _kit_hang(ctx: Context) -> dict[str, Any]:
    per_query, n = 8.0, 3
    ctx.server.set_plan([], default="hang")
    try:
        run = kit_run(ctx, "kit_hang", kit_batch(ctx, n), CRAG_SECONDS_PER_QUERY=per_query)
    finally:
        ctx.serve(GOOD)
    res = kit_outcome(run, n)
    slowest = max((r["seconds"] for r in run["rows"]), default=None)
    limit = n * per_query
    res["outcome"] += (f"; batch {run['batch_s']} s of {limit:.0f} s allowed, slowest question {slowest} s of "
                       f"{per_query:.0f} s")
    res["ok_expected"] = (run["answers"] == [run["idk"]] * n and run["batch_s"] is not None and run["batch_s"] <= limit
                          and slowest is not None and slowest <= per_query)
    res["detail"].update(limit_s=limit, slowest_question_s=slowest, per_query_s=per_query)
    return res


@case("kit", "files written", "a batch of 2 run from an empty kit folder, CRAG_ARTIFACTS_DIR elsewhere")
def _kit_files(ctx: Context) -> dict[str, Any]:
    ctx.serve(GOOD)
    run = kit_run(ctx, "kit_files", kit_batch(ctx, 2))
    res = kit_outcome(run, 2)
    res["outcome"] += f"; {len(run['in_kit_folder'])} files in the kit folder, {len(run['in_cache'])} in CRAG_ARTIFACTS_DIR"
    res["ok_expected"] = (not run["in_kit_folder"] and "telemetry/crag_kit.jsonl" in run["in_cache"]
                          and any(p.startswith("cache/questions/") for p in run["in_cache"]))
    return res


@case("kit", "official kit run: batch seconds vs limits",
      "from benchmarks/crag_kit.json (scripts/bench_crag_kit.py); not re-run here")
def _kit_official(ctx: Context) -> dict[str, Any]:
    runs = json.loads((ROOT / "benchmarks" / "crag_kit.json").read_text())["runs"]
    after = {label: r for label, r in runs.items() if r["adapter"].startswith("after")}
    shown = "; ".join(f"{r['per_query_s']:.0f} s per query: "
                      + ", ".join(f"{b['wall_s']:.0f} of {b['limit_s']:.0f} s" for b in r["batches"]) for r in after.values())
    return {"exit_code": 0,
            "outcome": f"the kit's own loop over its 10 questions, current adapter, each batch's seconds of its limit: {shown}",
            "ok_expected": bool(after) and all(b["wall_s"] <= b["limit_s"] for r in after.values() for b in r["batches"]),
            "rows_lost": sum(b["questions"] - b["started"] for r in after.values() for b in r["batches"]),
            "detail": {label: {"batches": r["batches"], "questions_started": r["questions_started"]}
                       for label, r in runs.items()}}

