"""Freshness validator: an answer to a time-sensitive question must not rest on a page that was already
old when the question was asked.

CRAG labels each question by how fast its answer changes (``static_or_dynamic``: static,
slow-changing, fast-changing, real-time), stamps it with ``query_time``, and gives each page its
``page_last_modified``. For a dynamic question, every page the draft's supported sentences are drawn
from is aged against the question: a page last modified more than its class's window before
``query_time`` is stale. A draft resting on a stale page is reported to BAUG with reason code
``STALE_SOURCES``: retrieve more (one extra round, with the question's month as query terms) and,
if the answer still rests on a stale page or no round is left, abstain. Static questions, undated
pages (unless ``UNDATED_IS_STALE``) and questions without a class or a time are let through.

Enable it by configuration alone::

    agentic-rag ask --dataset example --id @5 -o EXTENSIONS=examples.freshness:freshness
    agentic-rag ask ... -o 'EXTENSION_SETTINGS={"freshness": {"UNDATED_IS_STALE": true}}'
"""

from __future__ import annotations

import re
from datetime import datetime, timedelta, timezone
from email.utils import parsedate_to_datetime
from typing import Any, Literal

from pydantic import Field

from agentic_rag.extensions import Extension, ExtensionSettings, request
from agentic_rag.nodes import Node

CODE = "STALE_SOURCES"
_CRAG_TIME = re.compile(r"^(\d{1,2})/(\d{1,2})/(\d{4}),?\s+(\d{1,2}):(\d{2})(?::(\d{2}))?\s*([A-Za-z]+)?$")


class FreshnessSettings(ExtensionSettings):
    REAL_TIME_MAX_AGE_DAYS: float = Field(
        1.0, gt=0, description="A real-time question (answer changes within minutes) may rest on a page last "
        "modified at most this long before the question was asked (days).")
    FAST_CHANGING_MAX_AGE_DAYS: float = Field(
        7.0, gt=0, description="The same for a fast-changing question (answer changes about daily) (days).")
    SLOW_CHANGING_MAX_AGE_DAYS: float = Field(
        365.0, gt=0, description="The same for a slow-changing question (answer changes about yearly) (days).")
    UNDATED_IS_STALE: bool = Field(
        False, description="Count a page without a readable page_last_modified as stale (default: let it through).")
    ACTION: Literal["RETRIEVE_MORE", "ABSTAIN"] = Field(
        "RETRIEVE_MORE", description="What BAUG is asked for: one extra retrieval round first, or abstain at once.")

    def window(self, dynamism: str) -> float | None:
        """The class's window in days (None: a static or unlabelled question is never stale)."""
        return {"real-time": self.REAL_TIME_MAX_AGE_DAYS, "fast-changing": self.FAST_CHANGING_MAX_AGE_DAYS,
                "slow-changing": self.SLOW_CHANGING_MAX_AGE_DAYS}.get(dynamism)


def _pacific() -> timezone:
    try:
        from zoneinfo import ZoneInfo

        return ZoneInfo("America/Los_Angeles")  # CRAG's "PT", daylight saving included
    except Exception:  # no tz database: standard time is within an hour
        return timezone(timedelta(hours=-8))


def parse_time(text: str) -> datetime | None:
    """CRAG's ``query_time`` ("03/13/2024, 09:30:59 PT"), an HTTP date ("Tue, 23 Jan 2024 17:23:41 GMT")
    or an ISO date, as an aware datetime (UTC when no zone is given); None when unreadable."""
    text = (text or "").strip()
    if not text:
        return None
    m = _CRAG_TIME.match(text)
    if m:
        month, day, year, hour, minute, second, zone = m.groups()
        tz = _pacific() if (zone or "").upper() in ("PT", "PST", "PDT") else timezone.utc
        return datetime(int(year), int(month), int(day), int(hour), int(minute), int(second or 0), tzinfo=tz)
    for parse in (parsedate_to_datetime, datetime.fromisoformat):
        try:
            parsed = parse(text)
        except (TypeError, ValueError, IndexError):
            continue
        return parsed if parsed.tzinfo else parsed.replace(tzinfo=timezone.utc)
    return None


def stale_pages(passages: list[dict[str, Any]], asked: datetime, max_age_days: float,
                undated_is_stale: bool) -> list[dict[str, Any]]:
    """The pages among ``passages`` too old for the question, each with its age in days (None: undated)."""
    out: dict[str, dict[str, Any]] = {}
    for p in passages:
        modified = parse_time(p.get("page_last_modified", ""))
        age = None if modified is None else (asked - modified).total_seconds() / 86400.0
        if (age is None and undated_is_stale) or (age is not None and age > max_age_days):
            out.setdefault(p.get("page_name") or p.get("page_url") or p["chunk_id"],
                           {"page": p.get("page_name", ""), "modified": p.get("page_last_modified", "").strip(),
                            "age_days": None if age is None else round(age, 1)})
    return list(out.values())


def check_freshness(state: dict[str, Any], config) -> dict[str, Any]:
    """File a STALE_SOURCES request when the draft rests on a page too old for a dynamic question;
    withdraw it otherwise (the latest report stands, so a later, fresher draft is let through)."""
    opts: FreshnessSettings = freshness.options(config)
    record = state.get("record") or {}
    dynamism = str(record.get("static_or_dynamic", "")).strip().lower()
    window = opts.window(dynamism)
    asked = parse_time(state.get("query_time") or record.get("query_time", ""))
    if window is None or asked is None:
        return freshness.report(None)
    by_n = {p["n"]: p for p in (state.get("bundle") or {}).get("passages", [])}
    used = [by_n[s["n"]] for s in (state.get("signals") or {}).get("sentences", [])
            if s.get("supported") and s.get("n") in by_n]
    # the question's own record has the last word on its pages' dates: a per-question index is cached
    # by page address and text, so a chunk may carry the date another record gave the same page
    dated = {r.get("page_url"): r.get("page_last_modified", "") for r in record.get("search_results", [])}
    used = [{**p, "page_last_modified": dated.get(p.get("page_url"), p.get("page_last_modified", ""))} for p in used]
    stale = stale_pages(used, asked, window, opts.UNDATED_IS_STALE)
    if not stale:
        return freshness.report(None)
    first = stale[0]
    when = (f"last modified {first['modified']}, {first['age_days']:g} days before the question was asked"
            if first["age_days"] is not None else "which carries no modification date")
    others = f" (and {len(stale) - 1} more page{'s' if len(stale) > 2 else ''})" if len(stale) > 1 else ""
    days = f"{window:g} day{'' if window == 1 else 's'}"
    message = (f'The answer rests on "{first["page"]}"{others}, {when}; the answer to this {dynamism} question '
               f"may have changed since, so a source at most {days} older than the question is needed.")
    return freshness.report(request(
        opts.ACTION, CODE, message,
        missing=[f"a source updated within {days} before {asked:%Y-%m-%d}"],
        terms=[f"{asked:%B %Y}"],
    ))


freshness = Extension(
    name="freshness",
    node=check_freshness,
    after=Node.COLLECT_SIGNALS,
    before=Node.DECIDE,
    reads=("record", "query_time", "bundle", "signals"),
    writes=("extension_flags",),
    settings=FreshnessSettings,
    description="Flags a dynamic question's answer drawn from pages last modified too long before the question.",
)
