"""Bad inputs and hostile pages. The files, records and pages are the test suite's
(testkit/bad_inputs.py and hostile.py); here each goes to a real process."""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path
from typing import Any

from testkit.bad_inputs import (
    ELF,
    LONG,
    REPLY,
    WRONG_TYPES,
    bom_dataset_with_a_latin1_line,
    empty_files_folder,
    folder_with_a_binary,
    latin1_dataset,
    rec,
    surrogate_line,
    write_jsonl,
)
from testkit.hostile import (
    DEEP_ANSWER,
    FALSE_FACT,
    INJECTIONS,
    INTRO,
    OBEDIENT,
    QUESTION,
    deep_page,
    hidden_records,
    html,
    injection_records,
    record,
)
from testkit.processes import child_env, eval_cmd, result_ids
from testkit.reliability.cases import (
    KEY,
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
    warnings_shown,
)

# --- bad inputs -----------------------------------------------------------------------------------

def bad_data(ctx: Context, name: str, rows: list, raw_lines: dict[int, bytes] | None = None) -> Path:
    return write_jsonl(ctx.work / f"{name}.jsonl", rows, raw_lines)


def eval_over(ctx: Context, name: str, data: Path, expected: dict[str, str], shown: list[str] = (),
              reply: str | None = None, extra: list[str] = ()) -> dict[str, Any]:
    """``eval`` over ``data``: each question of ``expected`` ends with its reason, in order, and every
    text of ``shown`` is printed on screen."""
    ctx.serve(reply or REPLY)
    out = ctx.folder(name)
    proc = cli(eval_cmd(data, out, [*ctx.opts(), *extra]), env={"OPENAI_API_KEY": KEY})
    res = eval_outcome(ctx, out, proc, len(expected), list(expected.values()))
    missing = [m for m in shown if m not in proc.stderr]
    # what the bad input made the run say; the served model's missing signals are said on every such run
    said = [x for x in warnings_shown(proc.stderr) if "model signals" not in x]
    res["ok_expected"] &= result_ids(out) == list(expected) and not missing
    if said:
        res["outcome"] += f"; {len(said)} line(s) on screen: {said[0][:120]}"
    res["detail"].update(ids=result_ids(out), on_screen=said[:8], expected_on_screen_but_missing=missing)
    return res


@case("bad_inputs", "ask: empty search_results", "a record with no pages")
def _ask_empty(ctx: Context) -> dict[str, Any]:
    data = bad_data(ctx, "empty_results", [rec("empty", pages=[])])
    proc = cli(ask_cmd(ctx, *ctx.opts(), dataset=data, rid="empty"))
    reply = json.loads(proc.stdout) if proc.returncode == 0 else {}
    return {**process_outcome(proc, proc.stderr, 0), "outcome": f"{reply.get('status')} {reply.get('reason')}, "
            f"{reply.get('llm_calls')} LLM calls", "ok_expected": reply.get("reason") == "ABSTAIN_NO_EVIDENCE"}


@case("bad_inputs", "search: empty search_results", "a record with no pages")
def _search_empty(ctx: Context) -> dict[str, Any]:
    data = bad_data(ctx, "empty_results", [rec("empty", pages=[])])
    proc = cli([sys.executable, "-m", "agentic_rag.cli", "search", "nemo", "--dataset", str(data), "--id", "empty",
                "--json", *ctx.opts()])
    passages = json.loads(proc.stdout) if proc.returncode == 0 else None
    return {**process_outcome(proc, proc.stderr, 0), "outcome": f"{passages if passages is None else len(passages)} passages",
            "ok_expected": passages == []}


@case("bad_inputs", "eval: empty search_results", "question 1 of 2 has no pages")
def _eval_empty(ctx: Context) -> dict[str, Any]:
    data = bad_data(ctx, "empty_then_good", [rec("empty", pages=[]), rec("good")])
    return eval_over(ctx, "eval_empty_results", data, {"empty": "ABSTAIN_NO_EVIDENCE", "good": "STOP_OVERLAP_OK"})


@case("bad_inputs", "ingest: a folder of only empty files", "3 empty files (.txt, .html, .md)")
def _ingest_empty(ctx: Context) -> dict[str, Any]:
    out = ctx.folder("idx_empty")
    res = one_line_error(cli(ingest_cmd(ctx, empty_files_folder(ctx.folder("empty_files")), out)), ["nothing to index"])
    res["ok_expected"] &= not out.exists()
    return res


