"""The same agent in-process and served (issue: one calibrated decision that travels with the model).

The packaged 1.5B answers through llama.cpp's OpenAI-compatible server (``LLM_BACKEND=openai``), which
returns token log-probabilities, with a decision fitted on the served model's own signals; it is
compared with the in-process 1.5B and its shipped decision on the same test questions.

Starts llama.cpp's server on the packaged GGUF as ``agentic-rag serve`` does (``pip install
'llama-cpp-python[server]'``, built from source: 10-16 minutes on 2 cores) unless ``--server-url``
names one already listening.
With ``--fit``, first fits the served decision on a dev split, as ``agentic-rag train decision`` does
(the served backend has no answerability probe: it reads the log-probabilities and the verifier's
P(yes) instead). Then runs the agent with ``GATE_POLICY=fitted`` on each test dataset and pairs it
with the in-process fitted run that ``scripts/bench_decision_policy.py`` left under
``artifacts/runs/decision_policy_<TAG>/<dataset>/agent``.

Writes benchmarks/decision/served_<TAG>.json and .md; with --fit, the served decision where the
packaged model's decisions ship (agentic_rag/data/decisions/decision-openai-<model>.json, found by
``GATE_POLICY=fitted`` for ``LLM_MODEL=<model>`` on a server) and its fit report and plots under
benchmarks/decision/served/.

``--server transformers --policy thresholds`` is the other served backend with the default settings, as
a new user starts it: ``transformers serve`` on the packaged model's converted folder (no log-probabilities),
the threshold policy, the answerability read by the packaged reader (the ``read_answerability`` node),
paired with the committed in-process default runs (benchmarks/agent_vs_baseline/<dataset>/agent_*); it
writes benchmarks/decision/served_transformers_thresholds_<TAG>.json and .md.

Usage: python scripts/bench_served.py [--fit --dev DEV.jsonl] [--datasets rgb40 squad200]
       [--fit-dir DIR] [--server-url URL] [--port 8765] [--tag qwen2.5-coder-1.5b] [--reuse]
       [--server llama|transformers] [--policy fitted|thresholds]
"""

from __future__ import annotations

import argparse
import contextlib
import gzip
import json
import shutil
import sys
from pathlib import Path

import graphs  # noqa: F401  (registers the agent and baseline graphs with agentic_rag.runner)
from agentic_rag.baug.fitted import DECISIONS_DIR
from agentic_rag.configuration import Settings, SettingsError
from agentic_rag.datasets.prepare.benchmarks import benchmark_dataset
from agentic_rag.eval.compare import paired_bootstrap, paired_ids
from agentic_rag.eval.markdown import markdown_table
from agentic_rag.eval.metrics import run_summary
from agentic_rag.eval.provenance import file_sha256
from agentic_rag.eval.results import read_results
from agentic_rag.eval.runner import run_eval
from agentic_rag.llm.packaged import PACKAGED_MODELS, ensure_converted
from agentic_rag.llm.serve import start_server
from agentic_rag.reader.read import reader_plan
from agentic_rag.training.decision import calibrate_fit
from agentic_rag.training.decision import to_markdown as fit_markdown

ROOT = Path(__file__).resolve().parents[1]
SHARED = ROOT.parent / "shared" / "data"
MODEL = PACKAGED_MODELS["packaged-1.5b"]


def summary_of(rows: list[dict]) -> dict:
    s = run_summary("agent", rows, 0)
    return {k: s[k] for k in ("score", "accuracy", "hallucination", "refusal_rate_unanswerable", "false_refusal_rate",
                              "tokens_per_q", "llm_calls_per_q", "latency_p50_ms")}


def measure(local_dir: Path, served_dir: Path) -> dict:
    read = {"in-process": read_results(local_dir / "results.jsonl"), "served": read_results(served_dir / "results.jsonl")}
    ids = paired_ids(*read.values())
    rows = {k: {r["id"]: r for r in v} for k, v in read.items()}
    pick = {k: [rows[k][i] for i in ids] for k in rows}
    return {"questions": len(ids), "systems": {k: summary_of(v) for k, v in pick.items()},
            "score_difference": paired_bootstrap([r["score"] for r in pick["in-process"]],
                                                 [r["score"] for r in pick["served"]]),
            "logprobs": json.loads((served_dir / "config.json").read_text()).get("logprobs"),
            "judgements_flipped": sum(rows["in-process"][i]["judgement"] != rows["served"][i]["judgement"] for i in ids)}


