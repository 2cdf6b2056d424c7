"""A question's checkpointed steps (`agentic-rag trace RUN --id Q --steps` or `--step N`): the list
of steps, or the graph state at one, its values cut as a run's trace events cut them."""

from __future__ import annotations

import json
from pathlib import Path

from rich.console import Console
from rich.table import Table

from agentic_rag.checkpoints import history, snapshot_at
from agentic_rag.events import SUMMARIES
from agentic_rag.trace.run import Run, TraceError


def checkpoint_file(run: Run) -> Path:
    """The run's checkpoint file: the folder's own first (a run folder may have been moved since it
    was written), else the ``CHECKPOINT_PATH`` it recorded."""
    found = [p for p in (run.path / "checkpoints.sqlite", run.settings.get("CHECKPOINT_PATH")) if p and Path(p).is_file()]
    if not found:
        raise TraceError(f"{run.path} has no checkpoints; run `agentic-rag eval --checkpoints` to record them")
    return Path(found[0])


def print_steps(console: Console, graph, path: Path, qid: str) -> None:
    table = Table(title=f"checkpoints of {qid} ({path})")
    for col in ("step", "next", "state keys"):
        table.add_column(col, overflow="fold")
    snaps = history(graph, path, qid)
    if not snaps:
        raise TraceError(f"no checkpoints for {qid!r} in {path}")
    for snap in snaps:
        table.add_row(str(snap.metadata.get("step")), ", ".join(snap.next) or "(end)", ", ".join(sorted(snap.values)))
    console.print(table)


def print_step(console: Console, err: Console, graph, path: Path, qid: str, step: int, limit: int) -> None:
    try:
        snap = snapshot_at(graph, path, qid, step)
    except KeyError as exc:
        raise TraceError(str(exc.args[0])) from None
    shown = {k: (SUMMARIES[k](v, limit) if k in SUMMARIES else v) for k, v in snap.values.items() if k not in ("record", "events")}
    err.print(f"step {step}: next {', '.join(snap.next) or '(end)'}")
    console.print_json(data=json.loads(json.dumps(shown, default=str)))
