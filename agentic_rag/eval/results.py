"""A run's results.jsonl: one whole line per judged question, read back whatever a kill left.

Each row is appended in one write as soon as its question is judged, so an interrupted run loses
nothing; reading skips a line a kill cut short, and ``repair_last_line`` ends or removes it before a
resume appends again.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any


def read_results(path: Path) -> list[dict[str, Any]]:
    """Every complete row of a results.jsonl; a line cut by a crash or kill is skipped (and re-run)."""
    return read_results_text(path.read_text(encoding="utf-8")) if path.is_file() else []


def read_results_text(text: str) -> list[dict[str, Any]]:
    rows = []
    for line in text.splitlines():
        try:
            row = json.loads(line)
        except json.JSONDecodeError:
            continue
        if isinstance(row, dict) and "id" in row:
            rows.append(row)
    return rows


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


def load_rows(results_path: Path, ids: list[str]) -> list[dict[str, Any]]:
    """Result rows in dataset order, one per question (a line cut by a crash is ignored)."""
    order = {qid: i for i, qid in enumerate(ids)}
    rows: dict[str, dict[str, Any]] = {}
    for row in read_results(results_path):
        if row["id"] in order:
            rows.setdefault(row["id"], row)
    return sorted(rows.values(), key=lambda r: order[r["id"]])
