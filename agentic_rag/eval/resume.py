"""Resuming a run: which settings may differ (``RUN_NEUTRAL_SETTINGS``), the refusal to mix two
configurations' rows in one folder, and what Ctrl-C prints (the exact command that continues).

``--resume`` skips the ids already written, redoes a question whose line a kill cut, and drops the
telemetry rounds of questions that never got a result line (eval/runner.py does the skipping).
"""

from __future__ import annotations

import json
import os
import shlex
import signal
import sys
from pathlib import Path
from typing import Any

from agentic_rag.configuration import ENV_FALLBACKS, ENV_PREFIX, REMOVED_SETTINGS, SECRET_SETTINGS, flat_name
from agentic_rag.errors import UserError
from agentic_rag.telemetry import parse_json

# Settings that change where files go, how fast a run is or how the model server is reached, never
# what it answers: a run resumes across them (the server moved to another port, a longer timeout).
CONNECTION_SETTINGS = frozenset({
    "OPENAI_BASE_URL", "OPENAI_API_KEY", "LLM_TIMEOUT_S", "LLM_RETRIES", "LLM_BACKOFF_S", "LLM_BREAKER_COOLDOWN_S",
    "EVAL_JUDGE_BASE_URL", "EVAL_JUDGE_API_KEY",
})
RUN_NEUTRAL_SETTINGS = frozenset({
    "TELEMETRY_PATH", "LLM_CACHE_PATH", "ARTIFACTS_DIR", "MODEL_CACHE_DIR", "TORCH_THREADS", "CHECKPOINT_PATH",
    "TRACE_TEXT_CHARS", "INDEX_CACHE_DIR", "OTLP_ENDPOINT", *CONNECTION_SETTINGS,
    "LLM_DTYPE",  # what it resolves to is compared, in the model's identity

    # where the questions run (a run begun on threads may be resumed on a Ray cluster)
    "RAY_CPUS_PER_WORKER", "RAY_ITEM_ATTEMPTS", "RAY_WORKER_REPLACEMENTS", "RAY_WORKER_START_TIMEOUT_S",
    "RAY_CONNECT_TIMEOUT_S", "RAY_INGEST_BATCH",
})
MISMATCHES_SHOWN = 4  # differing settings named in a refused resume (the rest are counted)


class ResumeMismatchError(UserError, ValueError):
    """``--resume`` into a folder whose rows were produced by another configuration."""


class EvalInterrupted(KeyboardInterrupt):
    """Ctrl-C during a run: the rows written so far are complete, and ``--resume`` continues from them."""

    def __init__(self, out: Path, written: int, total: int) -> None:
        super().__init__(f"interrupted: {written} of {total} questions are saved in {out / 'results.jsonl'}")
        self.out, self.written, self.total = out, written, total


def _identity(config: dict[str, Any], key: str) -> Any:
    value = config.get(key)
    if key == "model" and isinstance(value, dict):
        # where the server listens is not the model, nor why a dtype was chosen; a local run from before
        # LLM_DTYPE computed in bfloat16
        same = {k: v for k, v in value.items() if k not in ("base_url", "dtype_reason")}
        return same | ({"dtype": value.get("dtype", "bfloat16")} if value.get("backend") == "local" else {})
    if key == "probe" and isinstance(value, dict):  # a run from before the reader read its generator's prefill
        how = value.get("how", "generation")  # a local reader's dtype: bfloat16 in runs from before LLM_DTYPE
        return {"how": how, "sha256": value.get("sha256"), **({"dtype": value.get("dtype", "bfloat16")} if how == "local" else {})}
    return value


