"""Resources: the peak memory of a 100-question `eval` with the packaged 0.5B (not run by default)."""

from __future__ import annotations

import sys
from typing import Any

from testkit.processes import eval_cmd, result_ids
from testkit.reliability.cases import TRACEBACK, Context, case, cli

MEMORY_WRAPPER = """
import resource, subprocess, sys, time
t0 = time.monotonic()
rc = subprocess.run(sys.argv[1:]).returncode
print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss, round(time.monotonic() - t0, 1), rc)
"""


@case("memory", "peak RSS of a 100-question eval", "default settings, packaged 0.5B, SQuAD 2.0 (CRAG format)")
def _memory(ctx: Context) -> dict[str, Any]:
    data = ctx.work / "squad2_memory.jsonl"
    n = ctx.memory_n
    cli([sys.executable, "-m", "agentic_rag.cli", "prepare", "squad2", "--n", str(n), "--out", str(data),
         "--input", str(ctx.shared_data / "squad2" / "squad2_dev_half.jsonl")], expect=0)
    out = ctx.folder("memory")
    cmd = ["nice", "-n", "10", *eval_cmd(data, out, ["-o", f"ARTIFACTS_DIR={ctx.work / 'artifacts'}"])]
    proc = cli([sys.executable, "-c", MEMORY_WRAPPER, *cmd], timeout=6 * 3600)
    kb, seconds, rc = proc.stdout.split()[-3:]
    ids = result_ids(out)
    peak_mb = round(int(kb) / 1024, 1)
    return {"exit_code": int(rc), "crash": int(rc) != 0, "traceback": TRACEBACK in proc.stderr,
            "outcome": f"peak RSS {peak_mb} MB over {len(set(ids))} questions in {float(seconds) / 60:.1f} min",
            "rows_lost": n - len(set(ids)), "rows_doubled": len(ids) - len(set(ids)), "ok_expected": True,
            "detail": {"peak_rss_mb": peak_mb, "questions": n, "wall_s": float(seconds), "dataset": "squad2_dev_half, prepared --n"}}