def to_markdown(report: dict) -> str:
    if report.get("policy", "fitted") == "fitted":
        about = ("In-process: the packaged model in this process with its shipped decision (probe, log-probabilities, "
                 f"verifier). Served: the same GGUF behind llama.cpp's server (`{report['server']}`), "
                 "`LLM_BACKEND=openai`, with the decision fitted on its own signals "
                 f"(`{report['served_decision']}`). Both `GATE_POLICY=fitted`.")
    else:
        about = ("In-process: the committed default runs (benchmarks/agent_vs_baseline/<dataset>/agent_*). Served: the "
                 f"same packaged model behind `{report['server']}`, `LLM_BACKEND=openai`, the default settings "
                 "(`GATE_POLICY=thresholds`); the answerability probe is read by the packaged reader "
                 f"({report.get('reader')}) in the `read_answerability` node.")
    lines = [f"# The agent in-process and served ({report['tag']})", "",
             about + " Score difference: served minus in-process, paired 95% bootstrap interval.", ""]
    lines += markdown_table(
        ["dataset", "backend", "score", "accuracy", "hallucination", "refusal (unanswerable)", "false refusal",
         "tokens/q", "calls/q", "median latency"],
        [[name, backend, f"{s['score']:+.3f}", f"{s['accuracy']:.3f}", f"{s['hallucination']:.3f}",
          s["refusal_rate_unanswerable"], s["false_refusal_rate"], f"{s['tokens_per_q']:.0f}",
          f"{s['llm_calls_per_q']:.2f}", f"{s['latency_p50_ms'] / 1000:.1f} s"]
         for name, d in report["datasets"].items() for backend, s in d["systems"].items()])
    lines.append("")
    lines += markdown_table(
        ["dataset", "questions", "score difference (95% interval)", "0 inside", "judgements flipped",
         "served log-probabilities"],
        [[name, d["questions"], f"{sd['diff']:+.3f} ({sd['ci95_low']:+.3f} to {sd['ci95_high']:+.3f})",
          "yes" if sd["ci95_low"] <= 0 <= sd["ci95_high"] else "no", d["judgements_flipped"],
          (d["logprobs"] or {}).get("status")]
         for name, d in report["datasets"].items() for sd in [d["score_difference"]]])
    return "\n".join(lines) + "\n"


def inprocess_default_run(name: str, folder: Path, work: Path) -> Path:
    """The committed in-process default run of ``name`` as a run folder, checked to be on the very
    questions this script prepares (the same dataset hash)."""
    committed = ROOT / "benchmarks" / "agent_vs_baseline" / name
    config = json.loads((committed / "agent_config.json").read_text())
    dataset = benchmark_dataset(name, work, SHARED)
    if file_sha256(Path(dataset)) != config["dataset_sha256"]:
        raise SystemExit(f"{committed}: its dataset is not the one {name} prepares now; regenerate it first")
    folder.mkdir(parents=True, exist_ok=True)
    with gzip.open(committed / "agent_results.jsonl.gz", "rt", encoding="utf-8") as fh:
        (folder / "results.jsonl").write_text(fh.read(), encoding="utf-8")
    (folder / "config.json").write_text(json.dumps({**config, "dataset": dataset}, indent=2))
    return folder


