"""Page extraction: the main text of a fetched page, as a reader of the rendered page sees it.

Extraction keeps what a reader of the rendered page sees: what the page's CSS (its style sheets and
``style`` attributes) or its markup keeps off the screen or unreadable is dropped (hidden text is a way to
plant claims no reader would see; :mod:`agentic_rag.ingest.elements` and
:mod:`agentic_rag.ingest.visibility` decide what a browser draws), and what a browser draws is kept even
where the main-text extractor would drop it by its tag (a button, a figure caption, an input's value, SVG
text, a frame's ``srcdoc`` document, CSS ``::before`` / ``::after`` content). Pages are hostile input, so
extraction is bounded (``MAX_PAGE_RAW_CHARS``, ``MAX_ATTRIBUTES``) and a page the tree parser cannot hold
(libxml2 stops at 256 levels of nesting and drops what is deeper; the extractor's time grows with the square
of a page's elements) is read by a flat tokenizer instead, which reads the same table of what is drawn.
Sentences that address the model rather than the reader are counted on the page (``untrusted``, copied to
its chunks as ``page_untrusted``) so such a page backs no answer and a trace shows where the injection
attempt was; chat-format role markers written as tags are kept as text first, so they count too. Pages are
chunked by :mod:`agentic_rag.retrieval.chunks`.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from html.parser import HTMLParser

import trafilatura
from lxml import html as lxml_html
from trafilatura.settings import MANUALLY_CLEANED
from trafilatura.utils import load_html

from agentic_rag.datasets.crag import clean_text
from agentic_rag.ingest.elements import (
    BLOCK,
    BOILERPLATE,
    FALLBACK,
    HTML,
    NOT_DRAWN,
    SECTIONING,
    SVG,
    VOID,
    boilerplate,
    closes_itself,
    input_text,
    shown_options,
)
from agentic_rag.ingest.stylesheets import generated, inline_styles
from agentic_rag.ingest.visibility import GONE, ROOT, Context, context
from agentic_rag.injection import role_tags_as_text
from agentic_rag.retrieval.chunks import Page
from agentic_rag.text import untrusted_sentences

_TAG = re.compile(r"<\s*(html|body|div|p|span|head|table|!doctype|a|br)\b", re.IGNORECASE)
# a bump re-extracts every cached page (ingest's cache key includes it)
EXTRACTOR_VERSION = 4
# libxml2's nesting limit without XML_PARSE_HUGE: content deeper than this is dropped by the parser
_PARSER_MAX_DEPTH = 256
# Attributes of one element: libxml2 and trafilatura take time in the square of an element's attributes
# (250,000 on one element: 283 s). No page needs more; an element with more is hidden (its content
# dropped), since a dropped attribute could be one that hides it.
MAX_ATTRIBUTES = 256
# Elements of a page the tree path reads: trafilatura's time grows with their square (10,000 <p>: 0.9 s,
# 20,000: 2.3 s, 40,000: 8.1 s; the largest CRAG example page has 16,000). A page with more is read by the
# flat tokenizer (linear: 180,000 in 2.2 s).
MAX_TREE_ELEMENTS = 25_000
# Frames inside frames read (srcdoc documents nest); deeper ones draw nothing here
MAX_FRAME_DEPTH = 3


def looks_like_html(raw: str) -> bool:
    return bool(_TAG.search(raw[:5000]))


def html_to_text(raw: str) -> str:
    """Main text of an HTML page (boilerplate, scripts, navigation and hidden elements removed); plain
    text passes through.

    trafilatura keeps the article body and tables. When the parser cannot hold the page, trafilatura
    fails, or it finds nothing (tiny or odd pages), the flat fallback keeps all drawn text so no page is
    silently emptied.
    """
    if not raw or not raw.strip():
        return ""
    if not looks_like_html(raw):
        return normalise_space(raw)
    raw, elements = prepared(raw)
    tree = _tree(raw) if elements <= MAX_TREE_ELEMENTS else None
    if tree is None:
        return normalise_space(flat_text(raw))
    try:
        draw(tree)
        text = trafilatura.extract(tree, include_comments=False, include_tables=True, favor_recall=True)
    except Exception:  # noqa: BLE001 - a crash on the tree path on a hostile page must not lose the page
        text = None
    if text and text.strip():
        return normalise_space(text)
    return normalise_space(flat_text(raw))


def prepared(raw: str) -> tuple[str, int]:
    """``raw`` as both paths read it, and how many elements it opens: role markers written as tags kept as
    text, markup the parsers would misread fixed (``sanitised``), the page's style sheets applied."""
    raw, elements = sanitised(role_tags_as_text(raw))
    return inline_styles(raw), elements


