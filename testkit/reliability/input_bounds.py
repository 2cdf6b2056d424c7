"""Bounds and links (group ``bounds_links``): links in a folder a command writes into, a page made of fragments, and
inputs that had no bound (a number of 5,000 digits, nesting 200,000 deep, a 70 MB line, 2,000 pages in a
served record, a zlib bomb and a recursive view in a checkpoint file, a decision file whose tree loops, rows
of the wrong types, a reply of 100 KB of spaces, SVG text drawn off its drawing). Each case is a real process."""

from __future__ import annotations

import json
import sqlite3
import sys
import time
import zlib
from pathlib import Path
from typing import Any

from testkit.bad_inputs import rec, write_jsonl
from testkit.processes import child_env, eval_cmd, result_ids
from testkit.reliability.cases import (
    GOOD,
    TRACEBACK,
    Context,
    ask_cmd,
    case,
    cli,
    eval_outcome,
    ingest_cmd,
    one_line_error,
    process_outcome,
    served_graph,
)

CLI = [sys.executable, "-m", "agentic_rag.cli"]
GROUP = "bounds_links"
FRAGMENT = "<p>At the 76th Academy Awards, held in 2004, Finding Nemo won the Oscar for Best Animated Feature.</p><p>Two more.</p>"


PEAK_MARK = "peak-rss-kb="
# Runs the command it is given and prints its peak memory: a wrapper's one child is that command, so the
# wrapper's RUSAGE_CHILDREN is the command's own (the bench's would be the largest of every case so far).
_PEAK_WRAPPER = ("import resource, subprocess, sys; code = subprocess.run(sys.argv[1:]).returncode; "
                 f"print('{PEAK_MARK}%d' % resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss, file=sys.stderr); "
                 "sys.exit(code)")


def _measured(cmd: list[str], timeout: float = 600) -> tuple[Any, float]:
    """``cmd`` run to its end, and its own peak memory in MB."""
    proc = cli([sys.executable, "-c", _PEAK_WRAPPER, *cmd], timeout=timeout)
    kept = [x for x in proc.stderr.splitlines() if not x.startswith(PEAK_MARK)]
    peaks = [int(x[len(PEAK_MARK):]) for x in proc.stderr.splitlines() if x.startswith(PEAK_MARK)]
    proc.stderr = "\n".join(kept) + "\n"
    return proc, (peaks[-1] / 1024 if peaks else float("nan"))


def _finished(ctx: Context, name: str, data: Path, extra: tuple[str, ...] = ()) -> tuple[Path, Any]:
    ctx.serve(GOOD)
    out = ctx.folder(name)
    return out, cli(eval_cmd(data, out, [*extra, *ctx.opts()]))


@case(GROUP, "eval --resume into a folder of links", "summary.json and report.md linked to files outside the run folder; "
      "eval --resume, then trace --html and compare --out onto links")
def _links(ctx: Context) -> dict[str, Any]:
    out, _ = _finished(ctx, "linked_run", ctx.toy, ("--n", "2"))
    victims = {name: ctx.work / f"victim_{name}" for name in ("summary.json", "report.md", "trace.html", "cmp.md")}
    for victim in victims.values():
        victim.write_text("keep me")
    for name in ("summary.json", "report.md"):
        (out / name).unlink()
        (out / name).symlink_to(victims[name])
    resumed = cli(eval_cmd(ctx.toy, out, ["--n", "3", "--resume", *ctx.opts()]))
    res = one_line_error(resumed, ["is a link", "never writes through a link"])
    for name in ("summary.json", "report.md"):
        (out / name).unlink()
    cli(eval_cmd(ctx.toy, out, ["--n", "3", "--resume", *ctx.opts()]), expect=0)
    (ctx.work / "trace_link.html").unlink(missing_ok=True)
    (ctx.work / "trace_link.html").symlink_to(victims["trace.html"])
    (ctx.work / "cmp_link.md").unlink(missing_ok=True)
    (ctx.work / "cmp_link.md").symlink_to(victims["cmp.md"])
    traced = cli([*CLI, "trace", str(out), "--html", str(ctx.work / "trace_link.html")])
    compared = cli([*CLI, "compare", str(out), str(out), "--out", str(ctx.work / "cmp_link.md")])
    kept = {name: path.read_text() == "keep me" for name, path in victims.items()}
    res.update(outcome=f"{res['outcome']}; trace --html exit {traced.returncode}, compare --out exit {compared.returncode}; "
                       f"{sum(kept.values())} of {len(kept)} link targets untouched",
               crash=res["crash"] or bool(traced.returncode or compared.returncode),
               traceback=res["traceback"] or TRACEBACK in traced.stderr + compared.stderr,
               ok_expected=res["ok_expected"] and all(kept.values()) and len(result_ids(out)) == 3)
    res["detail"] = {"kept": kept}
    return res


