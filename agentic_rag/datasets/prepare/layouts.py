"""HotpotQA's evidence laid out in other ways: the same question and the same paragraphs, on other pages.

A decision that answers a draft only when its evidence is right should do so whatever shape that evidence
comes in. ``prepare_hotpotqa(layouts=...)`` builds each question once per layout:

* ``distractors``: every paragraph as a plain-text page (the converter's own output).
* ``support_only``: only the supporting sentences, joined into one passage on one page.
* ``html_pages``: every paragraph as an HTML page of a made-up encyclopedia site (a header with a search
  form, a menu, a footer of links, a cookie notice), so extraction must find the text.
* ``snippets``: every paragraph cut to a search snippet of about ``SNIPPET_WORDS`` words: for a supporting
  paragraph, the window around its supporting sentences; for a distractor, its first words.
* ``long_page``: one long page of every paragraph under its title, the distractors first and the
  supporting paragraphs after most of them.

An unanswerable twin loses its removed paragraph in every layout (in ``support_only``, that paragraph's
sentences). Support is marked per sentence (``supporting_facts``' sent ids); where a file marks it per
paragraph only (every paragraph one string, every sent id 0: the IRCoT-format copy), or a sent id names no
sentence of its paragraph, the whole paragraph is the support.
"""

from __future__ import annotations

import html
from typing import Any
from urllib.parse import quote

from agentic_rag.datasets.crag import SearchResult

DEFAULT_LAYOUT = "distractors"
LAYOUTS = (DEFAULT_LAYOUT, "support_only", "html_pages", "snippets", "long_page")
ONE_PAGE = ("support_only", "long_page")  # layouts whose record holds one page
SNIPPET_WORDS = 40
Paragraph = tuple[str, list[str]]  # (title, sentences)


def with_layout(record_id: str, layout: str) -> str:
    """A record's id in ``layout``: the plain id in the default layout, else suffixed ``@layout``."""
    return record_id if layout == DEFAULT_LAYOUT else f"{record_id}@{layout}"


def split_layout(record_id: str) -> tuple[str, str]:
    """(the id in the default layout, the layout): what ``with_layout`` joined."""
    base, mark, layout = record_id.partition("@")
    return base, layout if mark else DEFAULT_LAYOUT


def check_layouts(layouts: tuple[str, ...]) -> None:
    unknown = [name for name in layouts if name not in LAYOUTS]
    if unknown or not layouts or len(set(layouts)) != len(layouts):
        raise ValueError(f"layout must be among {', '.join(LAYOUTS)}, not {','.join(layouts) or 'nothing'}")


def sentence_ids(raw: dict[str, Any]) -> dict[str, list[int]]:
    """The sent ids of each supporting paragraph, as marked (ids that are not whole numbers left out)."""
    facts = raw.get("supporting_facts")
    if isinstance(facts, dict):
        pairs = list(zip(facts.get("title") or [], facts.get("sent_id") or []))
    else:
        pairs = [tuple(f[:2]) for f in facts or [] if isinstance(f, (list, tuple)) and len(f) >= 2]
    out: dict[str, list[int]] = {}
    for title, sid in pairs:
        if isinstance(title, str) and isinstance(sid, int) and not isinstance(sid, bool):
            out.setdefault(title.strip(), []).append(sid)
    return out


def per_paragraph_support(paragraphs: list[Paragraph], support: list[str], ids: dict[str, list[int]]) -> bool:
    """Whether the support is marked per paragraph only: each supporting paragraph one string, every sent id 0."""
    sentences = dict(paragraphs)
    return all(len(sentences[t]) <= 1 for t in support) and all(i == 0 for t in support for i in ids.get(t, [0]))


def support_spans(paragraphs: list[Paragraph], support: list[str], ids: dict[str, list[int]]) -> dict[str, list[int]]:
    """Per supporting paragraph, the indices of its supporting sentences: all of them where the support is
    marked per paragraph only, or where no sent id names one of its sentences."""
    sentences = dict(paragraphs)
    whole = per_paragraph_support(paragraphs, support, ids)
    out = {}
    for title in support:
        count = len(sentences[title])
        marked = sorted({i for i in ids.get(title, []) if 0 <= i < count})
        out[title] = list(range(count)) if whole or not marked else marked
    return out


def paragraph_text(sentences: list[str]) -> str:
    return "".join(sentences).strip()


def page_url(layout: str, title: str) -> str:
    """A paragraph's page: ``distractors`` keeps the converter's own urls."""
    name = quote(title, safe="")
    return f"hotpotqa://{name}" if layout == DEFAULT_LAYOUT else f"hotpotqa://{layout}/{name}"


def one_page_url(layout: str, qid: str, removed: str | None) -> str:
    """The one page of a record in ``support_only`` or ``long_page``: a twin's has its own url (other text)."""
    url = f"hotpotqa://{layout}/{quote(qid, safe='')}"
    return url if removed is None else f"{url}/without/{quote(removed, safe='')}"