def transformers_server(folder: Path, port: int, log: Path):
    """``transformers serve`` pinned to a converted packaged folder, offline, and its base URL."""
    import os

    from testkit.servers import console_script, running

    cmd = [*(console_script("transformers") or ["transformers"]), "serve", "--host", "127.0.0.1", "--port", str(port), str(folder)]
    hub = log.parent / "hub"
    hub.mkdir(parents=True, exist_ok=True)
    url = f"http://127.0.0.1:{port}/v1"
    stack = contextlib.ExitStack()
    stack.enter_context(running(cmd, url + "/models", log, 300, env={**os.environ, "HF_HUB_CACHE": str(hub), "HF_HUB_OFFLINE": "1"}))
    return stack, url


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--datasets", nargs="+", default=["rgb40", "squad200"])
    ap.add_argument("--fit", action="store_true", help="fit the served decision on --dev first")
    ap.add_argument("--dev", type=Path, help="the dev split the served decision is fitted on (with --fit)")
    ap.add_argument("--fit-dir", type=Path, default=None,
                    help="where the dev run and fit go (default ARTIFACTS_DIR/calibration/served-<model>); a finished "
                         "run there is read, not run again")
    ap.add_argument("--server-url", default=None, help="an OpenAI-compatible server already serving the model")
    ap.add_argument("--server", choices=("llama", "transformers"), default="llama",
                    help="llama: agentic-rag serve (llama.cpp, log-probabilities); transformers: transformers serve (none)")
    ap.add_argument("--policy", choices=("fitted", "thresholds"), default="fitted",
                    help="fitted: the served decision against the in-process fitted runs; thresholds: the default "
                         "settings against the committed in-process default runs")
    ap.add_argument("--port", type=int, default=8765)
    ap.add_argument("--tag", default="qwen2.5-coder-1.5b", help="the in-process fitted runs' tag (bench_decision_policy)")
    ap.add_argument("--reuse", action="store_true", help="re-read the served runs instead of running again")
    ap.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "decision")
    args = ap.parse_args()
    if args.fit and (args.dev is None or not args.dev.is_file()):
        raise SystemExit("--fit needs --dev DEV.jsonl, a development split")
    if args.fit and args.policy != "fitted":
        raise SystemExit("--fit fits the served decision: it goes with --policy fitted")
    served_out = args.out / "served"
    decision = DECISIONS_DIR / MODEL.decision_file("openai")
    if args.policy == "fitted" and not args.fit and not decision.is_file():
        raise SystemExit(f"no served decision at {decision}: run with --fit --dev DEV.jsonl first")
    if args.policy == "thresholds":  # before a server starts: every dataset needs its committed in-process run
        missing = [d for d in args.datasets if not (ROOT / "benchmarks" / "agent_vs_baseline" / d / "agent_config.json").is_file()]
        if missing:
            raise SystemExit(f"no committed in-process default run for {', '.join(missing)} "
                             "(scripts/bench_agent_vs_baseline.py makes benchmarks/agent_vs_baseline/<dataset>/)")
    base = Settings.load()
    artifacts = Path(base.paths.ARTIFACTS_DIR)
    variant = "" if (args.server, args.policy) == ("llama", "fitted") else f"{args.server}_{args.policy}_"
    stack, url = None, args.server_url
    if url is None and not args.reuse:
        log = artifacts / f"{args.server}_server.log"
        if args.server == "llama":
            proc, url = start_server(MODEL, Path(base.paths.MODEL_CACHE_DIR), args.port, log)
            stack = contextlib.ExitStack()
            stack.callback(lambda: (proc.terminate(), proc.wait(timeout=30)))
        else:
            stack, url = transformers_server(ensure_converted(Path(base.paths.MODEL_CACHE_DIR).expanduser(), MODEL),
                                             args.port, log)
    with stack or contextlib.nullcontext():
        name = (MODEL.short_name if args.server == "llama"
                else str(ensure_converted(Path(base.paths.MODEL_CACHE_DIR).expanduser(), MODEL)))
        served = {"LLM_BACKEND": "openai", "OPENAI_BASE_URL": url or "http://127.0.0.1:1/v1", "LLM_MODEL": name,
                  "OPENAI_API_KEY": "none"}
        try:
            settings = base.replace(**served)
        except SettingsError as exc:
            raise SystemExit(f"settings error: {exc}") from None
        if args.fit:
            fit_dir = args.fit_dir or artifacts / "calibration" / f"served-{MODEL.short_name}"
            report = calibrate_fit(settings, fit_dir, dataset=args.dev, decision_path=fit_dir / "decision.json")
            served_out.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(fit_dir / "decision.json", decision)
            for png in ("reliability.png", "risk_coverage.png"):
                if (fit_dir / png).is_file():
                    shutil.copyfile(fit_dir / png, served_out / png)
            (served_out / "fit.json").write_text(json.dumps(report, indent=2) + "\n")
            (served_out / "fit.md").write_text(fit_markdown(report))
        run_settings = settings.replace(GATE_POLICY="fitted", DECISION_FILE=str(decision)) if args.policy == "fitted" else settings
        server = ("agentic-rag serve (llama-cpp-python's llama_cpp.server)" if args.server == "llama"
                  else f"transformers serve {MODEL.converted_dir}")
        out = {"tag": args.tag, "server": server, "policy": args.policy, "datasets": {},
               **({"served_decision": str(decision.relative_to(ROOT))} if args.policy == "fitted" else
                  {"reader": reader_plan(run_settings).describe()})}
        for dname in args.datasets:
            served_dir = artifacts / "runs" / f"served_{variant}{args.tag}" / dname / "agent"
            if args.policy == "fitted":
                local_dir = artifacts / "runs" / f"decision_policy_{args.tag}" / dname / "agent"
                if not (local_dir / "results.jsonl").is_file():
                    raise SystemExit(f"{local_dir}: no in-process fitted run (scripts/bench_decision_policy.py makes it)")
            else:
                local_dir = inprocess_default_run(dname, artifacts / "runs" / "inprocess_default" / dname / "agent",
                                                  artifacts / "runs" / "served_data")
            if not args.reuse:  # a finished run is read as it is; a stopped one goes on (a new fit starts afresh)
                dataset = json.loads((local_dir / "config.json").read_text())["dataset"]
                run_eval(dataset, "agent", run_settings, served_dir, overwrite=args.fit, resume=not args.fit)
            out["datasets"][dname] = measure(local_dir, served_dir)
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / f"served_{variant}{args.tag}.json").write_text(json.dumps(out, indent=2) + "\n")
    (args.out / f"served_{variant}{args.tag}.md").write_text(to_markdown(out))
    print(to_markdown(out))
    return 0


if __name__ == "__main__":
    sys.exit(main())
