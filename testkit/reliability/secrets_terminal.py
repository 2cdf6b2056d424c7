"""Secrets and terminals: a key inside the server URL, and terminal escape sequences in a dataset."""

from __future__ import annotations

import json
import re
import sys
from typing import Any

from testkit.fault_server import refused_url
from testkit.processes import eval_cmd, result_ids
from testkit.reliability.cases import GOOD, KEY, Context, case, cli, process_outcome


@case("secrets_terminal", "a key inside OPENAI_BASE_URL", "http://bob:KEY@host/v1?api-key=KEY: eval (question 1 "
      "unanswered), settings, then ask against a dead port")
def _key_in_url(ctx: Context) -> dict[str, Any]:
    import base64

    host = ctx.server.url.removeprefix("http://")
    url = f"http://bob:{KEY}@{host}?api-key={KEY}"
    ctx.serve(GOOD, ["500"] * 3)
    out = ctx.folder("key_in_url")
    procs = [cli(eval_cmd(ctx.toy, out, ["--n", "2", *ctx.opts(url)])),
             cli([sys.executable, "-m", "agentic_rag.cli", "settings", *ctx.opts(url)]),
             cli([sys.executable, "-m", "agentic_rag.cli", "ask", "--dataset", str(ctx.toy), "--id", "toy-0",
                  *ctx.opts(f"http://{KEY}@{refused_url().removeprefix('http://')}?token={KEY}")])]
    basic = base64.b64encode(f"bob:{KEY}".encode()).decode()
    shown = "".join(p.stdout + p.stderr for p in procs)
    files = [str(p.relative_to(ctx.work)) for p in ctx.work.rglob("*")
             if p.is_file() and (KEY.encode() in p.read_bytes() or basic.encode() in p.read_bytes())]
    return {**process_outcome(procs[0], "".join(p.stderr for p in procs), 0),
            "outcome": f"exit codes {[p.returncode for p in procs]}; shown as "
                       + (re.search(r"http://\*\*\*@[^\s]+", shown).group(0)[:80] if "***@" in shown else "(not shown)"),
            "key_leaked": KEY in shown or basic in shown or bool(files), "rows_lost": 2 - len(set(result_ids(out))),
            "ok_expected": all(p.returncode == 0 for p in procs), "detail": {"files_with_key": files}}


ESCAPES = "\x1b[2J\x1b]0;pwned\x07\x00\x9b31m\u202e"  # clear screen, OSC title, NUL, C1 CSI, bidi override


@case("secrets_terminal", "escape sequences in a dataset", "a query, page and gold holding ESC[2J, an OSC title, NUL, "
      "C1 CSI and a bidi override: ask, search, eval's table, trace")
def _escapes(ctx: Context) -> dict[str, Any]:
    record = {"interaction_id": "esc", "query": f"which movie won best animated feature at the 2004 oscars?{ESCAPES}",
              "answer": f"finding nemo{ESCAPES}", "search_results": [{
                  "page_name": f"page{ESCAPES}", "page_url": "toy://esc/0",
                  "page_result": "<html><body><p>At the 76th Academy Awards, held in 2004, Finding Nemo won the Oscar for "
                                 f"Best Animated Feature.{ESCAPES} The ceremony took place in Hollywood.</p></body></html>"}]}
    data = ctx.work / "escapes.jsonl"
    data.write_text(json.dumps(record) + "\n")
    ctx.serve(GOOD)
    out = ctx.folder("escapes")
    base = [sys.executable, "-m", "agentic_rag.cli"]
    procs = [cli([*base, "ask", "--dataset", str(data), "--id", "esc", "--debug", *ctx.opts()]),
             cli([*base, "search", "nemo", "--dataset", str(data), "--id", "esc", *ctx.opts()]),
             cli(eval_cmd(data, out, ctx.opts())),
             cli([*base, "trace", str(out)]), cli([*base, "trace", str(out), "--id", "@0"])]
    # the dataset's own sequences (a progress bar's cursor-up, ESC[A, is the tools' and stays)
    planted = ("\x1b[2J", "\x1b]0;pwned", "\x07", "\x00", "\x9b", "\u202e")
    reached = sorted({repr(c) for p in procs for c in planted if c in p.stdout + p.stderr})
    return {**process_outcome(procs[0], "".join(p.stderr for p in procs), 0),
            "outcome": f"control characters reaching the terminal: {', '.join(reached) or 'none'}",
            "crash": any(p.returncode for p in procs), "ok_expected": not reached,
            "detail": {"exit_codes": [p.returncode for p in procs]}}