def _tree(raw: str):
    """The parsed page, or None when the parser cannot hold it (it drops what is nested too deeply)."""
    try:
        tree = load_html(raw)
    except (ValueError, TypeError, lxml_html.etree.ParserError):
        return None
    if tree is None or tree.xpath(f"boolean(//*[count(ancestor::*) >= {_PARSER_MAX_DEPTH - 1}])"):
        return None
    return tree


# A start tag, quoted attribute values (which may hold ">") included; possessive, so each character is read once
_START_TAG = re.compile(r"""<([a-zA-Z][^\s/>]*+)((?:[^>"'=]++|=\s*+(?:"[^"]*+"|'[^']*+')|[="'])*+)(>?)""")
_ATTRIBUTE = re.compile(r"""[^\s/>][^\s/>=]*+(?:\s*+=\s*+(?:"[^"]*+"|'[^']*+'|[^\s>]*+))?""")
# attributes by which an element can hide what a browser nests in it
_MAY_HIDE = re.compile(r"(?:^|\s)(?:style|hidden|class|id)(?=[\s=/]|$)", re.IGNORECASE)


def sanitised(raw: str) -> tuple[str, int]:
    """``raw`` with what the parsers would choke on or read unlike a browser rewritten, in one linear pass,
    and its number of start tags: an element with more than MAX_ATTRIBUTES attributes keeps that many and is
    hidden, and the slash of a self-closing HTML element that can hide (``<p hidden/>text``) is dropped,
    since a browser opens the element and hides what follows in it (libxml2 would close it, and show the
    text). Other self-closed elements (``<esi:include src=x/>``) stay closed: what follows them is drawn
    either way, and nesting it would change what the extractor keeps of a page."""
    parts, pos, elements = [], 0, 0
    for m in _START_TAG.finditer(raw):
        elements += 1
        name, inner, end = m.groups()
        if len(inner) > 2 * MAX_ATTRIBUTES and len(found := _ATTRIBUTE.findall(inner)) > MAX_ATTRIBUTES:
            parts += [raw[pos:m.start()], f"<{name} {' '.join(found[:MAX_ATTRIBUTES])} hidden{end}"]
        elif end and inner.endswith("/") and not closes_itself(name.lower()) and _MAY_HIDE.search(inner):
            parts += [raw[pos:m.start()], f"<{name}{inner[:-1]}>"]
        else:
            continue
        pos = m.end()
    return ("".join(parts) + raw[pos:] if parts else raw), elements


# --- the tree path -----------------------------------------------------------------------------------
# What trafilatura drops by its tag but a browser draws (and a figure's caption, which it loses): rewritten
# as plain text blocks it keeps. Drop-downs, inputs and drawings are rewritten as the text they draw (before
# their options, which are then out of the tree: an option outside a drop-down is drawn as text).
_REWRITTEN = frozenset(MANUALLY_CLEANED) - NOT_DRAWN - FALLBACK - BOILERPLATE - {"svg"} | {"figcaption"}
# Containers whose loose inline text trafilatura drops: text rewritten into one becomes a paragraph
_CONTAINERS = (SECTIONING | BOILERPLATE | BLOCK | {"html", "body"}) - {
    "p", "h1", "h2", "h3", "h4", "h5", "h6", "li", "td", "th", "dt", "dd", "pre", "summary", "figcaption", "address"}


