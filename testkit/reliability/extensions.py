"""Failing extensions: one that raises mid-run, and EXTENSIONS naming what is not an extension or a
module that fails to import. The modules are written here, into the work folder."""

from __future__ import annotations

import json
import subprocess
import sys
from typing import Any

from testkit.processes import ROOT, child_env, eval_cmd, result_ids
from testkit.reliability.cases import GOOD, Context, case, cli, eval_outcome, process_outcome

EXTENSION_MODULES = {
    "crash_ext": ("from agentic_rag.extensions import Extension\n\n"
                  "def node(state, config):\n"
                  "    if state.get('question_id') == 'toy-1':\n"
                  "        raise RuntimeError('boom in the extension')\n"
                  "    return {}\n\n"
                  "crashing = Extension(name='crashing', node=node, reads=('question_id',), writes=(),\n"
                  "                     after='generate', before='collect_signals')\n"),
    "raises_at_import": "raise RuntimeError('broken at import')\n",
    "bad_syntax": "def broken(:\n    pass\n",
}


def extension_env(ctx: Context) -> dict[str, str]:
    folder = ctx.work / "extensions"
    folder.mkdir(exist_ok=True)
    for name, source in EXTENSION_MODULES.items():
        (folder / f"{name}.py").write_text(source)
    return {"PYTHONPATH": f"{ROOT}:{folder}"}


@case("extensions", "eval: an extension raises on one question", "the extension node raises RuntimeError on question 2 of 4")
def _extension_raises(ctx: Context) -> dict[str, Any]:
    ctx.serve(GOOD)
    out = ctx.folder("extension_raises")
    proc = cli(eval_cmd(ctx.toy, out, ["--n", "4", *ctx.opts(), "-o", "EXTENSIONS=crash_ext:crashing"]), env=extension_env(ctx))
    res = eval_outcome(ctx, out, proc, 4, None)
    rows = [json.loads(x) for x in (out / "results.jsonl").read_text().splitlines()] if result_ids(out) else []
    failed = [r for r in rows if r["reason"] == "ABSTAIN_EXTENSION_FAILED"]
    traced = [e for r in failed for e in r["events"] if e.get("extension_error")]
    res["ok_expected"] &= [r["id"] for r in failed] == ["toy-1"] and bool(traced) and len(rows) == 4
    res["detail"].update(error_in_trace=traced[0]["extension_error"] if traced else None)
    return res


for _spec in ("os:system", "sys:exit", "builtins:input", "os:abort", "raises_at_import:ext", "bad_syntax:ext"):
    @case("extensions", f"EXTENSIONS={_spec}", f"-o EXTENSIONS={_spec} (graph)")
    def _named(ctx: Context, spec: str = _spec) -> dict[str, Any]:
        module = spec.split(":")[0]
        must = [f"extension '{spec}'"] + ([f"importing module {module} failed"] if module in EXTENSION_MODULES
                                         else ["not an agentic_rag.extensions.Extension"])
        proc = subprocess.run([sys.executable, "-m", "agentic_rag.cli", "graph", "-o", f"EXTENSIONS={spec}"],
                              env={**child_env(), **extension_env(ctx)}, input="typed by nobody\n",
                              capture_output=True, text=True, timeout=600)
        text = proc.stderr.strip()
        return {**process_outcome(proc, proc.stderr, 2), "outcome": text.splitlines()[-1][:160] if text else "(nothing printed)",
                "ok_expected": all(m in text for m in must) and len(text.splitlines()) == 1}
