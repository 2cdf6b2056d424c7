"""Credentials out of every URL a run shows or stores, and known keys out of every text.

A server's key often travels inside its URL (``https://user:KEY@host/v1``, ``...?api-key=KEY``), and
``OPENAI_BASE_URL`` is written to config.json, telemetry, error messages and the ``settings`` table.
Everything that shows or stores a URL, or a text that may hold one (an HTTP client's error), passes it
through here; the request itself still goes to the URL as given. A key quoted back in an error rarely
comes as it was typed: an HTTP library quotes a header as Python's repr, a server as JSON or inside a
URL, so ``redact_text`` masks every escaped form of a key (``secret_forms``), not only the typed one.
"""

from __future__ import annotations

import base64
import html
import json
import re
from urllib.parse import parse_qsl, quote, quote_plus, unquote, urlencode, urlsplit, urlunsplit

MASK = "***"
# query parameters that never carry a credential (Azure's api-version); every other value is masked
_PUBLIC_PARAMS = frozenset({"api-version", "api_version", "version"})
# a URL inside free text: a scheme, then anything up to whitespace or a closing quote or bracket; the scheme
# starts where a word does, so a long run of letters is scanned once, not once per letter (linear time)
_URL_IN_TEXT = re.compile(r"(?<![A-Za-z0-9+.-])[A-Za-z][A-Za-z0-9+.-]*://[^\s'\"<>\])}]+")
MIN_SECRET_CHARS = 4  # a shorter "secret" would mask common words
# each way a text may have escaped what it quotes: Python's repr of a str and of bytes (an HTTP library's
# error quoting a header), JSON (with or without escaped slashes and non-ASCII), a URL's query, HTML
ESCAPES = (
    lambda s: repr(s)[1:-1],
    lambda s: repr(s.encode("utf-8", "backslashreplace"))[2:-1],
    lambda s: s.encode("unicode_escape").decode("ascii"),
    lambda s: json.dumps(s)[1:-1],
    lambda s: json.dumps(s, ensure_ascii=False)[1:-1],
    lambda s: json.dumps(s)[1:-1].replace("/", "\\/"),
    lambda s: quote(s, safe=""),
    lambda s: quote(s),
    lambda s: quote_plus(s),
    lambda s: html.escape(s),
)


def redact_url(url: str) -> str:
    """``url`` with its user and password, its query values (but the API version) and its fragment
    masked: ``https://u:KEY@h/v1?api-key=KEY`` -> ``https://***@h/v1?api-key=***``."""
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError:  # not a URL a client could use; whatever it holds is not shown
        return MASK if url else url
    netloc = parts.netloc
    if "@" in netloc:
        host = parts.hostname or ""
        host = f"[{host}]" if ":" in host else host
        netloc = f"{MASK}@{host}" + (f":{port}" if port else "")
    query = parts.query
    if query:
        pairs = parse_qsl(query, keep_blank_values=True)
        query = urlencode([(k, v if k.lower() in _PUBLIC_PARAMS else MASK) for k, v in pairs], safe="*")
    fragment = MASK if parts.fragment else ""
    return urlunsplit(parts._replace(netloc=netloc, query=query, fragment=fragment))


def url_secrets(url: str | None) -> tuple[str, ...]:
    """The credentials ``url`` carries, as they may come back inside a server's error: its user and
    password, their HTTP Basic form (base64 of ``user:password``), and its masked query values."""
    try:
        parts = urlsplit(url or "")
    except ValueError:
        return ()
    found = [v for k, v in parse_qsl(parts.query) if k.lower() not in _PUBLIC_PARAMS]
    if parts.username is not None:
        user, password = unquote(parts.username), unquote(parts.password or "")
        found += [user, password, base64.b64encode(f"{user}:{password}".encode()).decode()]
    return tuple(f for f in found if f)


def secret_forms(secret: str) -> set[str]:
    """``secret`` as typed and in every escaped form ``ESCAPES`` writes it, one escape deep and two (a
    JSON text quoting a repr): what a text that quoted the secret may hold in its place."""
    once = {secret} | {escape(secret) for escape in ESCAPES}
    return once | {escape(form) for form in once for escape in ESCAPES}


def redact_text(text: str, secrets: tuple[str, ...] = ()) -> str:
    """``text`` with every URL in it redacted (``redact_url``) and each of ``secrets`` (a key known to
    the caller, at least ``MIN_SECRET_CHARS`` long) masked wherever it appears, in any of its escaped
    forms: the one redaction every shown or stored text goes through."""
    text = _URL_IN_TEXT.sub(lambda m: redact_url(m.group(0)), str(text))
    forms = {form for secret in secrets if secret and len(secret) >= MIN_SECRET_CHARS for form in secret_forms(secret)}
    for form in sorted(forms, key=len, reverse=True):  # a longer form may hold a shorter one: it goes first
        text = text.replace(form, MASK)
    return text