def draw(tree) -> None:
    """Rewrite a parsed page as a browser draws it, in forms the extractor keeps: elements not drawn go whole,
    an element whose own text is unreadable loses it (its children decide for themselves), and what is drawn
    from elsewhere than an element's text, or by an element the extractor drops by its tag, becomes text."""
    contexts: dict = {}
    removed, muted, kept = [], [], []
    for el in tree.iter():
        if not isinstance(el.tag, str):
            continue
        parent = el.getparent()
        tag = el.tag.lower()
        # a fragment's parser wraps it in elements the walk from its first element never meets: drawn as a page's root
        outer = contexts.get(parent, ROOT)
        ctx = context(outer, tag, el.attrib)
        contexts[el] = ctx
        if ctx.removed:
            if not outer.removed:
                removed.append(el)
            continue
        kept.append((el, tag, ctx))
        if not ctx.shows_text():
            muted.append(el)
    for el in muted:
        el.text = None
        for child in el:
            child.tail = None
    for el in removed:
        if el.getparent() is not None:
            el.drop_tree()
    for el, tag, ctx in kept:  # in document order: an element rewritten as text takes its subtree with it
        parent = el.getparent()
        if el.attrib:
            _attributes_read(el, ctx)
        _as_drawn(el, tag, ctx, contexts.get(parent, ROOT))


def _attributes_read(el, ctx: Context) -> None:
    """Draw the element's CSS generated content, and drop the attributes already read: trafilatura takes any
    ``style`` holding "hidden" (``overflow: hidden``), or ``aria-hidden="true"``, for hidden, and drops it."""
    attrs = el.attrib
    if "style" in attrs:
        before, after = generated(ctx, attrs, "before"), generated(ctx, attrs, "after")
        del attrs["style"]
        if before:
            el.text = before + (el.text or "")
        if after and len(el):
            el[-1].tail = (el[-1].tail or "") + after
        elif after:
            el.text = (el.text or "") + after
    if "aria-hidden" in attrs:
        del attrs["aria-hidden"]


def _as_drawn(el, tag: str, ctx: Context, parent: Context) -> None:
    text = _drawn_instead(el, tag, ctx, parent)
    if text is not None:
        block = lxml_html.Element(_text_block(el))
        block.text, block.tail = text, el.tail
        el.getparent().replace(el, block)
    elif (tag in _REWRITTEN or (tag == "header" and any(a.tag in SECTIONING for a in el.iterancestors()))) and any(
            t.strip() for t in el.itertext()):  # one that draws no text (a figure of an image) is left as it is
        el.tag = "div" if any(isinstance(c.tag, str) and c.tag in BLOCK for c in el) else _text_block(el)


def _drawn_instead(el, tag: str, ctx: Context, parent: Context) -> str | None:
    """The text drawn in place of the element's content (None: its content is drawn as it stands)."""
    if tag == "input":
        return input_text(el.attrib) if ctx.shows_text() else ""
    if tag == "select":
        options = [(o.attrib, "".join(o.itertext())) for o in el.iter("option")]
        return "\n".join(shown_options(el.attrib, options)) if ctx.shows_text() else ""
    if tag == "iframe" and "srcdoc" in el.attrib:
        return frame_text(el.get("srcdoc"), ctx, 0)
    if ctx.layout == SVG and parent.layout == HTML:  # a drawing: the text of its text elements
        return " ".join("".join(t.itertext()) for t in el.iter("text", "foreignobject"))
    return None


def _text_block(el) -> str:
    parent = el.getparent()
    return "p" if parent is None or parent.tag in _CONTAINERS else "span"


def frame_text(srcdoc: str | None, ctx: Context, depth: int) -> str:
    """The text an ``iframe``'s ``srcdoc`` document draws: untrusted HTML of its own, read by the same rules
    (by the flat path: linear however many frames a page holds), or "" when the frame is hidden or nested
    deeper than MAX_FRAME_DEPTH."""
    if not srcdoc or not srcdoc.strip() or depth >= MAX_FRAME_DEPTH or not ctx.draws_frame():
        return ""
    return normalise_space(flat_text(prepared(srcdoc)[0], depth + 1))


# --- the flat path -----------------------------------------------------------------------------------
_HEAD = frozenset({"title", "meta", "link", "style", "script", "noscript", "base", "template"})
# Start tags that end the open element named, as a browser ends it (only the innermost element is looked at, so
# a page of any depth stays linear); any start tag but those of _HEAD ends a <head>
_ENDS = {"p": (BLOCK | BOILERPLATE) - {"br", "td", "th", "tr", "li", "dd", "dt", "summary"},
         "li": frozenset({"li"}), "dt": frozenset({"dt", "dd"}), "dd": frozenset({"dt", "dd"}),
         "option": frozenset({"option", "optgroup"}), "optgroup": frozenset({"optgroup"})}


