"""A run or one question of it in the terminal (rich), from the view in trace/run.py.

Every text from a run is printed as plain text (``Text``), never parsed as rich markup: a page may
contain anything, including square brackets.
"""

from __future__ import annotations

from typing import Any

from rich.console import Console
from rich.table import Table
from rich.text import Text

from agentic_rag.events import clip
from agentic_rag.trace.run import OUTCOMES, Run, _fmt, question_view

OUTCOME_STYLE = {"right": "green", "wrong": "red", "missing": "yellow"}
# a check row's status (trace/run.py) as printed
STATUS_MARK = {"pass": ("pass", "green"), "fail": ("FAIL", "red"), "advisory": ("advisory", "yellow"),
               "off": ("off", "dim"), "-": ("-", "dim")}


def _t(value: Any, style: str = "") -> Text:
    return Text("" if value is None else _fmt(value), style=style)


def run_table(run: Run) -> Table:
    table = Table(title=f"{run.path.name}: {run.system} run, {len(run.rows)} questions", show_lines=False)
    for col in ("#", "id", "status", "reason", "judgement", "tokens", "calls", "ms", "question"):
        table.add_column(col, overflow="fold")
    for i, row in enumerate(run.rows):
        outcome = OUTCOMES.get(row.get("judgement", ""), "missing")
        table.add_row(
            str(i), _t(row["id"]), _t(row.get("status")), _t(row.get("reason")),
            _t(row.get("judgement"), OUTCOME_STYLE[outcome]), _t((row.get("tokens") or {}).get("total", 0)),
            _t(row.get("llm_calls", 0)), _t(round(row.get("latency_ms", 0.0))), _t(clip(row.get("query", ""), 80)),
        )
    return table


def check_line(c: dict[str, Any]) -> Text:
    mark = STATUS_MARK[c.get("status") or {True: "pass", False: "fail", None: "-"}[c["passed"]]]
    line = Text(f"    {c['signal']:<22} {_fmt(c['value']):>7}  vs {c['setting']} {_fmt(c['threshold'])}  ")
    line.append(mark[0], style=mark[1])
    return line


def _block(console: Console, block: dict[str, Any]) -> None:
    console.print(Text(f"  {block['title']}", style="bold"))
    kind = block["type"]
    if kind == "checks":
        for c in block["rows"]:
            console.print(check_line(c))
    elif kind == "passages":
        for p in block["rows"]:
            scores = "  ".join(f"{k}={_fmt(v)}" for k, v in p.items() if k not in ("chunk_id", "page", "text"))
            console.print(Text(f"    {p['chunk_id']} [{clip(p['page'], 40)}] {scores}"))
            console.print(Text(f"      {clip(p['text'], 160)}", style="dim"))
    elif kind == "table":
        for r in block["rows"]:
            console.print(Text("    " + "  ".join(f"{k}={_fmt(v)}" for k, v in r.items())))
    elif kind == "kv":
        for k, v in block["items"].items():
            console.print(Text(f"    {k}: {', '.join(map(str, v)) if isinstance(v, list) else v}"))
    else:
        console.print(Text(f"    {block.get('text', '')}"))


def verdict_line(verdict: dict[str, Any]) -> Text:
    line = Text("decided" + (f" at {verdict['node']} (round {verdict['round']}): {verdict['action']} {verdict['reason']}"
                             if verdict["node"] else ": no decision was recorded"))
    if verdict["failed"]:
        line.append("; below threshold: ")
        line.append(", ".join(f"{c['signal']} {_fmt(c['value'])} < {c['setting']} {_fmt(c['threshold'])}"
                              for c in verdict["failed"]), style="red")
    if verdict.get("invalid"):
        line.append("; failed: ")
        line.append(verdict["invalid"], style="red")
    advisory = [f"{c['signal']} {_fmt(c['value'])} < {c['setting']} {_fmt(c['threshold'])}" for c in verdict.get("advisory", [])]
    advisory += [verdict["advisory_invalid"]] if verdict.get("advisory_invalid") else []
    if advisory:
        line.append("; advisory (did not stop the answer): ")
        line.append(", ".join(advisory), style="yellow")
    return line


def event_line(entry: dict[str, Any]) -> Text:
    """One node of a timeline (also what `ask` prints as each node finishes)."""
    cost = f" {entry['tokens']} tok" if entry.get("tokens") else ""
    ms = f"{entry['ms']:.0f} ms" if isinstance(entry.get("ms"), (int, float)) else ""
    line = Text(f"{entry['node']:<16} r{entry.get('round', 1)} {ms:>9}{cost}  ", style="bold")
    line.append(entry["summary"], style="")
    return line


def print_question(console: Console, run: Run, qid: str, detail: bool = True) -> None:
    v = question_view(run, run.row(qid))
    style = OUTCOME_STYLE.get(v["outcome"], "")
    console.print(Text(f"{v['id']}: {v['query']}", style="bold"))
    head = Text(f"status {v['status']}  reason {v['reason']}  judgement ")
    head.append(v["judgement"], style=style)
    per_pass = "".join(f"  {stage} {n} tokens/pass" for stage, n in (v.get("tokens_per_pass") or {}).items())
    head.append(f"  gold {v['gold']}  tokens {v['tokens']}  llm calls {v['llm_calls']}  {v['latency_ms']:.0f} ms{per_pass}")
    console.print(head)
    console.print(Text(f"answer: {v['prediction']}"))
    if v["p_right"] is not None:
        console.print(Text(f"P(right): {v['p_right']:.2f}" + (f"  (the run promised {v['promise']})" if v["promise"] else "")))
    for c in v["citations"]:
        console.print(Text(f"  [{c['n']}] {clip(c.get('page_name', ''), 40)}: {c['status']}: {clip(c.get('quote', ''), 120)}"))
    if v["chain"]:
        console.print(Text("evidence chain:"))
        for hop in v["chain"]:
            console.print(Text(f"  {hop['line']}", style="" if hop["found"] else "yellow"))
    console.print(verdict_line(v["verdict"]))
    if v["note"]:
        console.print(Text(v["note"], style="yellow"))
    console.print(Text("timeline", style="bold underline"))
    for entry in v["timeline"]:
        offset = f"+{entry['offset_ms']:.0f}ms " if entry.get("offset_ms") is not None else ""
        console.print(Text(f"{entry['i']:>2} {offset:>10}") + event_line(entry))
        if detail:
            for block in entry["blocks"]:
                if block.get("rows") or block.get("items") or block.get("text"):
                    _block(console, block)
    if v["evidence"]:
        console.print(Text("evidence (quoted spans highlighted)", style="bold underline"))
        for p in v["evidence"]:
            line = Text(f"[{p.get('n') or '-'}] {p['page']} ({p['chunk_id']}){' cited' if p['cited'] else ''}: ")
            for seg in p["segments"]:
                line.append(seg["text"], style="black on yellow" if seg["quoted"] else "")
            console.print(line)
    if v["latency_by_node_ms"]:
        console.print(Text("latency by node: " + ", ".join(f"{k} {ms:.0f} ms" for k, ms in v["latency_by_node_ms"].items())))