@case(GROUP, "eval: a page made of fragments", 'page_result = "<p>...</p><p>...</p>" (two top-level elements)')
def _fragments(ctx: Context) -> dict[str, Any]:
    data = write_jsonl(ctx.work / "fragments.jsonl", [rec("fragment", pages=[FRAGMENT]), rec("plain")])
    out, proc = _finished(ctx, "fragments", data)
    return eval_outcome(ctx, out, proc, 2, ["STOP_OVERLAP_OK", "STOP_OVERLAP_OK"])


@case(GROUP, "eval and search: a number of 5,000 digits", "record 1 of 3 holds a JSON number of 5,000 digits")
def _digits(ctx: Context) -> dict[str, Any]:
    line = json.dumps(rec("digits"))[:-1] + ', "n": ' + "9" * 5000 + "}"
    data = write_jsonl(ctx.work / "digits.jsonl", [rec("a"), rec("b")], {0: line.encode()})
    out, proc = _finished(ctx, "digits", data)
    res = eval_outcome(ctx, out, proc, 2, None)
    searched = cli([*CLI, "search", "nemo", "--dataset", str(data), "--id", "a", *ctx.opts()])
    named = f"{data}:1:" in proc.stderr and f"{data}:1:" in searched.stderr
    res.update(outcome=res["outcome"] + f"; search exit {searched.returncode}; the bad line named: {named}",
               crash=res["crash"] or bool(searched.returncode), traceback=res["traceback"] or TRACEBACK in searched.stderr,
               ok_expected=res["ok_expected"] and named and sorted(result_ids(out)) == ["a", "b"])
    return res


@case(GROUP, "prepare: nesting 200,000 deep", "squad2, nq, rgb and hotpotqa inputs whose line 1 is '[' * 200000, line 2 "
      "a number of 5,000 digits")
def _deep(ctx: Context) -> dict[str, Any]:
    src = ctx.work / "deep.jsonl"
    src.write_text("[" * 200_000 + "\n" + '{"id": 9' + "9" * 5000 + "}\n")
    procs = {kind: cli([*CLI, "prepare", kind, "--input", str(src), "--out", str(ctx.work / f"deep_{kind}.jsonl")])
             for kind in ("squad2", "nq", "rgb", "hotpotqa")}
    # JSON lines: each bad line counted and skipped (exit 0); HotpotQA's one JSON array: one line for the file (exit 2)
    fine = {k: (p.returncode == 0 and '"bad": 2' in p.stdout) or
               (p.returncode == 2 and len([x for x in p.stderr.splitlines() if x.startswith("error")]) == 1)
            for k, p in procs.items()}
    return {"exit_code": max(p.returncode for p in procs.values()), "crash": any(p.returncode not in (0, 2) for p in procs.values()),
            "traceback": any(TRACEBACK in p.stderr for p in procs.values()),
            "outcome": "; ".join(f"{k}: exit {p.returncode}" + (", 2 bad lines counted" if '"bad": 2' in p.stdout else "")
                                 for k, p in procs.items()),
            "ok_expected": all(fine.values()), "detail": {k: p.stderr.strip()[-200:] for k, p in procs.items()}}