def result(name: str, url: str, text: str, snippet: str | None = None) -> SearchResult:
    return SearchResult(page_name=name, page_url=url, page_snippet=(text if snippet is None else snippet)[:200],
                        page_result=text)


def layout_pages(layout: str, qid: str, paragraphs: list[Paragraph], support: list[str], spans: dict[str, list[int]],
                 removed: str | None) -> tuple[list[SearchResult], list[str]]:
    """A record's pages in ``layout`` and the urls of those that hold its support (none for a twin)."""
    kept = [(t, s) for t, s in paragraphs if t != removed]
    if layout in ONE_PAGE:
        url = one_page_url(layout, qid, removed)
        if layout == "support_only":
            titles = [t for t in support if t != removed]
            by_title = dict(paragraphs)
            text = " ".join(by_title[t][i].strip() for t in titles for i in spans[t] if by_title[t][i].strip())
        else:
            titles, text = long_page(kept, support)
        pages, gold = [result("; ".join(titles), url, text)], [url]
    else:
        if layout == "html_pages":
            pages = [result(t, page_url(layout, t), html_page(t, paragraph_text(s)), paragraph_text(s)) for t, s in kept]
        elif layout == "snippets":
            pages = [result(t, page_url(layout, t), snippet(s, spans.get(t))) for t, s in kept]
        else:
            pages = [result(t, page_url(layout, t), paragraph_text(s)) for t, s in kept]
        gold = [page_url(layout, t) for t in support]
    return pages, [] if removed is not None else gold


def snippet(sentences: list[str], marked: list[int] | None, words: int = SNIPPET_WORDS) -> str:
    """About ``words`` words of a paragraph: the window around its supporting sentences ``marked`` (its
    first words when they are longer, or when it supports nothing), "..." where it was cut."""
    tokens: list[str] = []
    spans = []
    for sentence in sentences:
        spans.append((len(tokens), len(tokens) + len(sentence.split())))
        tokens += sentence.split()
    first, last = (spans[marked[0]][0], spans[marked[-1]][1]) if marked else (0, 0)
    start = first if last - first >= words else max(0, min(first - (words - (last - first)) // 2, len(tokens) - words))
    end = min(len(tokens), start + words)
    return ("... " if start else "") + " ".join(tokens[start:end]) + (" ..." if end < len(tokens) else "")


def long_page(kept: list[Paragraph], support: list[str]) -> tuple[list[str], str]:
    """(titles in page order, text): every paragraph under its title as a heading, the supporting ones after
    three quarters of the distractors (rounded up), in their own order."""
    distractors = [p for p in kept if p[0] not in support]
    supporting = [p for t in support for p in kept if p[0] == t]
    before = len(distractors) - len(distractors) // 4
    ordered = distractors[:before] + supporting + distractors[before:]
    return [t for t, _ in ordered], "\n\n".join(f"## {t}\n\n{paragraph_text(s)}" for t, s in ordered)


SITE = "Open Encyclopedia"
HOME = "https://encyclopedia.example"
MENU = (("Main page", ""), ("Contents", "/contents"), ("Current events", "/news"), ("Random article", "/random"),
        ("About us", "/about"), ("Donate", "/donate"))
FOOTER = (("Privacy policy", "/privacy"), ("Terms of use", "/terms"), ("Accessibility", "/accessibility"),
          ("Contact us", "/contact"), ("Cookie settings", "/cookies"))
COOKIE_NOTICE = ("We use cookies to remember your settings and to understand how our pages are read. "
                 "You can accept them all or choose which ones to allow.")


def _links(items: tuple[tuple[str, str], ...]) -> str:
    return "\n".join(f'<li><a href="{HOME}{path}/">{html.escape(label)}</a></li>' for label, path in items)


def html_page(title: str, text: str) -> str:
    """A paragraph as an article of a made-up encyclopedia site, with its header, menu, footer and cookie notice."""
    t, body = html.escape(title), html.escape(text, quote=False)
    return f"""<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{t} - {SITE}</title>
<link rel="stylesheet" href="{HOME}/static/site.css">
</head>
<body>
<header class="site-header">
<a class="logo" href="{HOME}/">{SITE}</a>
<form class="search" role="search" action="{HOME}/search"><input type="search" name="q" placeholder="Search {SITE}">
<button type="submit">Search</button></form>
<a class="account" href="{HOME}/login">Log in</a>
</header>
<nav class="main-menu" aria-label="Main menu">
<ul>
{_links(MENU)}
</ul>
</nav>
<main id="content">
<article>
<h1>{t}</h1>
<p>{body}</p>
</article>
</main>
<footer class="site-footer">
<ul>
{_links(FOOTER)}
</ul>
<p>Text is available under the Creative Commons Attribution-ShareAlike License; additional terms may apply.</p>
</footer>
<div id="cookie-notice" class="cookie-banner" role="dialog" aria-live="polite">
<p>{COOKIE_NOTICE}</p>
<button type="button">Accept all</button> <button type="button">Choose cookies</button>
</div>
</body>
</html>
"""
