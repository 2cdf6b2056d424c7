"""Rows and records (groups ``silent_loss``, ``hangs``, ``actionable_errors``): line separators in
rows, a piped dataset, numeric ids, dropped spans, a record that exhausts memory, unwritable outputs."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, Callable

from testkit.bad_inputs import UNPARSABLE_LIST, abbreviation_page, rec, write_jsonl
from testkit.processes import child_env, eval_cmd, result_ids
from testkit.reliability.cases import (
    GOOD,
    TRACEBACK,
    Context,
    ask_cmd,
    case,
    cli,
    ingest_cmd,
    one_line_error,
    process_outcome,
    warnings_shown,
)

CLI = [sys.executable, "-m", "agentic_rag.cli"]


def trace_cmd(run: Path, *extra: str) -> list[str]:
    return [*CLI, "trace", str(run), *extra]


def summary_n(out: Path) -> int | None:
    return json.loads((out / "summary.json").read_text())["n"] if (out / "summary.json").is_file() else None


# --- silent loss ----------------------------------------------------------------------------------


def separated_run(ctx: Context, name: str, data: Path, reply: str) -> dict[str, Any]:
    """``eval --n 2`` over ``data`` with ``reply`` served; then ``trace --id`` of each question and a ``--resume``,
    which must find both answered."""
    ctx.serve(reply)
    out = ctx.folder(name)
    proc = cli(eval_cmd(data, out, ["--n", "2", *ctx.opts()]))
    ids = list(dict.fromkeys(result_ids(out)))
    traced = [cli(trace_cmd(out, "--id", rid)).returncode == 0 for rid in ids]
    before = len(ctx.server.requests)
    resumed = cli(eval_cmd(data, out, ["--n", "2", "--resume", *ctx.opts()]))
    calls, lines, n = len(ctx.server.requests) - before, len(result_ids(out)), summary_n(out)
    return {**process_outcome(proc, proc.stderr + resumed.stderr, 0),
            "outcome": f"summary n={n} of 2; trace --id found {sum(traced)} of {len(ids)}; --resume made {calls} model "
                       f"calls and left {lines} lines",
            "crash": bool(proc.returncode or resumed.returncode), "rows_lost": 2 - (n or 0), "rows_doubled": lines - 2,
            "ok_expected": n == 2 and len(traced) == 2 and all(traced) and calls == 0 and lines == 2,
            "detail": {"exit_codes": [proc.returncode, resumed.returncode], "ids": result_ids(out)}}


@case("silent_loss", "U+2028 in a question", "question 1 of 2 holds a raw U+2028 (LINE SEPARATOR): eval, trace --id, "
      "--resume")
def _separator_in_question(ctx: Context) -> dict[str, Any]:
    data = write_jsonl(ctx.work / "separated_question.jsonl",
                       [rec("sep", query="which movie won best animated feature\u2028at the 2004 oscars?"), rec("plain")])
    return separated_run(ctx, "separated_question", data, GOOD)


@case("silent_loss", "U+2028 in a reply", "the model's every reply holds a raw U+2028: eval --n 2, trace --id, --resume")
def _separator_in_reply(ctx: Context) -> dict[str, Any]:
    return separated_run(ctx, "separated_reply", ctx.toy, GOOD.replace("Nemo won", "Nemo\u2028won"))


@case("silent_loss", "a dataset read from a pipe", "cat toy.jsonl (12 records) | agentic-rag ingest /dev/stdin")
def _piped(ctx: Context) -> dict[str, Any]:
    out = ctx.folder("idx_piped")
    proc = subprocess.run(ingest_cmd(ctx, Path("/dev/stdin"), out), input=ctx.toy.read_bytes(), capture_output=True,
                          env=child_env(), timeout=1800)
    proc.stdout, proc.stderr = proc.stdout.decode(errors="replace"), proc.stderr.decode(errors="replace")
    res = one_line_error(proc, ["is a pipe or a device, not a file"])
    pages = json.loads(proc.stdout)["pages"] if proc.returncode == 0 else None
    if pages is not None:  # read, in part: every toy record has one page of its own
        res.update(outcome=f"exit 0 with {pages} of 12 pages", rows_lost=12 - pages)
    return res


@case("silent_loss", "ids that are numbers", "records with ids \"1\" then \"0\": ask, search and trace --id 0; ask --id @0")
def _numeric_ids(ctx: Context) -> dict[str, Any]:
    later = "which movie won best animated feature at the 2005 oscars?"
    data = write_jsonl(ctx.work / "numeric_ids.jsonl", [rec("1"), rec("0", query=later)])
    ctx.serve(GOOD)
    asked = cli(ask_cmd(ctx, *ctx.opts(), dataset=data, rid="0"))
    by_position = cli(ask_cmd(ctx, *ctx.opts(), dataset=data, rid="@0"))
    searched = cli([*CLI, "search", "nemo", "--dataset", str(data), "--id", "0", "--json", *ctx.opts()])
    out = ctx.folder("numeric_ids")
    ran = cli(eval_cmd(data, out, ctx.opts()))
    traced = cli(trace_cmd(out, "--id", "0", "--brief"))
    procs = [asked, by_position, searched, ran, traced]
    got = {"ask --id 0": asked.returncode == 0 and json.loads(asked.stdout)["question"] == later,
           "ask --id @0": by_position.returncode == 0 and json.loads(by_position.stdout)["question"] != later,
           "search --id 0": searched.returncode == 0 and all(p["page_url"].startswith("toy://0/")
                                                            for p in json.loads(searched.stdout)),
           "trace --id 0": traced.returncode == 0 and later in traced.stdout}
    return {**process_outcome(asked, "".join(p.stderr for p in procs), 0),
            "outcome": "; ".join(f"{k}: {'the right record' if v else 'WRONG or none'}" for k, v in got.items()),
            "crash": any(p.returncode for p in procs), "rows_lost": int(not got["ask --id 0"]),
            "ok_expected": all(got.values()), "detail": {"exit_codes": [p.returncode for p in procs]}}


QUESTIONS = 400  # of the re-sent run, as in the run


@case("silent_loss", "trace --otlp with more spans than the SDK's queue",
      f"a {QUESTIONS}-question run re-sent to a local OTLP collector that holds its first reply 2 s")
def _otlp_queue(ctx: Context) -> dict[str, Any]:
    from testkit.otlp_collector import SDK_SPAN_QUEUE, OtlpCollector, repeated_run

    ctx.serve(GOOD)
    small = ctx.folder("otlp_small")
    cli(eval_cmd(ctx.toy, small, ctx.opts()), expect=0)
    with OtlpCollector() as counted:
        cli(trace_cmd(small, "--otlp", counted.url), expect=0)
    copies = QUESTIONS // 12
    big = repeated_run(small, ctx.folder("otlp_big"), copies)
    with OtlpCollector(first_reply_s=2.0) as collector:
        proc = cli(trace_cmd(big, "--otlp", collector.url))
    made = counted.spans * copies
    said = re.search(r"sent (\d+) spans", proc.stdout)
    return {**process_outcome(proc, proc.stderr, 0),
            "outcome": f"{collector.spans} of {made} spans arrived; " + (proc.stdout + proc.stderr).strip()[:120],
            "rows_lost": made - collector.spans,
            "ok_expected": made > SDK_SPAN_QUEUE and collector.spans == made and said is not None
                           and int(said.group(1)) == made,
            "detail": {"questions": 12 * copies, "spans_made": made, "collector_spans": collector.spans,
                       "requests": collector.requests}}


# --- hangs ----------------------------------------------------------------------------------------
PAGE_CHARS = (20_000, 200_000)  # the two page sizes timed: linear reading takes 10 times as long on the second
EXTRACT_LIMIT_S = 5.0  # page extraction of the 200 KB page on the development machine (the bound)
INGEST_TIMEOUT_S = 900  # a quadratic reading of the 200 KB page would take half an hour: stopped here


@case("hangs", "a page that runs one abbreviation on", "'Answer: yes' then 'Mr. X ' to 20 KB and to 200 KB: "
      "ingest of a folder holding the page")
def _abbreviations(ctx: Context) -> dict[str, Any]:
    timed = {}
    for chars in PAGE_CHARS:
        folder = ctx.folder(f"abbreviations_{chars}")
        folder.mkdir()
        (folder / "page.txt").write_text(abbreviation_page(chars))
        t0 = time.monotonic()
        try:
            proc = cli(ingest_cmd(ctx, folder, ctx.folder(f"idx_abbreviations_{chars}")), timeout=INGEST_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            timed[chars] = {"exit_code": None, "process_s": INGEST_TIMEOUT_S, "extract_s": None, "traceback": False}
            continue
        stats = json.loads(proc.stdout) if proc.returncode == 0 else {}
        timed[chars] = {"exit_code": proc.returncode, "process_s": round(time.monotonic() - t0, 1),
                        "extract_s": stats.get("extract_s"), "total_s": stats.get("total_s"),
                        "traceback": TRACEBACK in proc.stderr}
    large = timed[PAGE_CHARS[-1]]
    return {"exit_code": large["exit_code"], "crash": any(t["exit_code"] != 0 for t in timed.values()),
            "traceback": any(t["traceback"] for t in timed.values()),
            "outcome": "; ".join(f"{chars // 1000} KB: page extraction {t['extract_s']} s, ingest {t['process_s']} s"
                                 + ("" if t["exit_code"] is not None else " (STOPPED)") for chars, t in timed.items()),
            "ok_expected": large["extract_s"] is not None and large["extract_s"] < EXTRACT_LIMIT_S,
            "detail": {"extract_limit_s": EXTRACT_LIMIT_S, **{f"{c // 1000}_kb": t for c, t in timed.items()}}}


@case("hangs", "a record that exhausts the parser", "alternative_answers = '-' * 100000 + '1' in record 1 of 2: ingest, "
      "eval, and ask and search of record 2")
def _unparsable(ctx: Context) -> dict[str, Any]:
    data = write_jsonl(ctx.work / "unparsable.jsonl", [{**rec("bad"), "alternative_answers": UNPARSABLE_LIST}, rec("good")])
    ctx.serve(GOOD)
    out = ctx.folder("unparsable_run")
    procs = {"ingest": cli(ingest_cmd(ctx, data, ctx.folder("idx_unparsable"))),
             "eval": cli(eval_cmd(data, out, ctx.opts())),
             "ask": cli(ask_cmd(ctx, *ctx.opts(), dataset=data, rid="good")),
             "search": cli([*CLI, "search", "nemo", "--dataset", str(data), "--id", "good", *ctx.opts()])}
    warned = {k: any(f"{data}:1: alternative_answers" in x for x in warnings_shown(p.stderr)) for k, p in procs.items()}
    return {**process_outcome(procs["eval"], "".join(p.stderr for p in procs.values()), 0),
            "outcome": "; ".join(f"{k}: exit {p.returncode}{', bad record named' if warned[k] else ''}"
                                 for k, p in procs.items()),
            "crash": any(p.returncode for p in procs.values()), "rows_lost": 1 - len(set(result_ids(out))),
            "ok_expected": all(warned.values()) and result_ids(out) == ["good"],
            "detail": {"stderr_tails": {k: p.stderr.strip()[-200:] for k, p in procs.items()}}}


# --- actionable errors ----------------------------------------------------------------------------


def refused_at_each_place(ctx: Context, command: Callable[[Path], list[str]], must: str) -> dict[str, Any]:
    """``command`` with its output under a regular file and under /sys (where even root writes nothing):
    each must end in one line saying ``must``, at once."""
    blocker = ctx.work / "a-file"
    blocker.write_text("x")
    results = []
    for place in (blocker, Path("/sys")):
        t0 = time.monotonic()
        results.append({**one_line_error(cli(command(place)), [must]), "process_s": round(time.monotonic() - t0, 1)})
    return {**results[0], "outcome": f"{results[0]['outcome']} (after {results[0]['process_s']} s)",
            "ok_expected": all(r["ok_expected"] for r in results), "crash": any(r["crash"] for r in results),
            "traceback": any(r["traceback"] for r in results), "detail": {"at_each_place": results}}


@case("actionable_errors", "ingest --out on an unwritable place", "--out under a regular file, and under /sys")
def _ingest_out(ctx: Context) -> dict[str, Any]:
    return refused_at_each_place(ctx, lambda place: ingest_cmd(ctx, ctx.toy, place / "index"), "cannot write the index")


@case("actionable_errors", "trace --html on an unwritable place", "--html under a regular file, and under /sys")
def _trace_html(ctx: Context) -> dict[str, Any]:
    ctx.serve(GOOD)
    run = ctx.folder("html_run")
    cli(eval_cmd(ctx.toy, run, ["--n", "1", *ctx.opts()]), expect=0)
    return refused_at_each_place(ctx, lambda place: trace_cmd(run, "--html", str(place / "trace.html")), "cannot write --html")


@case("actionable_errors", "ask with an unwritable MODEL_CACHE_DIR", "the packaged model's cache under a regular file, and "
      "under /sys (the model is converted there on first use)")
def _model_cache(ctx: Context) -> dict[str, Any]:
    return refused_at_each_place(ctx, lambda place: ask_cmd(ctx, "-o", f"ARTIFACTS_DIR={ctx.work / 'artifacts'}", "-o",
                                                            f"MODEL_CACHE_DIR={place / 'models'}"), "cannot write MODEL_CACHE_DIR")
