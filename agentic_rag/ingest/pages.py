"""Pages and chunks: the unit a citation points back to.

A chunk keeps its page's name, URL and modification date, the page's index in its source, and the
character offsets of the chunk inside the page's extracted text, so ``page.text[start:end] ==
chunk.text`` always holds and any quoted sentence can be checked against the exact source text.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import asdict, dataclass, field
from typing import Any

import trafilatura
from langchain_text_splitters import RecursiveCharacterTextSplitter
from lxml import html as lxml_html

_TAG = re.compile(r"<\s*(html|body|div|p|span|head|table|!doctype|a|br)\b", re.IGNORECASE)
_DROP = ("script", "style", "noscript", "nav", "header", "footer", "aside", "form", "svg", "iframe")


@dataclass
class Page:
    page_id: str
    page_name: str
    page_url: str
    page_last_modified: str
    text: str
    page_index: int = 0
    source: str = ""
    truncated_chars: int = 0
    links: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass
class Chunk:
    chunk_id: str
    text: str
    page_id: str
    page_index: int
    page_name: str
    page_url: str
    page_last_modified: str
    start: int
    end: int

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def looks_like_html(raw: str) -> bool:
    return bool(_TAG.search(raw[:5000]))


def html_to_text(raw: str) -> str:
    """Main text of an HTML page (boilerplate, scripts and navigation removed); plain text passes through.

    trafilatura keeps the article body and tables; when it finds nothing (tiny or odd pages) the
    fallback strips non-content tags with lxml so no page is silently emptied.
    """
    if not raw or not raw.strip():
        return ""
    if not looks_like_html(raw):
        return normalise_space(raw)
    text = trafilatura.extract(raw, include_comments=False, include_tables=True, favor_recall=True)
    if text and text.strip():
        return normalise_space(text)
    try:
        tree = lxml_html.fromstring(raw)
    except (ValueError, lxml_html.etree.ParserError):
        return ""
    for bad in tree.xpath("|".join(f"//{t}" for t in _DROP)):
        bad.drop_tree()
    return normalise_space(tree.text_content())


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
) -> Page:
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
    )


def chunk_page(page: Page, chunk_size: int, overlap: int, min_chars: int) -> list[Chunk]:
    splitter = RecursiveCharacterTextSplitter(
        chunk_size=chunk_size,
        chunk_overlap=min(overlap, chunk_size // 2),
        separators=["\n\n", "\n", ". ", "; ", ", ", " ", ""],
        keep_separator="end",
        add_start_index=True,
    )
    chunks = []
    for doc in splitter.create_documents([page.text]):
        start = int(doc.metadata["start_index"])
        text = doc.page_content
        if start < 0 or page.text[start : start + len(text)] != text:
            start = page.text.find(text)
            if start < 0:
                continue
        if len(text.strip()) < min_chars:
            continue
        chunks.append(
            Chunk(
                chunk_id=f"{page.page_id}:{len(chunks)}",
                text=text,
                page_id=page.page_id,
                page_index=page.page_index,
                page_name=page.page_name,
                page_url=page.page_url,
                page_last_modified=page.page_last_modified,
                start=start,
                end=start + len(text),
            )
        )
    return chunks
