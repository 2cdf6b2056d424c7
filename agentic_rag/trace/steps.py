"""A question's checkpointed steps (`agentic-rag trace RUN --id Q --steps` or `--step N`): each step
with what it changed in the state (keys added, changed or removed, values abbreviated), or the whole
graph state at one step, its values cut as a run's trace events cut them."""

from __future__ import annotations

import json
from pathlib import Path

from rich.console import Console
from rich.table import Table
from rich.text import Text

from agentic_rag.checkpoints import MAX_CHECKPOINT_BYTES, history, snapshot_at
from agentic_rag.events import SUMMARIES, clip
from agentic_rag.trace.run import Run, TraceError


def checkpoint_file(run: Run) -> Path:
    """The run's checkpoint file: the folder's own first (a run folder may have been moved since it
    was written), else the ``CHECKPOINT_PATH`` it recorded."""
    found = [p for p in (run.path / "checkpoints.sqlite", run.settings.get("CHECKPOINT_PATH")) if p and Path(p).is_file()]
    if not found:
        raise TraceError(f"{run.path} has no checkpoints; run `agentic-rag eval --checkpoints` to record them")
    return Path(found[0])


STEP_VALUE_CHARS = 90  # characters of a changed value shown per line of `--steps` (`--step N` shows it whole)
# Keys shown by what they hold rather than their value: the question's input, and the trace itself
_BY_SIZE = {"record": "the question's record", "events": "trace events"}


def abbreviate(key: str, value, limit: int = STEP_VALUE_CHARS) -> str:
    """A state value on one line: summarised as a run's trace events keep it, then cut to ``limit``."""
    if key in _BY_SIZE and value is not None:
        return f"({_BY_SIZE[key]}{f', {len(value)}' if isinstance(value, (list, dict)) else ''})"
    shown = SUMMARIES[key](value, limit) if key in SUMMARIES and value is not None else value
    text = shown if isinstance(shown, str) and shown else json.dumps(shown, default=str, ensure_ascii=False)
    return clip(" ".join(text.split()), limit)


def _changed(key: str, old, new) -> str:
    """A changed value by what changed: the entries a dict gained or changed (the per-node
    accounting merges that way), the items appended to a list, else the new value."""
    if isinstance(old, dict) and isinstance(new, dict):
        return abbreviate(key, {k: v for k, v in new.items() if old.get(k, object()) != v})
    if isinstance(old, list) and isinstance(new, list) and new[: len(old)] == old and len(new) > len(old):
        added = new[len(old):]
        if key == "events":
            return f"+{len(added)}: " + ", ".join(str(e.get("node", "?")) for e in added)
        return f"+{len(added)}: " + abbreviate(key, added)
    return abbreviate(key, new)


def changes(before: dict, after: dict) -> list[tuple[str, str, str]]:
    """What a step wrote: (mark, key, value) for each key added (+), changed (~) or removed (-)."""
    out = []
    for key in sorted(set(before) | set(after)):
        if key not in after:
            out.append(("-", key, ""))
        elif key not in before:
            out.append(("+", key, abbreviate(key, after[key])))
        elif before[key] != after[key]:
            out.append(("~", key, _changed(key, before[key], after[key])))
    return out


def print_steps(console: Console, graph, path: Path, qid: str, max_bytes: int = MAX_CHECKPOINT_BYTES) -> None:
    """Each checkpointed step: the nodes that ran and what they changed in the state (`--step N` for all of it)."""
    table = Table(title=f"checkpoints of {qid} ({path}): what each step changed")
    for col in ("step", "ran", "changed (+ added, ~ changed, - removed)", "next"):
        table.add_column(col, overflow="fold")
    snaps = history(graph, path, qid, max_bytes)
    if not snaps:
        raise TraceError(f"no checkpoints for {qid!r} in {path}")
    before: dict = {}
    ran = "(input)"
    for snap in snaps:
        lines = Text()
        for mark, key, value in changes(before, snap.values):
            if lines:
                lines.append("\n")
            lines.append(f"{mark} {key}", style={"+": "green", "~": "yellow", "-": "red"}[mark])
            if mark != "-":
                lines.append(f": {value}")
        table.add_row(str(snap.metadata.get("step")), ran, lines if lines else Text("(nothing)", style="dim"),
                      ", ".join(snap.next) or "(end)")
        before, ran = snap.values, ", ".join(_runs(snap.next))
    console.print(table)


def _runs(nodes: tuple[str, ...]) -> list[str]:
    """Parallel runs of a node counted once (``worker x3``)."""
    counts = {n: nodes.count(n) for n in nodes}
    return [f"{n} x{c}" if c > 1 else n for n, c in counts.items()]


def print_step(console: Console, err: Console, graph, path: Path, qid: str, step: int, limit: int,
               max_bytes: int = MAX_CHECKPOINT_BYTES) -> None:
    try:
        snap = snapshot_at(graph, path, qid, step, max_bytes)
    except KeyError as exc:
        raise TraceError(str(exc.args[0])) from None
    shown = {k: (SUMMARIES[k](v, limit) if k in SUMMARIES else v) for k, v in snap.values.items() if k not in ("record", "events")}
    err.print(f"step {step}: next {', '.join(snap.next) or '(end)'}")
    console.print_json(data=json.loads(json.dumps(shown, default=str)))