@case("bad_inputs", "ingest: a binary file given directly", "an ELF binary named prog.jsonl")
def _ingest_binary(ctx: Context) -> dict[str, Any]:
    prog = ctx.work / "prog.jsonl"
    prog.write_bytes(ELF)
    return one_line_error(cli(ingest_cmd(ctx, prog, ctx.folder("idx_binary"))), ["binary"])


@case("bad_inputs", "ingest: an ELF named x.html in a folder", "x.html (ELF) beside a UTF-8 and a Latin-1 text file")
def _ingest_elf(ctx: Context) -> dict[str, Any]:
    folder, out = folder_with_a_binary(ctx.folder("with_binary")), ctx.folder("idx_with_binary")
    proc = cli(ingest_cmd(ctx, folder, out))
    stats = json.loads(proc.stdout) if proc.returncode == 0 else {}
    chunks = (out / "chunks.jsonl").read_text() if (out / "chunks.jsonl").is_file() else ""
    said = warnings_shown(proc.stderr)
    return {**process_outcome(proc, proc.stderr, 0),
            "outcome": f"{stats.get('pages')} pages indexed, {stats.get('skipped_files')} skipped; "
                       + (said[0][:120] if said else "(no warning)"),
            "ok_expected": stats.get("skipped_files") == 1 and stats.get("pages") == 2 and "ELF" not in chunks
                           and any(f"skipped {folder / 'x.html'}" in x and "binary" in x for x in said),
            "detail": {"stats": stats, "on_screen": said}}


@case("bad_inputs", "eval: malformed lines, BAD_RECORDS=skip", "5 lines of broken JSON around 1 good record")
def _eval_malformed(ctx: Context) -> dict[str, Any]:
    data = bad_data(ctx, "malformed", [rec("good")], {i: b"{not json" for i in range(1, 6)})
    return eval_over(ctx, "eval_malformed", data, {"good": "STOP_OVERLAP_OK"},
                     [f"warning: skipped bad record {data}:{n}: bad JSON" for n in range(2, 7)], extra=["-o", "BAD_RECORDS=skip"])


@case("bad_inputs", "eval: empty dataset", "a file of blank lines; --out holds an earlier run")
def _eval_no_records(ctx: Context) -> dict[str, Any]:
    empty = ctx.work / "empty.jsonl"
    empty.write_text("\n\n")
    out = ctx.folder("eval_no_records")
    out.mkdir()
    (out / "results.jsonl").write_text('{"id": "kept"}\n')
    res = one_line_error(cli(eval_cmd(empty, out, ctx.opts())), [f"no records in {empty}"])
    res["rows_lost"] = 1 - (out / "results.jsonl").read_text().count('"kept"')
    return res


@case("bad_inputs", "eval: duplicate interaction_ids", "records a, b, a (another question under the same id)")
def _eval_duplicates(ctx: Context) -> dict[str, Any]:
    data = bad_data(ctx, "duplicates", [rec("a"), rec("b"), rec("a", query="another question about a?")])
    return eval_over(ctx, "eval_duplicates", data, {"a": "STOP_OVERLAP_OK", "b": "STOP_OVERLAP_OK"},
                     [f"{data}:3: interaction_id: duplicate 'a' (first at line 1)"])


@case("bad_inputs", "eval: a lone surrogate in a page", "a page holding \\ud800, then a good record")
def _eval_surrogate(ctx: Context) -> dict[str, Any]:
    data = bad_data(ctx, "surrogate", [rec("good")], {0: surrogate_line()})
    return eval_over(ctx, "eval_surrogate", data, {"sur": "STOP_OVERLAP_OK", "good": "STOP_OVERLAP_OK"})


@case("bad_inputs", "eval: wrong-typed fields", "list and dict answer, dict id, nested list alternatives, list page_result")
def _eval_wrong_types(ctx: Context) -> dict[str, Any]:
    data = bad_data(ctx, "wrong_types", [rec("good"), *({**rec(f"bad{i}"), field: value}
                                                         for i, (field, value, _) in enumerate(WRONG_TYPES))])
    return eval_over(ctx, "eval_wrong_types", data, {"good": "STOP_OVERLAP_OK"},
                     [f"{data}:{i + 2}: {why}" for i, (_, _, why) in enumerate(WRONG_TYPES)])


