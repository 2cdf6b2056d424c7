"""Per-round JSONL telemetry: one line per BAUG decision, appended and flushed at once.

Each line holds the round's figures (anchors_proposed, anchors_selected, path_count, pruned_count,
new_hits_ratio, anchor_coverage, overlap_est, faith_est, tokens_left, tokens_used, stop_reason,
latency_ms) plus the question id, round, action and reason code, so a run can be replayed and
plotted without re-running the model.
"""

from __future__ import annotations

import json
import os
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Iterable, Iterator

from agentic_rag.errors import open_for_append, replace_file

try:
    import fcntl
except ImportError:  # pragma: no cover - not on POSIX: appends are still single writes, only unlocked
    fcntl = None


def telemetry_path(settings, system: str) -> Path:
    if settings.paths.TELEMETRY_PATH is not None:
        return Path(settings.paths.TELEMETRY_PATH)
    return Path(settings.paths.ARTIFACTS_DIR) / "telemetry" / f"{system}.jsonl"


def append_line(path: Path, line: str) -> None:
    """Append one whole line so that no other writer, thread or process, can cut into it.

    A buffered ``open(path, "a").write`` hands a long line to the kernel in several writes, and two
    processes sharing the file (two runs on one TELEMETRY_PATH) interleave their pieces. Here the line
    goes out in one ``write`` on an ``O_APPEND`` descriptor, under an exclusive ``flock`` in case the
    kernel writes it in parts (a full disk, a signal)."""
    data = (line.rstrip("\n") + "\n").encode("utf-8")
    fd = open_for_append(path)
    try:
        if fcntl is not None:
            fcntl.flock(fd, fcntl.LOCK_EX)
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view):]
    finally:
        os.close(fd)  # releases the lock


_CAPTURED: list[tuple[str, str]] | None = None


@contextmanager
def captured() -> Iterator[list[tuple[str, str]]]:
    """Collect this process's telemetry lines as (path, line) pairs instead of writing them.

    A Ray worker answers a question on another machine, or at least in another process, than the
    run's: the driver writes each question's lines itself (``write_lines``), next to its result row,
    so that one process writes the run folder and a resumed run keeps or drops both together. Meant
    for a process that runs one item at a time, as a Ray worker does."""
    global _CAPTURED
    previous, _CAPTURED = _CAPTURED, []
    try:
        yield _CAPTURED
    finally:
        _CAPTURED = previous


def write_row(path: Path, row: dict[str, Any]) -> None:
    line = json.dumps(row, ensure_ascii=False, default=str)
    if _CAPTURED is not None:
        _CAPTURED.append((str(path), line))
        return
    write_lines([(str(path), line)])


def write_lines(lines: Iterable[tuple[str, str]]) -> None:
    """Append (path, line) pairs, each line whole (see ``append_line``)."""
    for path, line in lines:
        Path(path).parent.mkdir(parents=True, exist_ok=True)
        append_line(Path(path), line)


def jsonl_lines(text: str) -> list[str]:
    """The lines of a JSON-lines file: split at ``\\n`` only. The writers keep non-ASCII characters as
    they are (``ensure_ascii=False``), so a raw U+2028, U+2029 or U+0085 from a question or a reply sits
    inside a row, and ``str.splitlines()``, which breaks at those too, would cut the row in two and
    lose it."""
    return text.split("\n")


JSON_TOO_DEEP = "nested too deeply"  # the message of a JSONDecodeError that parse_json raises for deep nesting


def parse_json(text: str | bytes) -> Any:
    """``json.loads`` for text from outside (a dataset, a run folder, a file a user names): a number longer
    than Python's digit limit or nesting deeper than its stack is malformed JSON like any other
    (``JSONDecodeError``, which every reader of such text already handles), not an error that ends a run."""
    try:
        return json.loads(text)
    except json.JSONDecodeError:
        raise
    except (ValueError, RecursionError, MemoryError) as exc:
        why = JSON_TOO_DEEP if isinstance(exc, (RecursionError, MemoryError)) else str(exc).split(";")[0]
        raise json.JSONDecodeError(why, text if isinstance(text, str) else "", 0) from None


def json_number(value: Any) -> int | float | None:
    """``value`` when it reads as a number, else None: ``true`` and ``false`` are no numbers, though Python
    counts them as ints. Every reading of a number from a row, a signal or a config that a damaged file
    may have filled with anything goes through here."""
    return value if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def read_rows(path: Path) -> list[dict[str, Any]]:
    """Every complete row; a line cut by a killed writer is skipped."""
    if not Path(path).is_file():
        return []
    rows = []
    for line in jsonl_lines(Path(path).read_text(encoding="utf-8")):
        try:
            rows.append(parse_json(line))
        except json.JSONDecodeError:
            continue
    return rows


def keep_questions(path: Path, question_ids: Iterable[str]) -> int:
    """Drop the rows of every question not in ``question_ids`` (and any cut line); returns how many went.

    A resumed run redoes the questions that have no result yet, some of which had already written
    rounds before the interruption: without this their rounds would appear twice. Written to a
    temporary file and renamed, so a kill leaves either the old file or the new one."""
    path = Path(path)
    if not path.is_file():
        return 0
    keep = set(question_ids)
    lines = [line for line in jsonl_lines(path.read_text(encoding="utf-8")) if line]
    kept = []
    for line in lines:
        try:
            row = parse_json(line)
        except json.JSONDecodeError:
            continue
        if isinstance(row, dict) and row.get("question_id") in keep:
            kept.append(line)
    if len(kept) == len(lines):
        return 0
    replace_file(path, "".join(line + "\n" for line in kept))
    return len(lines) - len(kept)