@case(GROUP, "search: a 70 MB line", "record 1 of 2 is one line of 70 MB (past MAX_RECORD_BYTES); search of record 2")
def _long_line(ctx: Context) -> dict[str, Any]:
    data = ctx.work / "long_line.jsonl"
    with data.open("w") as fh:
        fh.write(json.dumps(rec("huge", pages=["x" * 70_000_000])) + "\n" + json.dumps(rec("small")) + "\n")
    t0 = time.monotonic()
    proc, peak_mb = _measured([*CLI, "search", "nemo", "--dataset", str(data), "--id", "small", "--json", *ctx.opts()])
    data.unlink()
    return {**process_outcome(proc, proc.stderr, 0),
            "outcome": f"exit {proc.returncode} in {time.monotonic() - t0:.1f} s; the long line "
                       f"{'named and skipped' if 'MAX_RECORD_BYTES' in proc.stderr else 'NOT named'}; "
                       f"peak memory {peak_mb:.0f} MB",
            "ok_expected": proc.returncode == 0 and "MAX_RECORD_BYTES" in proc.stderr and peak_mb < 1000,
            "detail": {"stderr_tail": proc.stderr[-300:]}}


@case(GROUP, "served graph: unbounded and malformed requests", "langgraph dev (a scripted model, no decision for it): a record "
      "of 2,000 pages; config [1]; metadata nested 990 deep; GATE_POLICY=fitted in the request")
def _served(ctx: Context) -> dict[str, Any]:
    from testkit.servers import graph_server, post

    question = {"question": "which movie won best animated feature at the 2004 oscars?"}
    pages = [{"page_name": f"p{i}", "page_url": f"toy://p{i}", "page_result": f"page {i}"} for i in range(2000)]
    bodies = {"2,000 pages": {"input": {**question, "record": {"interaction_id": "big", "query": question["question"],
                                                               "search_results": pages}}},
              "config [1]": {"input": question, "config": [1]},
              "GATE_POLICY=fitted": {"input": question, "context": {"baug": {"GATE_POLICY": "fitted"}}}}
    env = {**child_env(), "AGENTIC_RAG_LLM_BACKEND": "openai", "AGENTIC_RAG_OPENAI_BASE_URL": ctx.server.url,
           "AGENTIC_RAG_LLM_MODEL": "m"}

    def requests(langgraph: list[str], folder: Path):
        with graph_server(langgraph, folder, env) as (port, log):
            t0 = time.monotonic()
            replies = {name: post(port, {"assistant_id": "agent", **body}, timeout=120) for name, body in bodies.items()}
            replies["metadata 990 deep"] = post(port, b'{"assistant_id": "agent", "input": ' + json.dumps(question).encode()
                                                + b', "metadata": {"x": ' + b"[" * 990 + b"]" * 990 + b"}}", timeout=120)
            return replies, time.monotonic() - t0, log

    replies, seconds, log = served_graph(ctx, "served_bounds", requests)
    text = log.read_text(errors="replace")
    return {"exit_code": 0, "crash": any(s >= 500 for s, _ in replies.values()), "traceback": TRACEBACK in text,
            "outcome": "; ".join(f"{k}: {s}" for k, (s, _) in replies.items()) + f" (all in {seconds:.1f} s)",
            "ok_expected": all(s == 422 for s, _ in replies.values()) and seconds < 60,
            "detail": {k: str(r.get("detail"))[:160] for k, (_, r) in replies.items()}}


def _checkpointed_run(ctx: Context, name: str) -> Path:
    ctx.serve(GOOD)
    out = ctx.folder(name)
    cli(eval_cmd(ctx.toy, out, ["--n", "1", "--checkpoints", *ctx.opts()]), expect=0)
    return out


