"""Page extraction: the main text of a fetched page, as a reader of the rendered page sees it.

Extraction keeps what a reader of the rendered page sees: what the page's CSS (its style sheets and
``style`` attributes) or the ``hidden`` attribute keeps off the screen or unreadable is dropped
(hidden text is a way to plant claims no reader would see; :mod:`agentic_rag.ingest.visibility` decides
what a browser shows). Pages are hostile input, so extraction is bounded (``MAX_PAGE_RAW_CHARS``) and a page the
tree parser cannot hold (libxml2 stops at 256 levels of nesting and drops what is deeper) is read by
a flat tokenizer instead. Sentences that address the model rather than the reader are counted on the
page (``untrusted``, copied to its chunks as ``page_untrusted``) so such a page backs no answer and a
trace shows where the injection attempt was. Pages are chunked by :mod:`agentic_rag.retrieval.chunks`.
"""

from __future__ import annotations

import hashlib
import re
from html.parser import HTMLParser

import trafilatura
from lxml import html as lxml_html
from trafilatura.utils import load_html

from agentic_rag.datasets.crag import clean_text
from agentic_rag.ingest.stylesheets import inline_styles
from agentic_rag.ingest.visibility import GONE, ROOT, Context, context
from agentic_rag.retrieval.chunks import Page
from agentic_rag.text import untrusted_sentences

_TAG = re.compile(r"<\s*(html|body|div|p|span|head|table|!doctype|a|br)\b", re.IGNORECASE)
_DROP = ("script", "style", "noscript", "nav", "header", "footer", "aside", "form", "svg", "iframe")
# a bump re-extracts every cached page (ingest's cache key includes it)
EXTRACTOR_VERSION = 3
# libxml2's nesting limit without XML_PARSE_HUGE: content deeper than this is dropped by the parser
_PARSER_MAX_DEPTH = 256


def looks_like_html(raw: str) -> bool:
    return bool(_TAG.search(raw[:5000]))


def html_to_text(raw: str) -> str:
    """Main text of an HTML page (boilerplate, scripts, navigation and hidden elements removed); plain
    text passes through.

    trafilatura keeps the article body and tables. When the parser lost part of the page (nesting
    deeper than libxml2 keeps), trafilatura fails, or it finds nothing (tiny or odd pages), the flat
    fallback keeps all visible text so no page is silently emptied.
    """
    if not raw or not raw.strip():
        return ""
    if not looks_like_html(raw):
        return normalise_space(raw)
    raw = inline_styles(raw)
    try:
        tree = load_html(raw)
    except (ValueError, TypeError, lxml_html.etree.ParserError):
        tree = None
    if tree is None or tree.xpath(f"boolean(//*[count(ancestor::*) >= {_PARSER_MAX_DEPTH - 1}])"):
        return normalise_space(flat_text(raw))
    drop_hidden(tree)
    try:
        text = trafilatura.extract(tree, include_comments=False, include_tables=True, favor_recall=True)
    except Exception:  # noqa: BLE001 - a crash in the extractor on a hostile page must not lose the page
        text = None
    if text and text.strip():
        return normalise_space(text)
    return normalise_space(flat_text(raw))


def drop_hidden(tree) -> None:
    """Remove from a parsed page what a browser would not show: hidden elements go whole, and an
    element whose own text is unreadable loses that text (its children decide for themselves)."""
    contexts: dict = {}
    removed, muted = [], []
    for el in tree.iter():
        if not isinstance(el.tag, str):
            continue
        parent = el.getparent()
        ctx = context(ROOT if parent is None else contexts[parent], el.tag.lower(), el.attrib)
        contexts[el] = ctx
        if ctx.removed:
            if parent is None or not contexts[parent].removed:
                removed.append(el)
        elif ctx.text_hidden:
            muted.append(el)
    for el in muted:
        el.text = None
        for child in el:
            child.tail = None
    for el in removed:
        if el.getparent() is not None:
            el.drop_tree()


_VOID = frozenset({"area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "param", "source",
                   "track", "wbr"})
