"""CRAG's JSON-lines format: the one input format of every command.

Records are streamed line by line from plain or ``.bz2`` files (the full CRAG dev file is several GB),
validated, and normalised: numeric answers become strings, ``alternative_answers`` given as a string
holding a list becomes a list. A malformed line is reported with its file and line number and either
skipped (and counted) or raised, as the caller chooses; nothing is dropped silently.

Lines are decoded one at a time, so one line that is not UTF-8 is one bad record, not a dead file; a
byte-order mark is read as one. Values of the wrong type (a list where the answer should be) are bad
records too, never turned into their Python spelling; a lone surrogate escape (``"\ud800"``, which no
UTF-8 writer can encode) becomes U+FFFD. A second record with an ``interaction_id`` already read is
refused as a bad record: results, resume and summaries are keyed by that id.
"""

from __future__ import annotations

import ast
import bz2
import codecs
import gzip
import json
import math
import re
import sys
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any, BinaryIO, Callable, Iterable, Iterator, Literal, TextIO, TypeVar

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from agentic_rag.errors import UserError
from agentic_rag.telemetry import JSON_TOO_DEEP, parse_json

IDK = "i don't know"
INVALID_QUESTION = "invalid question"
EXAMPLE_DATASET = "example"


class DataError(UserError, ValueError):
    """A dataset file or record cannot be read."""


_SURROGATE = re.compile("[\ud800-\udfff]")