@case(GROUP, "trace --steps: a zlib bomb", "one checkpointed value replaced by 3 MB of zlib that inflates to 3 GB")
def _bomb(ctx: Context) -> dict[str, Any]:
    out = _checkpointed_run(ctx, "zlib_bomb")
    squeeze, zeros = zlib.compressobj(9), bytes(1 << 20)
    bomb = b"".join(squeeze.compress(zeros) for _ in range(3000)) + squeeze.flush()  # 3 GB inflated, never held
    with sqlite3.connect(out / "checkpoints.sqlite") as conn:
        conn.execute("UPDATE blobs SET value = ? WHERE rowid = (SELECT MIN(rowid) FROM blobs WHERE type LIKE '%zlib')",
                     (bomb,))
    t0 = time.monotonic()
    proc, peak_mb = _measured([*CLI, "trace", str(out), "--id", "@0", "--steps"])
    res = one_line_error(proc, ["MAX_CHECKPOINT_BYTES"])
    res["outcome"] += f" (after {time.monotonic() - t0:.1f} s; peak memory {peak_mb:.0f} MB)"
    res["ok_expected"] &= peak_mb < 2000
    return res


@case(GROUP, "trace --steps: a recursive view", "checkpoints.sqlite whose 'checkpoints' is a recursive view that never ends")
def _view(ctx: Context) -> dict[str, Any]:
    out = _checkpointed_run(ctx, "recursive_view")
    with sqlite3.connect(out / "checkpoints.sqlite") as conn:
        conn.execute("ALTER TABLE checkpoints RENAME TO old_checkpoints")
        conn.execute("CREATE VIEW checkpoints AS WITH RECURSIVE r(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM r) "
                     "SELECT 'x' AS thread_id, n AS checkpoint_ns FROM r")
    t0 = time.monotonic()
    proc = cli([*CLI, "trace", str(out), "--id", "@0", "--steps"], timeout=300)
    res = one_line_error(proc, ["view 'checkpoints'"])
    res["outcome"] += f" (after {time.monotonic() - t0:.1f} s)"
    return res


@case(GROUP, "ask: a hostile DECISION_FILE", "a boosting tree whose node 1 points back to node 0; then a logistic model "
      "of one coefficient for two features")
def _decision(ctx: Context) -> dict[str, Any]:
    from agentic_rag.baug.fitted import DECISION_FORMAT

    model = {"kind": "boosting", "features": ["overlap_est"], "reference": [0.5],
             "params": {"init": 0.0, "learning_rate": 0.1, "trees": [
                 {"left": [1, 0], "right": [1, 0], "feature": [0, 0], "threshold": [0.5, 0.5], "value": [0.0, 1.0]}]}}
    short = {"kind": "logistic", "features": ["overlap_est", "faith_est"], "reference": [0.5, 0.5],
             "params": {"intercept": 3.0, "coef": [1.0], "mean": [0.5], "scale": [1.0]}}
    results = []
    for name, base in (("cycle", model), ("short", short)):
        path = ctx.work / f"decision_{name}.json"
        path.write_text(json.dumps({"format": DECISION_FORMAT, "model_key": "openai:m", "backend": "openai",
                                    "features": base["features"], "base": base}))
        t0 = time.monotonic()
        proc = cli(ask_cmd(ctx, *ctx.opts(GATE_POLICY="fitted", DECISION_FILE=path)), timeout=300)
        results.append({**one_line_error(proc, ["is not a decision file"]), "process_s": round(time.monotonic() - t0, 1)})
    return {**results[0], "outcome": "; ".join(f"{r['outcome']} ({r['process_s']} s)" for r in results),
            "ok_expected": all(r["ok_expected"] for r in results), "crash": any(r["crash"] for r in results),
            "traceback": any(r["traceback"] for r in results)}


@case(GROUP, "trace and compare: rows and files of the wrong types", "a row with tokens 'x', one with latency NaN, one with "
      "judgement {}, one with id [1], one with id null; summary.json a list, config.json broken; then --resume")
