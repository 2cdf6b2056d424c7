"""A run's results.jsonl: one whole line per judged question, read back whatever a kill left.

Each row is appended in one write as soon as its question is judged, so an interrupted run loses
nothing; reading skips a line a kill cut short, and ``repair_last_line`` ends or removes it before a
resume appends again. A damaged line elsewhere is set aside in its own file on ``--resume``
(``set_aside_bad_lines``), and its question answered again.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from agentic_rag.eval.rows import valid_row
from agentic_rag.telemetry import jsonl_lines, parse_json


def read_results(path: Path) -> list[dict[str, Any]]:
    """Every complete row of a results.jsonl; a line cut by a crash or kill is skipped (and re-run)."""
    return read_results_text(path.read_text(encoding="utf-8", errors="replace")) if path.is_file() else []


def read_results_text(text: str) -> list[dict[str, Any]]:
    rows = []
    for line in jsonl_lines(text):
        row = parse_row(line)
        if row is not None:
            rows.append(row)
    return rows


def parse_row(line: str) -> dict[str, Any] | None:
    """The result row a line holds, or None for anything else (cut, damaged, not a row)."""
    try:
        row = parse_json(line)
    except json.JSONDecodeError:
        return None
    return row if valid_row(row) else None


def read_object(path: Path) -> dict[str, Any]:
    """A run folder's JSON object (config.json, summary.json): {} when it is missing, broken or of
    another shape, so a damaged folder still shows its rows."""
    try:
        data = parse_json(Path(path).read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError):
        return {}
    return data if isinstance(data, dict) else {}


def done_ids(path: Path) -> set[str]:
    return {row["id"] for row in read_results(path)}


def repair_last_line(path: Path) -> None:
    """End a last line that a kill left without its newline: a complete row gets its newline back; a
    cut one is removed, and its question, having no row, is answered again."""
    data = path.read_bytes() if path.is_file() else b""
    if not data or data.endswith(b"\n"):
        return
    start = data.rfind(b"\n") + 1
    with open(path, "rb+") as fh:
        if read_results_text(data[start:].decode("utf-8", errors="replace")):
            fh.seek(0, os.SEEK_END)
            fh.write(b"\n")
        else:
            fh.truncate(start)


def set_aside_bad_lines(path: Path, aside: Path) -> list[int]:
    """Move every whole line of ``path`` that is not a result row (damaged by a disk, an editor, a
    copy) into ``aside``, keeping its text, and rewrite ``path`` without it: a resume then answers those
    questions again instead of carrying the damage. The 1-based numbers of the lines moved."""
    repair_last_line(path)
    if not path.is_file():
        return []
    data = path.read_bytes()
    keep, bad, numbers = [], [], []
    for number, raw in enumerate(data.splitlines(keepends=True), 1):
        if not raw.strip():
            continue
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError:  # a damaged byte inside a string would otherwise pass as a row
            text = ""
        if parse_row(text) is None:
            bad.append(raw if raw.endswith(b"\n") else raw + b"\n")
            numbers.append(number)
        else:
            keep.append(raw)
    if not bad:
        return []
    with open(aside, "ab") as fh:  # first: the damaged text is never only in memory
        fh.write(b"".join(bad))
        fh.flush()
        os.fsync(fh.fileno())
    tmp = path.with_name(path.name + ".tmp")
    with open(tmp, "wb") as fh:
        fh.write(b"".join(keep))
        fh.flush()
        os.fsync(fh.fileno())
    os.replace(tmp, path)
    return numbers


def load_rows(results_path: Path, ids: list[str]) -> list[dict[str, Any]]:
    """Result rows in dataset order, one per question (a line cut by a crash is ignored)."""
    order = {qid: i for i, qid in enumerate(ids)}
    rows: dict[str, dict[str, Any]] = {}
    for row in read_results(results_path):
        if row["id"] in order:
            rows.setdefault(row["id"], row)
    return sorted(rows.values(), key=lambda r: order[r["id"]])
