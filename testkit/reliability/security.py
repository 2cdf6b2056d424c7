"""Security (group ``security``): a run folder whose checkpoints carry code, a served-graph client that names
endpoints, keys or paths, dataset text that reaches the markdown reports, and pickled .npz files. The artefacts
are the test suite's (testkit/attacks.py); here each goes to a real process."""

from __future__ import annotations

import json
import shutil
import sys
from typing import Any

from testkit.attacks import (
    FORBIDDEN_REQUEST_SETTINGS,
    markup_labels,
    pickled_npz,
    poison_checkpoints,
    served_attacks,
    unescaped_markup,
)
from testkit.processes import ROOT, child_env, eval_cmd
from testkit.reliability.cases import (
    GOOD,
    KEY,
    TRACEBACK,
    Context,
    case,
    cli,
    one_line_error,
    process_outcome,
    served_graph,
)

BASE = [sys.executable, "-m", "agentic_rag.cli"]


@case("security", "trace --steps: a checkpoint that calls os.system", "a run folder (eval --checkpoints) whose "
      "checkpoints.sqlite holds the question as os.system('touch FILE'): trace RUN --id ID --steps, then --step 1")
def _poisoned_checkpoints(ctx: Context) -> dict[str, Any]:
    ctx.serve(GOOD)
    out = ctx.folder("poisoned_run")
    cli(eval_cmd(ctx.toy, out, ["--n", "1", "--checkpoints", *ctx.opts()]), expect=0)
    marker = ctx.work / "poisoned_run_pwned"
    marker.unlink(missing_ok=True)
    planted = poison_checkpoints(out / "checkpoints.sqlite", f"touch {marker}")
    procs = [cli([*BASE, "trace", str(out), "--id", "toy-0", *args]) for args in (["--steps"], ["--step", "1"])]
    checks = [one_line_error(p, [str(out), "os.system"]) for p in procs]
    lines = [len(p.stderr.strip().splitlines()) for p in procs]
    return {**checks[0], "crash": any(c["crash"] for c in checks), "traceback": any(c["traceback"] for c in checks),
            "outcome": f"{'COMMAND RAN; ' if marker.exists() else ''}{checks[0]['outcome']}",
            "ok_expected": planted > 0 and not marker.exists() and all(c["ok_expected"] for c in checks) and lines == [1, 1],
            "detail": {"values_planted": planted, "stderr_lines": lines, "stderr": [p.stderr[-400:] for p in procs]}}


@case("security", "served graph: settings a client must not choose", "langgraph dev (openai backend, the server's "
      "key); requests naming OPENAI_BASE_URL (the client's server), the key, a model, each path setting, a store "
      "class or an extension; an assistant with the client's URL; context {llm: {...}}; flat context keys")
def _served_settings(ctx: Context) -> dict[str, Any]:
    seen = served_graph(ctx, "served_security", lambda langgraph, folder: served_attacks(
        langgraph, folder, child_env(), KEY, GOOD))
    replies = seen["replies"]
    refused = [name for name, _ in FORBIDDEN_REQUEST_SETTINGS
               if replies[f"config.configurable.{name}"][0] == 422
               and f".{name} cannot be set by a request" in replies[f"config.configurable.{name}"][1].get("detail", "")]
    llm_status, llm_body = replies["context section llm"]
    flat_status, flat_body = replies["context flat MAX_ROUNDS"]
    ok = (len(refused) == len(FORBIDDEN_REQUEST_SETTINGS) and replies["context paths.TELEMETRY_PATH"][0] == 422
          and replies["assistant with OPENAI_BASE_URL"][0] == 422 and flat_status == 422
          and llm_status == 200 and "__error__" not in llm_body and seen["model_requests_of_llm_section"] > 0)
    return {"exit_code": 0, "crash": False, "traceback": TRACEBACK in seen["log"],
            "outcome": f"{len(refused)} of {len(FORBIDDEN_REQUEST_SETTINGS)} settings refused (422); "
                       f"{len(seen['attacker_requests'])} request(s) reached the client's server; "
                       f"{len(seen['written'])} file(s) written where the client chose; context llm section: "
                       f"{llm_status}{' ' + str(llm_body.get('__error__'))[:60] if '__error__' in llm_body else ''}; "
                       f"flat context: {flat_status}",
            "ok_expected": ok and not seen["attacker_requests"] and not seen["written"],
            "key_leaked": any(KEY in r["authorization"] for r in seen["attacker_requests"]) or KEY in json.dumps(replies),
            "detail": {"replies": {k: [s, str(b.get("detail", b.get("__error__", "")))[:300]] for k, (s, b) in replies.items()},
                       "written": seen["written"]}}


@case("security", "eval then compare: markup in domain and question type", "domain, question_type and "
      "static_or_dynamic holding |, a newline and '# heading', <img src=http://... onerror=...> and ![](http://...), "
      "a gold holding the same; eval, then compare of the run with a copy of it")
def _markup_reports(ctx: Context) -> dict[str, Any]:
    from agentic_rag.datasets.crag import CragRecord, iter_records, write_records
    from testkit.attacks import MARKUP

    records = [CragRecord(**markup_labels(r.model_dump())) for r in list(iter_records(ctx.toy))[:2]]
    records[0].answer = f"finding nemo {MARKUP}"
    data = ctx.work / "markup.jsonl"
    write_records(records, data)
    ctx.serve(GOOD)
    out, copy = ctx.folder("markup_run"), ctx.folder("markup_run_copy")
    proc = cli(eval_cmd(data, out, ctx.opts()))
    if proc.returncode == 0:
        shutil.copytree(out, copy)
    compared = cli([*BASE, "compare", str(out), str(copy), "--out", str(ctx.work / "markup_comparison.md")])
    files = {"report.md": out / "report.md", "comparison.md": ctx.work / "markup_comparison.md"}
    found = {name: unescaped_markup(p.read_text()) if p.is_file() else ["(not written)"] for name, p in files.items()}
    return {**process_outcome(proc, proc.stderr + compared.stderr, 0), "crash": bool(proc.returncode or compared.returncode),
            "outcome": "; ".join(f"{name}: {', '.join(map(repr, f)) or 'escaped'}" for name, f in found.items()),
            "ok_expected": not any(found.values()), "detail": {"unescaped": found}}


@case("security", "make_nq_dev: a pickled probe .npz", "--exclude FILE.npz whose ids are an object array that "
      "unpickles to os.system('touch FILE')")
def _pickled_npz(ctx: Context) -> dict[str, Any]:
    marker = ctx.work / "npz_pwned"
    marker.unlink(missing_ok=True)
    bad = pickled_npz(ctx.work / "pickled_probe.npz", f"touch {marker}")
    dev = ctx.work / "npz_dev.jsonl"
    dev.unlink(missing_ok=True)
    proc = cli([sys.executable, str(ROOT / "scripts" / "make_nq_dev.py"), "--exclude", str(bad), "--out", str(dev)])
    res = one_line_error(proc, [str(bad)])
    res["ok_expected"] &= not marker.exists() and not dev.exists() and len(proc.stderr.strip().splitlines()) == 1
    res["outcome"] = f"{'COMMAND RAN; ' if marker.exists() else ''}{res['outcome']}"
    return res