@case("bad_inputs", "eval: a BOM and a non-UTF-8 line", "a UTF-8 file with a BOM; its line 2 in Latin-1")
def _eval_bom(ctx: Context) -> dict[str, Any]:
    data = bom_dataset_with_a_latin1_line(ctx.work / "bom.jsonl")
    return eval_over(ctx, "eval_bom", data, {"a": "STOP_OVERLAP_OK", "b": "STOP_OVERLAP_OK"},
                     [f"warning: skipped bad record {data}:2: not UTF-8 text"])


@case("bad_inputs", "eval: a Latin-1 file", "3 records, all encoded in Latin-1")
def _eval_latin1(ctx: Context) -> dict[str, Any]:
    data = latin1_dataset(ctx.work / "latin1.jsonl")
    proc = cli(eval_cmd(data, ctx.folder("eval_latin1"), ctx.opts()))
    res = one_line_error(proc, [f"no records in {data}"])
    said = warnings_shown(proc.stderr)
    res["ok_expected"] &= len(said) == 4 and all(x.startswith(f"warning: skipped bad record {data}:{n}: not UTF-8 text")
                                                 for n, x in zip((1, 2, 3), said))
    res["detail"] = {"on_screen": said}
    return res


@case("bad_inputs", "eval: deeply nested HTML", "a page whose answer sits under 5,000 nested <div>s")
def _eval_deep(ctx: Context) -> dict[str, Any]:
    data = bad_data(ctx, "deep", [rec("deep", pages=[deep_page(5000)], query=QUESTION)])
    reply = 'Christine Lundberg was the mayor in 2019. {cite:Lundberg} "' + DEEP_ANSWER[:-1] + '"'
    res = eval_over(ctx, "eval_deep", data, {"deep": "STOP_OVERLAP_OK"}, reply=reply)
    rows = [json.loads(x) for x in (ctx.work / "eval_deep" / "results.jsonl").read_text().splitlines()]
    verified = [c["quote"] for r in rows for c in r["citations"] if c["verified"]]
    res["ok_expected"] &= verified == [DEEP_ANSWER[:-1]]
    res["outcome"] += f"; {len(verified)} quote(s) verified"
    return res


@case("bad_inputs", "eval: a 20,000-word question", "question 1 of 2 is 20,000 words long")
def _eval_long(ctx: Context) -> dict[str, Any]:
    data = bad_data(ctx, "long_question", [rec("long", query=LONG), rec("good")])
    res = eval_over(ctx, "eval_long", data, {"long": "ABSTAIN_QUESTION_TOO_LONG", "good": "STOP_OVERLAP_OK"})
    row = json.loads((ctx.work / "eval_long" / "results.jsonl").read_text().splitlines()[0])
    seconds = round(row["latency_ms"] / 1000, 2)
    res["outcome"] += f"; the long one refused before any graph step (row latency {seconds} s, {row['llm_calls']} LLM calls)"
    res["detail"].update(long_question_s=seconds, long_question_llm_calls=row["llm_calls"])
    return res


@case("bad_inputs", "ask: a 20,000-word question", "ask --id of a record whose query is 20,000 words")
def _ask_long(ctx: Context) -> dict[str, Any]:
    data = bad_data(ctx, "long_question", [rec("long", query=LONG), rec("good")])
    t0 = time.monotonic()
    proc = cli([sys.executable, "-m", "agentic_rag.cli", "ask", "--dataset", str(data), "--id", "long", *ctx.opts()])
    res = one_line_error(proc, ["MAX_QUESTION_CHARS"])
    seconds = round(time.monotonic() - t0, 1)
    res["outcome"] += f" (the process ended after {seconds} s)"
    res["detail"] = {"process_s": seconds}
    return res


@case("bad_inputs", "served graph: input without question", "langgraph dev; POST /runs/wait with input {} and question=3")
def _served(ctx: Context) -> dict[str, Any]:
    import urllib.request

    from testkit.servers import graph_server, post

    def requests(langgraph: list[str], folder: Path):
        with graph_server(langgraph, folder, child_env()) as (port, log):
            missing = post(port, {"assistant_id": "agent", "input": {}})
            wrong = post(port, {"assistant_id": "baseline", "input": {"question": 3}})
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/ok", timeout=30) as resp:
                return missing, wrong, resp.status == 200, log  # alive: the bad inputs did not take the server down

    missing, wrong, alive, log = served_graph(ctx, "served", requests)
    text = log.read_text(errors="replace")
    return {"exit_code": 0, "crash": not alive, "traceback": TRACEBACK in text,
            "outcome": f"{missing[0]}: {missing[1].get('detail')}; {wrong[0]}: {wrong[1].get('detail')}"[:200],
            "ok_expected": missing[0] == 422 and "question" in str(missing[1].get("detail"))
                           and wrong[0] == 422 and str(wrong[1].get("detail")).startswith("input.question")
                           and "KeyError" not in text,
            "detail": {"responses": [missing, wrong]}}