@dataclass(slots=True)
class _Open:
    tag: str
    ctx: Context
    after: str = ""  # its ::after text, drawn at its end
    in_section: bool = False


class _FlatText(HTMLParser):
    """Drawn text in document order, with a stack instead of a tree: no depth limit, no recursion."""

    def __init__(self, frame_depth: int) -> None:
        super().__init__(convert_charrefs=True)
        self.parts: list[str] = []
        self.stack: list[_Open] = []
        self.open: dict[str, int] = {}  # open elements by tag: an end tag whose element is not open costs nothing
        self.frame_depth = frame_depth
        self.select: tuple[dict, list[tuple[dict, list[str]]]] | None = None  # an open select and its options
        self.options_open = 0  # option elements open (their text goes to the select's last option)

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        values = dict(reversed(attrs))  # the first of a repeated attribute counts, as in a browser
        innermost = self.stack[-1].tag if self.stack else ""
        implied_end = tag not in _HEAD if innermost == "head" else tag in _ENDS.get(innermost, ())
        if implied_end:
            self.close_from(len(self.stack) - 1)
        top = self.stack[-1] if self.stack else None
        parent = top.ctx if top else ROOT
        ctx = GONE if boilerplate(tag, bool(top and top.in_section)) else context(parent, tag, values)
        if tag in BLOCK:
            self.parts.append("\n")
        if tag == "input" and ctx.shows_text():
            self._emit(input_text(values))
        elif tag == "iframe":
            self._emit(frame_text(values.get("srcdoc"), ctx, self.frame_depth))
        elif tag == "text" and ctx.layout != HTML:
            self._emit(" ")
        if tag in VOID:
            return
        if tag == "select" and ctx.shows_text() and self.select is None:
            self.select = (values, [])
        elif tag == "option" and self.select is not None and not ctx.removed:
            self.select[1].append((values, []))
        self._emit(generated(ctx, values, "before"))
        section = bool(top and top.in_section) or tag in SECTIONING
        self.options_open += tag == "option"
        self.open[tag] = self.open.get(tag, 0) + 1
        self.stack.append(_Open(tag, ctx, generated(ctx, values, "after"), section))

    def handle_startendtag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.handle_starttag(tag, attrs)
        if tag not in VOID:  # an SVG element (the HTML ones had their slash dropped by ``sanitised``)
            self.handle_endtag(tag)

    def handle_endtag(self, tag: str) -> None:
        if self.open.get(tag):  # close up to the innermost open element of that name (a stray end tag: none)
            self.close_from(next(i for i in range(len(self.stack) - 1, -1, -1) if self.stack[i].tag == tag))
        if tag in BLOCK:
            self.parts.append("\n")

    def close_from(self, i: int) -> None:
        for entry in reversed(self.stack[i:]):
            self.open[entry.tag] -= 1
            self.options_open -= entry.tag == "option"
            if entry.tag == "select" and self.select is not None:
                values, options = self.select
                self.select = None
                self._emit("\n".join(shown_options(values, [(a, "".join(t)) for a, t in options])))
            self._emit(entry.after)
        del self.stack[i:]

    def handle_data(self, data: str) -> None:
        if not self.stack or self.stack[-1].ctx.shows_text():
            self._emit(data)

    def _emit(self, text: str) -> None:
        if not text:
            return
        if self.select is None:
            self.parts.append(text)
        elif self.select[1] and self.options_open:  # an option's text (text elsewhere in a select is not drawn)
            self.select[1][-1][1].append(text)


def flat_text(raw: str, frame_depth: int = 0) -> str:
    """All drawn text of a page as ``prepared`` left it, whatever its nesting or breakage."""
    parser = _FlatText(frame_depth)
    parser.feed(raw)
    if parser.rawdata.startswith("<"):  # the page ends inside a tag or comment: a browser drops it
        parser.rawdata = ""
    parser.close()
    parser.close_from(0)
    return "".join(parser.parts)


def extract_links(raw: str) -> list[str]:
    """Outgoing hyperlinks of an HTML page (for hop-1 exploration); empty for plain text."""
    if not raw or not looks_like_html(raw):
        return []
    try:
        tree = lxml_html.fromstring(sanitised(raw)[0])  # the parser's time is quadratic in an element's attributes
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