def check_resumable(out: Path, config: dict[str, Any]) -> dict[str, Any] | None:
    """Refuse to resume a run under other settings: the folder would silently mix two systems' rows
    (a calibration sweep resumed after a preset changed would report the old figures as new). The
    folder's config, when it has a readable one."""
    try:
        old = parse_json((out / "config.json").read_text())
    except (OSError, UnicodeDecodeError, json.JSONDecodeError):
        return None
    if not isinstance(old, dict):  # as unreadable as broken JSON: nothing to compare with
        return None
    new = json.loads(json.dumps(config, default=str))
    diffs = {k: (_identity(old, k), _identity(new, k)) for k in ("system", "dataset_sha256", "model", "probe", "decision")}
    a, b = old.get("settings") if isinstance(old.get("settings"), dict) else {}, new.get("settings") or {}
    diffs |= {k: (a.get(k), b.get(k)) for k in sorted(set(a) | set(b)) if k not in RUN_NEUTRAL_SETTINGS
              and not (k in REMOVED_SETTINGS and k not in b and a.get(k) == REMOVED_SETTINGS[k][0])}  # now a constant
    changed = [f"{k}: {was!r} -> {now!r}" for k, (was, now) in diffs.items() if was != now]
    if changed:
        more = len(changed) - MISMATCHES_SHOWN
        raise ResumeMismatchError(
            f"cannot resume {out}: it was run with other settings ({', '.join(changed[:MISMATCHES_SHOWN])}"
            f"{f' and {more} more' if more > 0 else ''}); resume with the same settings, or give a new --out "
            "to start another run"
        )
    return old


def resume_command(prog: str, args: list[str], out: str | Path) -> str:
    """The command line that continues a run: the same arguments plus its folder and ``--resume``, less
    every secret given as an override. A key is never printed, not even masked: a mask run as printed
    would be sent as the key. A shell comment after the command says which variable to set instead, so
    the line still runs as it is copied."""
    shown, secrets = _without_secrets(args)
    shown = [a for a in shown if a != "--overwrite"]  # the folder now holds this run's rows: continue them
    if not any(a == "--out" or a.startswith("--out=") for a in shown):
        shown += ["--out", str(out)]
    if "--resume" not in shown:
        shown.append("--resume")
    names = " and ".join(dict.fromkeys(name if name in ENV_FALLBACKS else ENV_PREFIX + name for name in secrets))
    note = f"  # first set {names} in the environment: a key given with -o is never printed" if names else ""
    return f"{prog} {shlex.join(shown)}{note}"


def _without_secrets(args: list[str]) -> tuple[list[str], list[str]]:
    """``args`` less the overrides that set a secret (``-o K=V``, ``--override K=V``, ``--override=K=V``,
    ``-oK=V``), and the flat names of those secrets."""
    kept: list[str] = []
    secrets: list[str] = []
    i = 0
    while i < len(args):
        arg = args[i]
        if arg in ("-o", "--override") and i + 1 < len(args):
            item, taken = args[i + 1], args[i:i + 2]
        else:
            item = arg.removeprefix("--override=") if arg.startswith("--override=") else \
                arg[2:] if arg.startswith("-o") and not arg.startswith("--") else ""
            taken = [arg]
        key, eq, _ = item.partition("=")
        if eq and key.strip() in SECRET_SETTINGS:
            secrets.append(flat_name(key.strip()))
        else:
            kept += taken
        i += len(taken)
    return kept, secrets


_signals: list[int] = []  # the signal that interrupted this process, when it was not Ctrl-C


def interrupt_on_sigterm() -> None:
    """SIGTERM (``kill``, a scheduler ending the job) stops a run as Ctrl-C does: the same saved rows,
    the same resume command, and exit status 143 (128 + SIGTERM)."""

    def stop(signum: int, frame: Any) -> None:
        _signals.append(signum)
        raise KeyboardInterrupt

    signal.signal(signal.SIGTERM, stop)


def exit_interrupted(exc: KeyboardInterrupt, out: str | Path, prog: str, args: list[str]) -> None:
    """Ctrl-C or SIGTERM: say what is saved and how to continue, then leave at once with 128 + the
    signal (130 for Ctrl-C, 143 for SIGTERM).

    ``os._exit`` because a question still running in a worker thread (a model call that cannot be
    interrupted) would otherwise hold the interpreter's exit until it finished; everything a run
    writes is already on disk, one whole line per write."""
    saved = str(exc) if isinstance(exc, EvalInterrupted) else f"interrupted: results so far are in {Path(out) / 'results.jsonl'}"
    print(f"\n{saved}; resume with:\n  {resume_command(prog, args, out)}", file=sys.stderr)
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(128 + (_signals[-1] if _signals else signal.SIGINT))
