"""CRAG's JSON-lines format: the one input format of every command.

Records are streamed line by line from plain or ``.bz2`` files (the full CRAG dev file is several GB),
validated, and normalised: numeric answers become strings, ``alternative_answers`` given as a string
holding a list becomes a list. A malformed line is reported with its file and line number and either
skipped (and counted) or raised, as the caller chooses; nothing is dropped silently.
"""

from __future__ import annotations

import ast
import bz2
import gzip
import json
import math
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import IO, Any, Callable, Iterator, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

IDK = "i don't know"
INVALID_QUESTION = "invalid question"
EXAMPLE_DATASET = "example"


class DataError(ValueError):
    """A dataset file or record cannot be read."""


class SearchResult(BaseModel):
    model_config = ConfigDict(extra="allow")

    page_name: str = ""
    page_url: str = ""
    page_snippet: str = ""
    page_result: str = ""
    page_last_modified: str = ""

    @field_validator("page_name", "page_url", "page_snippet", "page_result", "page_last_modified", mode="before")
    @classmethod
    def _none_to_empty(cls, v: Any) -> str:
        return "" if v is None else str(v).strip()


class CragRecord(BaseModel):
    model_config = ConfigDict(extra="allow")

    interaction_id: str
    query: str = Field(min_length=1)
    answer: str = ""
    alternative_answers: list[str] = Field(default_factory=list)
    domain: str = ""
    question_type: str = ""
    static_or_dynamic: str = ""
    query_time: str = ""
    search_results: list[SearchResult] = Field(default_factory=list)

    @field_validator("interaction_id", mode="before")
    @classmethod
    def _id_to_str(cls, v: Any) -> str:
        if v is None or v == "":
            raise ValueError("interaction_id is missing")
        return str(v)

    @field_validator("query", mode="before")
    @classmethod
    def _query(cls, v: Any) -> str:
        if not isinstance(v, str) or not v.strip():
            raise ValueError("query is missing or empty")
        return v.strip()

    @field_validator("answer", mode="before")
    @classmethod
    def _answer_to_str(cls, v: Any) -> str:
        return answer_to_str(v)

    @field_validator("alternative_answers", mode="before")
    @classmethod
    def _alternatives(cls, v: Any) -> list[str]:
        if v is None or v == "":
            return []
        if isinstance(v, str):
            v = _parse_list_string(v)
        if not isinstance(v, (list, tuple)):
            v = [v]
        return [answer_to_str(a) for a in v if answer_to_str(a)]

    @property
    def gold_answers(self) -> list[str]:
        return [a for a in [self.answer, *self.alternative_answers] if a]

    @property
    def is_unanswerable(self) -> bool:
        return self.answer.strip().lower() == IDK

    @property
    def is_false_premise(self) -> bool:
        return self.answer.strip().lower() == INVALID_QUESTION


def answer_to_str(v: Any) -> str:
    """CRAG answers may be JSON numbers; keep their written form (``12`` not ``12.0``)."""
    if v is None:
        return ""
    if isinstance(v, bool):
        return "yes" if v else "no"
    if isinstance(v, float):
        if math.isnan(v):
            return ""
        return str(int(v)) if v.is_integer() else repr(v)
    return str(v).strip()


def _parse_list_string(text: str) -> Any:
    text = text.strip()
    for parse in (json.loads, ast.literal_eval):
        try:
            return parse(text)
        except (ValueError, SyntaxError):
            continue
    return [text]


@dataclass
class BadRecord:
    path: str
    line: int
    reason: str

    def __str__(self) -> str:
        return f"{self.path}:{self.line}: {self.reason}"


@dataclass
class ReadReport:
    """What a streaming read saw: good records and every bad line, with where it was."""

    path: str
    good: int = 0
    bad: list[BadRecord] = field(default_factory=list)


def resolve_dataset(path: str | Path) -> Path:
    """Accept a file path or ``example`` (the 10 CRAG records bundled with the package)."""
    if str(path) == EXAMPLE_DATASET:
        return Path(str(resources.files("agentic_rag") / "data" / "crag_example_10.jsonl.bz2"))
    p = Path(path)
    if not p.exists():
        raise DataError(f"dataset {p} does not exist")
    if p.is_dir():
        raise DataError(f"dataset {p} is a folder; give a CRAG .jsonl or .jsonl.bz2 file")
    return p


def open_text(path: Path) -> IO[str]:
    """Open plain, .bz2 or .gz text for streaming."""
    if path.suffix == ".bz2":
        return bz2.open(path, "rt", encoding="utf-8")
    if path.suffix == ".gz":
        return gzip.open(path, "rt", encoding="utf-8")
    return open(path, "r", encoding="utf-8")


def iter_records(
    path: str | Path,
    on_bad: Literal["skip", "fail"] = "skip",
    report: ReadReport | None = None,
    on_bad_record: Callable[[BadRecord], None] | None = None,
) -> Iterator[CragRecord]:
    """Stream validated CRAG records. Bad lines go to ``report`` (and the callback) or raise."""
    p = resolve_dataset(path)
    rep = report if report is not None else ReadReport(str(p))
    rep.path = str(p)
    with open_text(p) as fh:
        for lineno, line in enumerate(fh, start=1):
            if not line.strip():
                continue
            try:
                raw = json.loads(line)
                if not isinstance(raw, dict):
                    raise DataError("line is not a JSON object")
                record = CragRecord.model_validate(raw)
            except (json.JSONDecodeError, DataError, ValidationError) as exc:
                bad = BadRecord(str(p), lineno, _reason(exc))
                if on_bad == "fail":
                    raise DataError(f"bad record at {bad}") from None
                rep.bad.append(bad)
                if on_bad_record:
                    on_bad_record(bad)
                continue
            rep.good += 1
            yield record


def find_record(path: str | Path, record_id: str, on_bad: Literal["skip", "fail"] = "skip") -> CragRecord:
    """The record with ``interaction_id == record_id`` (or, for a number, the record at that 0-based index)."""
    for i, rec in enumerate(iter_records(path, on_bad=on_bad)):
        if rec.interaction_id == record_id or (record_id.isdigit() and int(record_id) == i):
            return rec
    raise DataError(f"no record with id {record_id!r} in {path}")


def write_records(records: Iterator[CragRecord] | list[CragRecord], path: str | Path) -> int:
    """Write records as CRAG JSON lines (``.bz2`` if the name says so)."""
    p = Path(path)
    p.parent.mkdir(parents=True, exist_ok=True)
    opener = bz2.open if p.suffix == ".bz2" else open
    n = 0
    with opener(p, "wt", encoding="utf-8") as fh:
        for rec in records:
            fh.write(json.dumps(rec.model_dump(mode="json"), ensure_ascii=False) + "\n")
            n += 1
    return n


def _reason(exc: Exception) -> str:
    if isinstance(exc, json.JSONDecodeError):
        return f"bad JSON ({exc.msg} at column {exc.colno})"
    if isinstance(exc, ValidationError):
        parts = []
        for err in exc.errors():
            loc = ".".join(str(x) for x in err["loc"]) or "record"
            parts.append(f"{loc}: {err['msg']}")
        return "; ".join(parts)
    return str(exc)
