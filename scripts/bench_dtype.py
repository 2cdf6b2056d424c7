"""What the dtype costs per question on this processor: the default run (LLM_DTYPE=auto) against the same
run in bfloat16, on the same questions in one process, with the judgements compared question by question.

Each processor class keeps its own row in benchmarks/dtype.json (a run on another class adds one); the
class names the kernels PyTorch picks, so a run under ``ATEN_CPU_CAPABILITY=avx2 ONEDNN_MAX_CPU_ISA=AVX2``
(an AVX2 host approximated on a newer one) is a class of its own, marked capped. Every question's pages
are indexed before either run, so both read the same warm index and differ only in the model's dtype.

Usage: [ATEN_CPU_CAPABILITY=avx2 ONEDNN_MAX_CPU_ISA=AVX2] python scripts/bench_dtype.py [--dataset example] [--n N]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--dataset", default="example")
    ap.add_argument("--n", type=int, default=None)
    ap.add_argument("--system", default="agent", choices=("agent", "baseline"))
    ap.add_argument("--dtypes", nargs=2, default=["bfloat16", "auto"], help="the two LLM_DTYPE values compared, in run order")
    ap.add_argument("--preset", default=None)
    ap.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "dtype.json")
    args = ap.parse_args()

    import graphs  # noqa: F401  (registers the agent and the baseline with agentic_rag.runner)
    from agentic_rag.configuration import Settings
    from agentic_rag.eval.runner import run_eval
    from agentic_rag.llm.dtype import processor_class
    from testkit.bench import dtype_comparison, dtype_markdown, index_all, load_average, merge_class_row

    with tempfile.TemporaryDirectory(prefix="bench-dtype-") as tmp:
        base = Settings.load(preset=args.preset, overrides={"ARTIFACTS_DIR": tmp, "EMBEDDING_CACHE_DIR": f"{tmp}/vectors"})
        load_before = load_average()
        indexing = index_all(args.dataset, args.n, base)
        runs = {}
        for dtype in args.dtypes:
            settings = base.replace(LLM_DTYPE=dtype)
            print(f"{args.system} with LLM_DTYPE={dtype}", file=sys.stderr, flush=True)
            runs[dtype] = run_eval(args.dataset, args.system, settings, Path(tmp) / f"run-{dtype}", n=args.n)
    row = {"processor": processor_class(), "dataset": args.dataset, "system": args.system, "preset": args.preset or "default",
           "load_average_before": load_before, "load_average_after": load_average(), "indexing": indexing,
           **dtype_comparison({d: r["rows"] for d, r in runs.items()}, {d: r["summary"] for d, r in runs.items()})}
    report = merge_class_row(args.out, row)
    args.out.with_suffix(".md").write_text(dtype_markdown(report))
    print(args.out.with_suffix(".md").read_text())
    return 0


if __name__ == "__main__":
    sys.exit(main())
