"""What every converter shares: reading JSON lines with bad ones reported, per-question random
generators, and the stats each converter returns."""

from __future__ import annotations

import hashlib
import json
import random
import sys
from pathlib import Path
from typing import Any, Iterable, Iterator, Literal, Sequence

from pydantic import ValidationError
from tqdm import tqdm

from agentic_rag.datasets.crag import (
    BadRecord,
    CragRecord,
    DataError,
    ReadReport,
    answer_to_str,
    iter_lines,
    write_records,
)
from agentic_rag.telemetry import parse_json

OnBad = Literal["skip", "fail"]
Stats = dict[str, Any]


def check_on_bad(on_bad: str) -> None:
    if on_bad not in ("skip", "fail"):
        raise ValueError(f"on_bad must be 'skip' or 'fail', not {on_bad!r}")


def check_n(n: int | None) -> None:
    if n is not None and n < 0:
        raise ValueError(f"n must be >= 0, not {n}")


def progress_bar(iterable: Iterable[Any], desc: str, progress: bool | None, total: int | None = None) -> Iterable[Any]:
    """tqdm on stderr; by default only when stderr is a terminal (``progress=None``)."""
    disable = None if progress is None else not progress
    return tqdm(iterable, desc=desc, total=total, unit=" lines", file=sys.stderr, disable=disable, leave=False)


class BadLines:
    """Collects bad lines of one input file into a ReadReport, or raises."""

    def __init__(self, path: Path, on_bad: OnBad, report: ReadReport | None):
        check_on_bad(on_bad)
        self.path = str(path)
        self.on_bad = on_bad
        self.report = report if report is not None else ReadReport(self.path)
        self.report.path = self.path

    def __call__(self, lineno: int, reason: str) -> None:
        bad = BadRecord(self.path, lineno, reason)
        if self.on_bad == "fail":
            raise DataError(f"bad record at {bad}")
        self.report.bad.append(bad)

    def good(self) -> None:
        self.report.good += 1

    def withdraw(self, lineno: int, reason: str) -> None:
        """A line counted good turned out unusable when its record was built."""
        self.report.good -= 1
        self(lineno, reason)


def iter_json_objects(
    path: Path, bad: BadLines, desc: str, progress: bool | None
) -> Iterator[tuple[int, dict[str, Any]]]:
    """(line number, object) for each non-blank line; lines that are not JSON objects go to ``bad``."""
    for lineno, line, undecodable in progress_bar(iter_lines(path), desc, progress):
        if line is None:
            bad(lineno, undecodable)
            continue
        try:
            raw = parse_json(line)
        except json.JSONDecodeError as exc:
            bad(lineno, f"bad JSON ({exc.msg} at column {exc.colno})")
            continue
        if not isinstance(raw, dict):
            bad(lineno, "line is not a JSON object")
            continue
        yield lineno, raw


def require_text(raw: dict[str, Any], key: str, what: str | None = None) -> str:
    value = raw.get(key)
    if not isinstance(value, str) or not value.strip():
        raise DataError(f"{what or key} is missing or empty")
    return value.strip()


def require_list(raw: dict[str, Any], key: str) -> list[Any]:
    value = raw.get(key)
    if value is None:
        return []
    if not isinstance(value, list):
        raise DataError(f"{key} is not a list")
    return value


def error_text(exc: Exception) -> str:
    if isinstance(exc, ValidationError):
        return "; ".join(
            f"{'.'.join(str(x) for x in err['loc']) or 'record'}: {err['msg']}" for err in exc.errors()
        )
    return str(exc)


def distinct(texts: Iterable[Any]) -> list[str]:
    """Non-empty strings in first-seen order, without repeats."""
    out: list[str] = []
    for t in texts:
        s = answer_to_str(t)
        if s and s not in out:
            out.append(s)
    return out


def question_rng(seed: int, *key: Any) -> random.Random:
    """A generator for one question: stable across runs and independent of the other questions sampled."""
    return random.Random("/".join(str(k) for k in (seed, *key)))


def sample_sorted(indices: Sequence[int], n: int | None, rng: random.Random) -> list[int]:
    if n is None or n >= len(indices):
        return list(indices)
    return sorted(rng.sample(list(indices), n))


def sha1(text: str) -> str:
    return hashlib.sha1(text.encode("utf-8")).hexdigest()


def answer_stats(records: Sequence[CragRecord]) -> Stats:
    unanswerable = sum(1 for r in records if r.is_unanswerable)
    return {"answerable": len(records) - unanswerable, "unanswerable": unanswerable}


def write_converted(
    records: list[CragRecord], out_path: str | Path, src: Path, read: int, bad, n: int | None, seed: int, **extra: Any
) -> tuple[Path, Stats]:
    """Write converted records and the stats every converter reports (read, bad, written, answer kinds)."""
    out = Path(out_path)
    write_records(records, out)
    stats: Stats = {"input": str(src), "read": read, "bad": len(bad.report.bad), "n": n, "seed": seed,
                    **extra, "written": len(records), **answer_stats(records)}
    return out, stats
