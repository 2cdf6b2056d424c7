"""Model faults: a model server that refuses, fails, rate-limits, hangs or answers garbage, met by
`ask` and by `eval`."""

from __future__ import annotations

import json
from typing import Any

from testkit.fault_server import refused_url
from testkit.processes import eval_cmd
from testkit.reliability.cases import GOOD, KEY, Context, ask_cmd, case, cli, eval_outcome, process_outcome

# name: (requests the server answers with, the reason the question must end with); the hang comes last:
# after it the server's breaker refuses the next questions' calls at once (llm/breaker.py), so in the eval
# of one fault per question every other fault must come before it to be met at all
FAULTS = {
    "http_500": (["500"] * 3, "ABSTAIN_LLM_UNAVAILABLE"),
    "429_twice_then_ok": (["429", "429", "ok"], "STOP_OVERLAP_OK"),
    "empty_completion": (["empty"], "ABSTAIN_EMPTY_ANSWER"),
    "malformed_json": (["malformed"] * 3, "ABSTAIN_LLM_UNAVAILABLE"),
    "no_choices": (["no_choices"] * 3, "ABSTAIN_LLM_UNAVAILABLE"),
    "dropped_connection": (["drop"] * 3, "ABSTAIN_LLM_UNAVAILABLE"),
    "http_401_bad_key": (["401"], "ABSTAIN_LLM_UNAVAILABLE"),
    "hang_past_timeout": (["hang"] * 3, "ABSTAIN_LLM_UNAVAILABLE"),
}


def ask_with_fault(ctx: Context, plan: list[str], expected: str, url: str | None = None, **extra: Any) -> dict[str, Any]:
    ctx.serve(GOOD, plan)
    before = len(ctx.server.requests)
    proc = cli(ask_cmd(ctx, *ctx.opts(url, **extra)), env={"OPENAI_API_KEY": KEY})
    reply = json.loads(proc.stdout) if proc.returncode == 0 else {}
    url = url or ctx.server.url
    return {
        **process_outcome(proc, proc.stderr, 0),
        "outcome": f"{reply.get('status')} {reply.get('reason')}",
        "ok_expected": reply.get("reason") == expected
                       and (expected != "ABSTAIN_LLM_UNAVAILABLE" or url in reply.get("explanation", "")),
        "key_leaked": KEY in proc.stdout + proc.stderr,
        "detail": {"requests_served": ctx.server.modes_served()[before:], "question_latency_ms": reply.get("latency_ms"),
                   "explanation": reply.get("explanation", "")[:300]},
    }


for _name, (_plan, _expected) in FAULTS.items():
    case("model_faults", f"ask: {_name}", f"server answers {', '.join(_plan)}")(
        lambda ctx, plan=_plan, expected=_expected: ask_with_fault(ctx, plan, expected))


@case("model_faults", "ask: connection_refused", "nothing listens on the port")
def _ask_refused(ctx: Context) -> dict[str, Any]:
    return ask_with_fault(ctx, [], "ABSTAIN_LLM_UNAVAILABLE", url=refused_url())


@case("model_faults", "ask: deadline_cuts_the_timeout", "server hangs; LLM_TIMEOUT_S=300, WALL_TIME_S=40")
def _ask_deadline(ctx: Context) -> dict[str, Any]:
    # 40 s: a fresh process spends up to ~20 of them loading the embedder inside the question's clock
    res = ask_with_fault(ctx, ["hang"] * 3, "ABSTAIN_LLM_UNAVAILABLE", LLM_TIMEOUT_S=300, WALL_TIME_S=40)
    # the call ends by the deadline; BAUG and finalize run after it
    res["ok_expected"] &= (res["detail"]["question_latency_ms"] or 1e9) <= 42_000
    return res


@case("model_faults", "eval: every server fault, one per question", "the faults above, in order, question by question")
def _eval_faults(ctx: Context) -> dict[str, Any]:
    ctx.serve(GOOD, [mode for plan, _ in FAULTS.values() for mode in plan])
    out = ctx.folder("eval_faults")
    n = len(FAULTS)
    proc = cli(eval_cmd(ctx.toy, out, ["--n", str(n), *ctx.opts(), "-o", f"OPENAI_API_KEY={KEY}"]), env={"OPENAI_API_KEY": KEY})
    return eval_outcome(ctx, out, proc, n, [reason for _, reason in FAULTS.values()])


@case("model_faults", "eval: dead server", "nothing listens on the port, 12 questions")
def _eval_dead(ctx: Context) -> dict[str, Any]:
    out = ctx.folder("eval_dead")
    proc = cli(eval_cmd(ctx.toy, out, ctx.opts(refused_url())), env={"OPENAI_API_KEY": KEY})
    return eval_outcome(ctx, out, proc, 12, ["ABSTAIN_LLM_UNAVAILABLE"] * 12)