def clean_text(text: str) -> str:
    """``text`` with lone surrogates replaced by U+FFFD: JSON may escape them, UTF-8 cannot encode them,
    and one in a page would otherwise crash hashing, caching and writing results far from the input.
    Encoding is tried first: a page of megabytes is scanned at C speed, the pattern only runs on the rare
    text that needs it."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return _SURROGATE.sub("\ufffd", text)
    return text


def _clean(value: Any) -> Any:
    if isinstance(value, str):
        return clean_text(value)
    if isinstance(value, list):
        return [_clean(v) for v in value]
    if isinstance(value, dict):
        return {_clean(k): _clean(v) for k, v in value.items()}
    return value


def _scalar(v: Any) -> Any:
    """``v`` if it is a string, number, boolean or null; a list or an object is a bad record."""
    if isinstance(v, (list, tuple, dict)):
        raise ValueError(f"expected a string or a number, got {'an object' if isinstance(v, dict) else 'a list'}")
    return v


class SearchResult(BaseModel):
    model_config = ConfigDict(extra="allow")

    page_name: str = ""
    page_url: str = ""
    page_snippet: str = ""
    page_result: str = ""
    page_last_modified: str = ""

    @model_validator(mode="before")
    @classmethod
    def _clean_strings(cls, raw: Any) -> Any:
        return _clean(raw) if isinstance(raw, dict) else raw

    @field_validator("page_name", "page_url", "page_snippet", "page_result", "page_last_modified", mode="before")
    @classmethod
    def _none_to_empty(cls, v: Any) -> str:
        return "" if v is None else str(_scalar(v)).strip()


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

    @model_validator(mode="before")
    @classmethod
    def _clean_strings(cls, raw: Any) -> Any:
        return _clean(raw) if isinstance(raw, dict) else raw

    @field_validator("interaction_id", mode="before")
    @classmethod
    def _id_to_str(cls, v: Any) -> str:
        if v is None or v == "":
            raise ValueError("interaction_id is missing")
        if isinstance(v, bool) or not isinstance(v, (str, int)):
            raise ValueError(f"expected a string or an integer, got {type(v).__name__}")
        return str(v)

    @field_validator("search_results", mode="before")
    @classmethod
    def _no_results(cls, v: Any) -> Any:
        return [] if v is None else v

    @field_validator("query", mode="before")
    @classmethod
    def _query(cls, v: Any) -> str:
        if not isinstance(v, str) or not v.strip():
            raise ValueError("query is missing or empty")
        return v.strip()

    @field_validator("answer", mode="before")
    @classmethod
    def _answer_to_str(cls, v: Any) -> str:
        return answer_to_str(_scalar(v))

    @field_validator("alternative_answers", mode="before")
    @classmethod
    def _alternatives(cls, v: Any) -> list[str]:
        if v is None or v == "":
            return []
        if isinstance(v, str):
            v = _parse_list_string(v)
        if not isinstance(v, (list, tuple)):
            v = [v]
        return [answer_to_str(a) for a in v if answer_to_str(_scalar(a))]

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
        except (MemoryError, RecursionError):  # the parser's stack: 100,000 nested signs exhaust it
            raise ValueError("too deeply nested to read as a list") from None
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
    if not p.is_file():  # a pipe (/dev/stdin, <(...)) gives its bytes once; each reopening would lose some
        raise DataError(f"dataset {p} is a pipe or a device, not a file: a dataset is read more than once; "
                        "save it to a file and give that")
    return p


def open_binary(path: Path) -> BinaryIO:
    """Open plain, .bz2 or .gz bytes for streaming."""
    if path.suffix == ".bz2":
        return bz2.open(path, "rb")
    if path.suffix == ".gz":
        return gzip.open(path, "rb")
    return open(path, "rb")


SNIFF_BYTES = 8192  # how much of a file is read to tell text from binary (bytes)


def looks_binary(sample: bytes) -> bool:
    """Whether bytes read from a file's start are binary rather than text in some encoding: a NUL byte
    (which no text encoding a reader would give us uses) or mostly control characters."""
    if b"\x00" in sample:
        return True
    control = sum(b < 32 and b not in (9, 10, 12, 13, 27) for b in sample)
    return bool(sample) and control > len(sample) // 10


MAX_RECORD_BYTES = 64_000_000  # the default of the setting MAX_RECORD_BYTES, for readers given no settings


def iter_lines(path: Path, max_record_bytes: int = MAX_RECORD_BYTES) -> Iterator[tuple[int, str | None, str]]:
    """``(line number, text, "")`` for each non-blank line, or ``(line number, None, reason)`` for a
    line that is not UTF-8 or longer than ``max_record_bytes`` (read past, never held). Decoding per line
    keeps one stray byte from failing the whole file."""
    try:
        with open_binary(path) as fh:
            sample = fh.read(SNIFF_BYTES)
        if sample.startswith((codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)):
            raise DataError(f"{path} is UTF-16 text; save it as UTF-8")
        if looks_binary(sample):
            raise DataError(f"{path} is a binary file, not text")
        with open_binary(path) as fh:
            for lineno, raw in enumerate(_bounded_lines(fh, max_record_bytes), start=1):
                if raw is None:
                    yield lineno, None, f"longer than {max_record_bytes:,} bytes (MAX_RECORD_BYTES): skipped unread"
                    continue
                if lineno == 1 and raw.startswith(codecs.BOM_UTF8):
                    raw = raw[len(codecs.BOM_UTF8):]
                try:
                    line = raw.decode("utf-8")
                except UnicodeDecodeError as exc:
                    yield lineno, None, f"not UTF-8 text (byte 0x{raw[exc.start]:02x} at column {exc.start + 1})"
                    continue
                if line.strip():
                    yield lineno, line, ""
    except (OSError, EOFError) as exc:  # a truncated or mislabelled .bz2/.gz
        raise DataError(f"cannot read {path}: {exc}") from None


def _bounded_lines(fh: Any, limit: int) -> Iterator[bytes | None]:
    """The file's lines, each None instead when longer than ``limit`` bytes (its rest read in blocks and
    dropped, so memory stays bounded whatever a line holds)."""
    while raw := fh.readline(limit + 1):
        if len(raw) <= limit or raw.endswith(b"\n"):
            yield raw
            continue
        while (rest := fh.readline(1 << 20)) and not rest.endswith(b"\n"):
            pass
        yield None


Model = TypeVar("Model", bound=BaseModel)


def iter_validated(
    path: Path,
    model: type[Model],
    on_bad: Literal["skip", "fail"],
    on_bad_record: Callable[[BadRecord], None] | None = None,
    check: Callable[[Model, int], None] | None = None,
    max_record_bytes: int = MAX_RECORD_BYTES,
) -> Iterator[tuple[int, Model]]:
    """``(line number, object)`` for each line that is a JSON object valid as ``model`` and passes
    ``check`` (which raises ``DataError``); every other line goes to ``on_bad_record`` or raises."""
    for lineno, line, undecodable in iter_lines(path, max_record_bytes):
        try:
            if line is None:
                raise DataError(undecodable)
            raw = parse_json(line)
            if not isinstance(raw, dict):
                raise DataError("line is not a JSON object")
            item = model.model_validate(raw)
            if check:
                check(item, lineno)
        except (json.JSONDecodeError, DataError, ValidationError, RecursionError) as exc:
            bad = BadRecord(str(path), lineno, why_bad(exc))
            if on_bad == "fail":
                raise DataError(f"bad record at {bad}") from None
            if on_bad_record:
                on_bad_record(bad)
            continue
        yield lineno, item


def iter_records(
    path: str | Path,
    on_bad: Literal["skip", "fail"] = "skip",
    report: ReadReport | None = None,
    on_bad_record: Callable[[BadRecord], None] | None = None,
    max_record_bytes: int = MAX_RECORD_BYTES,
) -> Iterator[CragRecord]:
    """Stream validated CRAG records. Bad lines go to ``report`` (and the callback) or raise."""
    p = resolve_dataset(path)
    rep = report if report is not None else ReadReport(str(p))
    rep.path = str(p)
    first_line: dict[str, int] = {}

    def unique(record: CragRecord, lineno: int) -> None:
        if record.interaction_id in first_line:
            raise DataError(f"interaction_id: duplicate {record.interaction_id!r} (first at line "
                            f"{first_line[record.interaction_id]}); ids must be unique in a file")
        first_line[record.interaction_id] = lineno

    def bad(record: BadRecord) -> None:
        rep.bad.append(record)
        if on_bad_record:
            on_bad_record(record)

    for _, record in iter_validated(p, CragRecord, on_bad, bad, unique, max_record_bytes):
        rep.good += 1
        yield record


def warn(text: str, stream: TextIO | None = None) -> None:
    """Print a warning on a line of its own: a progress bar being drawn (ingest's page extraction) is
    cleared first and redrawn below it, instead of the warning being glued onto the bar's line. A
    bad record's text is shown, never obeyed by the terminal (agentic_rag/terminal.py)."""
    from tqdm import tqdm

    from agentic_rag.terminal import terminal_safe

    tqdm.write(terminal_safe(text), file=stream or sys.stderr)


class BadRecordWarner:
    """Prints skipped bad records on stderr as they are read, the first ``limit`` of them in full;
    ``finish`` says how many more there were. A skip that prints nothing looks like a clean file."""

    def __init__(self, limit: int, stream: TextIO | None = None):
        self.limit = limit
        self.stream = stream
        self.count = 0

    def __call__(self, bad: BadRecord) -> None:
        self.count += 1
        if self.count <= self.limit:
            warn(f"warning: skipped bad record {bad}", self.stream)

    def finish(self) -> None:
        if self.count > self.limit:
            warn(f"warning: {self.count - self.limit} more bad records skipped ({self.count} in all)", self.stream)


POSITION_MARK = "@"  # `--id @3`: the record at 0-based position 3; a bare value is always an interaction_id
Item = TypeVar("Item")


def id_position(spelling: str) -> int | None:
    """The 0-based position ``@N`` asks for; None for any other spelling, which is an id."""
    digits = spelling.removeprefix(POSITION_MARK)
    return int(digits) if digits != spelling and digits.isascii() and digits.isdigit() else None


def pick(items: Iterable[Item], spelling: str, id_of: Callable[[Item], str]) -> tuple[Item | None, int]:
    """The item whose id is ``spelling``, else, for ``@N``, the one at position N; and how many items
    were read. An exact id wins over a position, so no record's id can hide another's."""
    position, at, count = id_position(spelling), None, 0
    for count, item in enumerate(items, start=1):
        if id_of(item) == spelling:
            return item, count
        if count - 1 == position:
            at = item
    return at, count


def position_hint(spelling: str, count: int) -> str:
    """What to add when no id is ``spelling``: how to ask for a position, where it names one there is."""
    if spelling.isascii() and spelling.isdigit() and int(spelling) < count:
        return f"; for the one at 0-based position {int(spelling)}, give --id {POSITION_MARK}{int(spelling)}"
    if (position := id_position(spelling)) is not None and position >= count:
        return f"; there are {count}, at positions {POSITION_MARK}0 to {POSITION_MARK}{count - 1}"
    return ""


def find_record(
    path: str | Path,
    record_id: str,
    on_bad: Literal["skip", "fail"] = "skip",
    on_bad_record: Callable[[BadRecord], None] | None = None,
    max_record_bytes: int = MAX_RECORD_BYTES,
) -> CragRecord:
    """The record whose ``interaction_id`` is ``record_id``, or, for ``@N``, the record at 0-based position N."""
    records = iter_records(path, on_bad=on_bad, on_bad_record=on_bad_record, max_record_bytes=max_record_bytes)
    found, count = pick(records, record_id, lambda rec: rec.interaction_id)
    if found is None:
        raise DataError(f"no record with id {record_id!r} in {path}{position_hint(record_id, count)}")
    return found


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


def why_bad(exc: Exception) -> str:
    """A bad line's reason as a reader wants it: the JSON error's column, or each bad field and why."""
    if isinstance(exc, RecursionError) or (isinstance(exc, json.JSONDecodeError) and exc.msg == JSON_TOO_DEEP):
        return "JSON nested too deeply"
    if isinstance(exc, json.JSONDecodeError):
        return f"bad JSON ({exc.msg} at column {exc.colno})"
    if isinstance(exc, ValidationError):
        parts = []
        for err in exc.errors():
            loc = ".".join(str(x) for x in err["loc"]) or "record"
            parts.append(f"{loc}: {err['msg'].removeprefix('Value error, ')}")
        return "; ".join(parts)
    return str(exc)