def _wrong_types(ctx: Context) -> dict[str, Any]:
    out, _ = _finished(ctx, "wrong_types", ctx.toy, ("--n", "6"))
    lines = (out / "results.jsonl").read_text().splitlines()
    for i, damage in enumerate(({"tokens": "x"}, {"latency_ms": float("nan")}, {"judgement": {}}, {"id": [1]},
                                {"id": None}), start=1):
        lines[i] = json.dumps({**json.loads(lines[i]), **damage})
    (out / "results.jsonl").write_text("\n".join(lines) + "\n")
    (out / "summary.json").write_text("[1, 2]")
    (out / "config.json").write_text("{broken")
    procs = {"trace": cli([*CLI, "trace", str(out)]), "trace --id": cli([*CLI, "trace", str(out), "--id", "@0"]),
             "trace --html": cli([*CLI, "trace", str(out), "--html", str(ctx.work / "wrong_types.html")]),
             "compare": cli([*CLI, "compare", str(out), str(out)])}
    resumed = cli(eval_cmd(ctx.toy, out, ["--n", "6", "--resume", *ctx.opts()]))
    ids = result_ids(out)
    return {"exit_code": resumed.returncode, "crash": any(p.returncode for p in [*procs.values(), resumed]),
            "traceback": any(TRACEBACK in p.stderr for p in [*procs.values(), resumed]),
            "outcome": "; ".join(f"{k}: exit {p.returncode}" for k, p in procs.items())
                       + f"; --resume: exit {resumed.returncode}, {len(ids)} rows",
            "rows_lost": 6 - len(set(ids)), "rows_doubled": len(ids) - len(set(ids)),
            "ok_expected": (out / "results.rejected.jsonl").is_file() and len(ids) == 6}


@case(GROUP, "ask: a reply of 100 KB of spaces", "the model's reply is 100,000 spaces and a word")
def _spaces(ctx: Context) -> dict[str, Any]:
    ctx.serve(" " * 100_000 + "Nemo.")
    t0 = time.monotonic()
    proc = cli(ask_cmd(ctx, *ctx.opts()), timeout=600)
    seconds = time.monotonic() - t0
    return {**process_outcome(proc, proc.stderr, 0),
            "outcome": f"exit {proc.returncode} after {seconds:.1f} s"
                       + (f": {json.loads(proc.stdout)['status']} {json.loads(proc.stdout)['reason']}" if proc.returncode == 0 else ""),
            "ok_expected": proc.returncode == 0 and seconds < 60}


@case(GROUP, "eval --workers 0 and -3", "--workers 0, then --workers -3")
def _workers(ctx: Context) -> dict[str, Any]:
    results = [one_line_error(cli(eval_cmd(ctx.toy, ctx.folder(f"workers_{w}"), ["--workers", str(w), *ctx.opts()])),
                              ["--workers must be 1 or more"]) for w in (0, -3)]
    return {**results[0], "outcome": "; ".join(r["outcome"] for r in results),
            "ok_expected": all(r["ok_expected"] for r in results)}


@case(GROUP, "ingest + search: SVG text on the drawing's top edge", "<svg><text>The mayor ... was X.</text></svg> (no y: "
      "only the descenders show), beside the same sentence at y=40")
def _svg(ctx: Context) -> dict[str, Any]:
    folder = ctx.folder("svg_docs")
    folder.mkdir()
    page = ("<html><body><p>An article about the town of Springfield and its history.</p>"
            "<svg width='300' height='100'><text>The mayor of Springfield was Hidden Smith.</text>"
            "<text x='5' y='40'>The first mayor of Springfield was Shown Jones.</text></svg></body></html>")
    (folder / "page.html").write_text(page)
    out = ctx.folder("svg_index")
    proc = cli(ingest_cmd(ctx, folder, out))
    found = cli([*CLI, "search", "mayor of Springfield", "--index", str(out), "--json", "-o",
                 f"ARTIFACTS_DIR={ctx.work / 'artifacts'}"])
    text = " ".join(p["text"] for p in json.loads(found.stdout)) if found.returncode == 0 else ""
    return {**process_outcome(proc, proc.stderr + found.stderr, 0),
            "outcome": f"drawn sentence {'found' if 'Shown Jones' in text else 'NOT found'}; sentence on the top edge "
                       f"{'INDEXED' if 'Hidden Smith' in text else 'not indexed'}",
            "ok_expected": "Shown Jones" in text and "Hidden Smith" not in text}