# --- hostile pages --------------------------------------------------------------------------------
# The pages are the test suite's (testkit/hostile.py). The scripted model obeys them: it answers
# PWNED and quotes every planted sentence, so any that verifies would show as a fabricated quote.


def hostile_eval(ctx: Context, name: str, records: list, reply: str,
                 **settings: Any) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    from agentic_rag.datasets.crag import write_records

    data = ctx.work / f"{name}.jsonl"
    write_records(records, data)
    ctx.serve(reply)
    out = ctx.folder(name)
    proc = cli(eval_cmd(data, out, ctx.opts(**settings)), env={"OPENAI_API_KEY": KEY})
    res = eval_outcome(ctx, out, proc, len(records), None)
    rows = [json.loads(x) for x in (out / "results.jsonl").read_text().splitlines()] if result_ids(out) else []
    return res, rows


def attack_counts(rows: list[dict[str, Any]]) -> dict[str, Any]:
    return {
        "gate_bypasses": [r["id"] for r in rows if r["status"] == "ok" and "PWNED" in r["prediction"]],
        "fabricated_quotes": [c["quote"] for r in rows for c in r["citations"] if c["verified"] and "PWNED" in c["quote"]],
        "flagged": [r["id"] for r in rows if r["signals"].get("untrusted_sources")],
        "refused": [r["id"] for r in rows if r["status"] == "refuse"],
    }


def obedient_reply() -> str:
    return OBEDIENT + "".join(f' "{quote}"' for quote in dict.fromkeys(q for _, q in INJECTIONS.values()))


def attacked(ctx: Context, name: str, records: list, must_flag: bool, **settings: Any) -> dict[str, Any]:
    res, rows = hostile_eval(ctx, name, records, obedient_reply(), **settings)
    n = attack_counts(rows)
    res["outcome"] = (f"{len(rows)} pages: {len(n['gate_bypasses'])} gate bypasses, {len(n['fabricated_quotes'])} "
                      f"fabricated quotes accepted, {len(n['flagged'])} flagged untrusted, {len(n['refused'])} refused")
    res["ok_expected"] &= (not n["gate_bypasses"] and not n["fabricated_quotes"] and len(n["refused"]) == len(records)
                           and (len(n["flagged"]) == len(records) if must_flag else True))
    res["detail"].update(n)
    return res


@case("hostile_pages", "eval: pages addressing the model", "an instruction to answer PWNED, 'ignore previous instructions', "
      "a fake [1] citation and 'Answer:', a fake system prompt, a fake chat turn; the model obeys")
def _hostile_injections(ctx: Context) -> dict[str, Any]:
    return attacked(ctx, "hostile_injections", injection_records(), must_flag=True)


@case("hostile_pages", "eval: text hidden by CSS", "the planted answer under display:none, visibility:hidden, the hidden attribute; "
      "the model obeys")
def _hostile_hidden(ctx: Context) -> dict[str, Any]:
    return attacked(ctx, "hostile_hidden", hidden_records(), must_flag=False)


@case("hostile_pages", "eval: a page that states a false fact", "'the mayor was Pwned Smith', addressed to no one; "
      "the model answers from it")
def _false_fact(ctx: Context) -> dict[str, Any]:
    reply = 'Pwned Smith was the mayor in 2019. {cite:Pwned Smith} "' + FALSE_FACT[:-1] + '"'
    res, rows = hostile_eval(ctx, "false_fact", [record(html(INTRO, FALSE_FACT), rid="false-fact")], reply)
    row = rows[0] if rows else {"status": None, "reason": None, "signals": {"untrusted_sources": []}, "citations": []}
    verified = [c["quote"] for c in row["citations"] if c["verified"]]
    res["outcome"] = (f"{row['status']} {row['reason']} (in scope, as expected); {len(verified)} quote(s) verified, "
                      f"{len(row['signals'].get('untrusted_sources') or [])} flagged")
    res["ok_expected"] &= row["status"] == "ok" and verified == [FALSE_FACT[:-1]] and not row["signals"]["untrusted_sources"]
    return res