_BLOCK = frozenset({"address", "article", "blockquote", "br", "dd", "div", "dl", "dt", "figcaption", "h1", "h2",
                    "h3", "h4", "h5", "h6", "hr", "li", "main", "ol", "p", "pre", "section", "table", "td", "th",
                    "tr", "ul"})
_FLAT_DROP = frozenset(_DROP) | {"head", "template"}


class _FlatText(HTMLParser):
    """Visible text in document order, with a stack instead of a tree: no depth limit, no recursion."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.parts: list[str] = []
        self.stack: list[tuple[str, Context]] = []  # (tag, what it shows)

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag in _BLOCK:
            self.parts.append("\n")
        if tag in _VOID:
            return
        parent = self.stack[-1][1] if self.stack else ROOT
        self.stack.append((tag, GONE if tag in _FLAT_DROP else context(parent, tag, dict(attrs))))

    def handle_startendtag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag in _BLOCK:
            self.parts.append("\n")

    def handle_endtag(self, tag: str) -> None:
        for i in range(len(self.stack) - 1, -1, -1):  # close up to the matching open tag, if any
            if self.stack[i][0] == tag:
                del self.stack[i:]
                break
        if tag in _BLOCK:
            self.parts.append("\n")

    def handle_data(self, data: str) -> None:
        if not self.stack or self.stack[-1][1].shows_text():
            self.parts.append(data)


def flat_text(raw: str) -> str:
    """All visible text of an HTML page, whatever its nesting or breakage."""
    parser = _FlatText()
    parser.feed(raw)
    parser.close()
    return "".join(parser.parts)


def extract_links(raw: str) -> list[str]:
    """Outgoing hyperlinks of an HTML page (for hop-1 exploration); empty for plain text."""
    if not raw or not looks_like_html(raw):
        return []
    try:
        tree = lxml_html.fromstring(raw)
    except (ValueError, lxml_html.etree.ParserError):
        return []
    seen: dict[str, None] = {}
    for href in tree.xpath("//a/@href"):
        href = str(href).strip()
        if href.startswith(("http://", "https://")):
            seen.setdefault(href, None)
    return list(seen)


def normalise_space(text: str) -> str:
    lines = [re.sub(r"[ \t\u00a0]+", " ", ln).strip() for ln in text.splitlines()]
    return re.sub(r"\n{3,}", "\n\n", "\n".join(lines)).strip()


def make_page(
    raw: str,
    page_name: str = "",
    page_url: str = "",
    page_last_modified: str = "",
    page_index: int = 0,
    source: str = "",
    max_chars: int = 200_000,
    max_raw_chars: int = 2_000_000,
) -> Page:
    if len(raw) > max_raw_chars:  # scripts and styles never give text: they go before the page is cut
        raw = strip_scripts(raw)
    raw_cut = max(0, len(raw) - max_raw_chars)
    raw = clean_text(raw[:max_raw_chars])
    text = html_to_text(raw)
    cut = max(0, len(text) - max_chars)
    text = text[:max_chars]
    digest = hashlib.sha1(f"{page_url}\n{text}".encode()).hexdigest()[:16]
    return Page(
        page_id=digest,
        page_name=page_name or page_url or f"page {page_index}",
        page_url=page_url,
        page_last_modified=page_last_modified or "",
        text=text,
        page_index=page_index,
        source=source,
        truncated_chars=cut,
        links=extract_links(raw),
        raw_truncated_chars=raw_cut,
        untrusted=len(untrusted_sentences(text)),
    )


_SCRIPT_OPEN = re.compile(r"<(script|style)\b", re.IGNORECASE)
_SCRIPT_CLOSE = {tag: re.compile(rf"</{tag}\s*>", re.IGNORECASE) for tag in ("script", "style")}


def strip_scripts(raw: str) -> str:
    """``raw`` without its ``<script>`` and ``<style>`` elements, in one pass (an unclosed one runs to the
    end, as in a browser), so no arrangement of tags makes it slower than linear."""
    out, pos = [], 0
    while m := _SCRIPT_OPEN.search(raw, pos):
        out.append(raw[pos : m.start()])
        end = _SCRIPT_CLOSE[m.group(1).lower()].search(raw, m.end())
        if end is None:
            return "".join(out)
        pos = end.end()
    out.append(raw[pos:])
    return "".join(out)
