"""Pages and chunks: the unit a citation points back to.

A chunk keeps its page's name, URL and modification date, the page's index in its source, and the
character offsets of the chunk inside the page's extracted text, so ``page.text[start:end] ==
chunk.text`` always holds and any quoted sentence can be checked against the exact source text.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

from langchain_text_splitters import RecursiveCharacterTextSplitter


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
    raw_truncated_chars: int = 0  # raw page characters cut before extraction (MAX_PAGE_RAW_CHARS)
    untrusted: int = 0  # sentences that address the model (injection.UNTRUSTED_PATTERNS)

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
    page_untrusted: int = 0  # the page's sentences that address the model (injection.UNTRUSTED_PATTERNS)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


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
                page_untrusted=page.untrusted,
            )
        )
    return chunks
