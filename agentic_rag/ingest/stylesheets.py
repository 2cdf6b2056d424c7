"""A page's own style sheets applied to its elements, as a desktop browser would apply them.

css-inline writes ``<style>`` rules onto the elements they select, but skips what browsers apply and a
page can use to hide text: ``@media`` blocks, ``@supports`` / ``@layer`` / ``@container`` blocks,
nested rules and ``:is()`` / ``:where()``. Those are rewritten here into plain rules first (media
queries evaluated for a desktop screen), keeping only declarations that bear on visibility, so the
inliner's cost stays small; ``visibility`` then reads the inlined ``style`` attributes.
"""

from __future__ import annotations

import base64
import re
from functools import lru_cache
from urllib.parse import unquote_to_bytes

import css_inline
import tinycss2

from agentic_rag.ingest.visibility import (
    HTML,
    PROPERTIES,
    VIEWPORT_HEIGHT_PX,
    VIEWPORT_WIDTH_PX,
    Context,
    context,
    length_px,
)

# --- style sheets -------------------------------------------------------------------------------

_STYLE_ELEMENT = re.compile(r"<style\b([^>]*)>(.*?)(?:</style\s*>|\Z)", re.IGNORECASE | re.DOTALL)
_LINK = re.compile(r"<link\b[^>]*>", re.IGNORECASE)
_ATTR = re.compile(r"""([\w:-]+)\s*=\s*(?:"([^"]*)"|'([^']*)'|([^\s>]+))""")
# what the rule scanner steps over whole: comments, strings, unquoted url(...) (a data: URL holds ";"), escapes
_CSS_TOKEN = re.compile(r"""/\*.*?(?:\*/|\Z)|"(?:[^"\\]|\\.)*(?:"|\Z)|'(?:[^'\\]|\\.)*(?:'|\Z)|(?i:url)\([^)"']*\)|\\.|[{};]""",
                        re.DOTALL)
_COMMENT = re.compile(r"/\*.*?(?:\*/|\Z)", re.DOTALL)
_IS = re.compile(r":(?:is|where|matches|-webkit-any|-moz-any)\(([^()]*)\)", re.IGNORECASE)
_MAX_NESTING = 32  # blocks nested deeper than this are skipped (no page needs them; recursion stays bounded)
_MAX_SELECTORS = 256  # per rule, after nesting and :is() are expanded
_MAX_EXPANDED = 20_000  # selectors a page's nesting and :is() may add in all (the inliner's time grows with them)
_TRANSPARENT_BLOCKS = ("supports", "layer", "container", "scope", "document", "-moz-document")
# A ``::before`` / ``::after`` rule's declarations, carried on their element under these names (the inliner
# skips pseudo-element rules); ``generated`` reads them back
PSEUDO_PREFIX = {"before": "x-before-", "after": "x-after-"}
_PSEUDO_ELEMENT = re.compile(r"::?(before|after)\s*$", re.IGNORECASE)


def _attrs(tag_text: str) -> dict[str, str]:
    return {m.group(1).lower(): next(v for v in m.groups()[1:] if v is not None) for m in _ATTR.finditer(tag_text)}


def style_sheets(raw: str) -> str:
    """The CSS a page's own ``<style>`` elements and ``data:`` style sheet links apply on a screen."""
    sheets = []
    for m in _STYLE_ELEMENT.finditer(raw):
        a = _attrs(m.group(1))
        if media_matches(a.get("media", "")) and a.get("type", "text/css").strip().lower() in ("text/css", ""):
            sheets.append(m.group(2))
    if "data:" in raw:
        for m in _LINK.finditer(raw):
            a = _attrs(m.group(0)[5:])
            href = a.get("href", "").strip()
            if "stylesheet" in a.get("rel", "").lower() and href.lower().startswith("data:") and "," in href \
                    and media_matches(a.get("media", "")):
                sheets.append(_data_url(href))
    return "\n".join(sheets)


def _data_url(url: str) -> str:
    """The text a ``data:`` URL holds ("" when it cannot be decoded)."""
    head, _, data = url.partition(",")
    try:
        payload = base64.b64decode(data) if head.lower().endswith(";base64") else unquote_to_bytes(data)
    except ValueError:
        return ""
    return payload.decode("utf-8", "replace")


_IMPORT = re.compile(r"""@import\s+(?:url\(\s*)?["']?(data:[^"')\s]+)["']?\s*\)?\s*([^;]*)""", re.IGNORECASE)
_MAX_IMPORTS = 16  # data: style sheets a page's style sheets may import (each may import again)


def _blocks(css: str, pos: int, depth: int) -> tuple[list, int]:
    """The items of a rule list or block from ``pos`` to its closing brace (or the end): ``("text", s)``
    for a declaration or statement, ``("block", prelude, items)`` for a rule or at-rule with a block."""
    items: list = []
    start = pos
    while (m := _CSS_TOKEN.search(css, pos)) is not None:
        tok, pos = m.group(), m.end()
        if tok == "{":
            prelude = css[start:m.start()]
            if depth >= _MAX_NESTING:
                body, pos = [], _skip_block(css, pos)
            else:
                body, pos = _blocks(css, pos, depth + 1)
            items.append(("block", prelude, body))
            start = pos
        elif tok == "}":
            if css[start:m.start()].strip():
                items.append(("text", css[start:m.start()]))
            return items, pos
        elif tok == ";":
            items.append(("text", css[start:pos]))
            start = pos
    if css[start:].strip():
        items.append(("text", css[start:]))
    return items, len(css)


def _skip_block(css: str, pos: int) -> int:
    depth = 1
    while depth and (m := _CSS_TOKEN.search(css, pos)) is not None:
        pos = m.end()
        depth += {"{": 1, "}": -1}.get(m.group(), 0)
    return pos if depth == 0 else len(css)


def _split_commas(selector: str) -> list[str]:
    if "(" not in selector and "[" not in selector:
        return [p.strip() for p in selector.split(",") if p.strip()]
    out, depth, cur = [], 0, []
    for ch in selector:
        if ch in "([":
            depth += 1
        elif ch in ")]":
            depth -= 1
        if ch == "," and depth == 0:
            out.append("".join(cur))
            cur = []
        else:
            cur.append(ch)
    out.append("".join(cur))
    return [s.strip() for s in out if s.strip()]


def _expand_is(selector: str) -> list[str]:
    """``a:is(.b, .c) d`` as ``a.b d`` and ``a.c d`` (css-inline reads neither ``:is()`` nor ``:where()``)."""
    out, todo = [], [selector]
    while todo and len(out) + len(todo) <= _MAX_SELECTORS:
        s = todo.pop(0)
        m = _IS.search(s)
        if m is None:
            out.append(s)
            continue
        todo += [s[:m.start()] + alt + s[m.end():] for alt in _split_commas(m.group(1)) or [""]]
    return out


def _selectors(prelude: str, parents: list[str] | None, budget: list[int]) -> list[str]:
    own = _split_commas(prelude)
    if parents is not None:
        own = [s.replace("&", p) if "&" in s else f"{p} {s}" for p in parents for s in own]
    if budget[0] <= 0:
        return own[:_MAX_SELECTORS]
    out = [e for s in own[:_MAX_SELECTORS] for e in _expand_is(s)][:_MAX_SELECTORS]
    budget[0] -= len(out) - min(len(own), _MAX_SELECTORS)
    return out


def flatten(css: str) -> str:
    """The rules of ``css`` a desktop screen applies, as plain rules the inliner reads: matching
    ``@media`` and other conditional blocks unwrapped, nested rules and ``:is()`` expanded, rules that
    do not apply (``@media print``, ``@font-face``, ``@keyframes``) left out. Order is kept: with equal
    specificity, the later rule wins."""
    items, _ = _blocks(css, 0, 0)
    out: list[str] = []
    _emit_ordered(items, None, out, [_MAX_EXPANDED, _MAX_IMPORTS])
    return "\n".join(out)


def _emit_ordered(items: list, parents: list[str] | None, out: list[str], budget: list[int]) -> None:
    """Like a browser: a rule's own declarations come first, then its nested rules, in source order.
    Only declarations that bear on visibility are kept (the inliner then has far less to write)."""
    declared = [i[1] for i in items if i[0] == "text" and _bears_on_visibility(i[1])] if parents is not None else []
    if parents is None:  # @import of a data: style sheet (a remote one is never fetched)
        for item in items:
            if item[0] == "text" and (m := _IMPORT.search(item[1])) and budget[1] > 0 and media_matches(m.group(2)):
                budget[1] -= 1
                _emit_ordered(_blocks(_data_url(m.group(1)), 0, 0)[0], None, out, budget)
    for pseudo, selectors in _by_pseudo_element(parents or []).items() if declared else ():
        rule = ";".join(_on_element(d, pseudo) for d in declared)
        out.append(f"{', '.join(selectors)}{{{rule}}}")
    for item in items:
        if item[0] != "block":
            continue
        _, prelude, body = item
        head = (_COMMENT.sub(" ", prelude) if "/*" in prelude else prelude).strip()
        if head.startswith("@"):
            name = re.split(r"[\s(]", head[1:], maxsplit=1)[0].lower()
            query = head[1 + len(name):]
            if (name == "media" and media_matches(query)) or name in _TRANSPARENT_BLOCKS:
                _emit_ordered(body, parents, out, budget)
            continue
        if any(i[0] == "block" or _bears_on_visibility(i[1]) for i in body) and (
                sels := _selectors(head, parents, budget)):
            _emit_ordered(body, sels, out, budget)


def _by_pseudo_element(selectors: list[str]) -> dict[str, list[str]]:
    """Selectors by the pseudo-element they end in ("" for none), the pseudo-element taken off: ``::before``
    and ``::after`` rules are written onto their element, their declarations renamed (``_on_element``)."""
    out: dict[str, list[str]] = {}
    for sel in selectors:
        m = _PSEUDO_ELEMENT.search(sel)
        pseudo = m.group(1).lower() if m else ""
        out.setdefault(pseudo, []).append((sel[:m.start()].strip() or "*") if m else sel)
    return out


def _on_element(declaration: str, pseudo: str) -> str:
    if not pseudo:
        return declaration.rstrip().rstrip(";")
    name, _, value = declaration.partition(":")
    return f"{PSEUDO_PREFIX[pseudo]}{_COMMENT.sub('', name).strip().lower()}:{_quote_free(value.rstrip().rstrip(';'))}"


def _quote_free(value: str) -> str:
    """``value`` with the quotes inside its strings escaped (the inliner swaps quote characters as it writes a
    ``style`` attribute, which would cut ``"it's"`` short)."""
    if "'" not in value and '"' not in value:
        return value
    out = []
    for t in tinycss2.parse_component_value_list(value):
        if t.type == "string":
            out.append('"' + "".join(f"\\{ord(c):x} " if c in "\\\"'\n" else c for c in t.value) + '"')
        else:
            out.append(tinycss2.serialize([t]))
    return "".join(out)


def _bears_on_visibility(declaration: str) -> bool:
    name = declaration.split(":", 1)[0]
    if "/*" in name:
        name = _COMMENT.sub("", name)
    name = name.strip().lower()
    return name in PROPERTIES or name.startswith("--") or "\\" in name


def inline_styles(raw: str) -> str:
    """``raw`` with its style sheets' rules written onto the elements they apply to (``style``
    attributes, merged by specificity and ``!important`` as a browser cascades them); unchanged when
    the page has no style sheet or the inliner cannot read the page."""
    css = style_sheets(raw)
    if not css.strip():
        return raw
    try:
        return css_inline.inline(raw, inline_style_tags=False, keep_style_tags=False, keep_link_tags=False,
                                 load_remote_stylesheets=False, resolve_css_variables=True, extra_css=flatten(css))
    except BaseException as exc:  # a Rust panic is a BaseException; a hostile page must not end ingestion
        if isinstance(exc, (KeyboardInterrupt, SystemExit)):
            raise
        return raw


def generated(element: Context, attrs, pseudo: str) -> str:
    """The text the page's CSS draws in an element's ``::before`` or ``::after`` box (``content``: its strings
    and ``attr()`` values), or "" when that box is not drawn readably: it inherits from its element, as in
    CSS, and its own declarations apply (SVG elements have no such boxes)."""
    style = attrs.get("style")
    own = _pseudo_rule(style, PSEUDO_PREFIX[pseudo]) if style and "-content" in style else None
    if own is None or element.layout != HTML or not context(element, "::" + pseudo, {"style": own[0]}).shows_text():
        return ""
    return "".join(t.value if t.type == "string" else _attr(t, attrs) for t in own[1])


@lru_cache(maxsize=4096)
def _pseudo_rule(style: str, prefix: str) -> tuple[str, tuple] | None:
    """The pseudo-element's own declarations, as a ``style``, and its ``content`` tokens (None: no content)."""
    if prefix + "content" not in style:
        return None
    own, content = [], ()
    for d in tinycss2.parse_blocks_contents(style, skip_comments=True, skip_whitespace=True):
        if d.type != "declaration" or not d.lower_name.startswith(prefix):
            continue
        name = d.lower_name[len(prefix):]
        if name == "content":
            content = tuple(t for t in d.value if t.type not in ("whitespace", "comment"))
        else:
            own.append(f"{name}:{tinycss2.serialize(d.value)}{' !important' if d.important else ''}")
    return ";".join(own), content


def _attr(token, attrs) -> str:
    if token.type != "function" or token.lower_name != "attr":
        return ""
    name = next((t.lower_value for t in token.arguments if t.type == "ident"), "")
    return attrs.get(name) or ""


# --- media queries ------------------------------------------------------------------------------

_MEDIA_VALUES: dict[str, float | str] = {
    "width": VIEWPORT_WIDTH_PX, "height": VIEWPORT_HEIGHT_PX, "device-width": VIEWPORT_WIDTH_PX,
    "device-height": VIEWPORT_HEIGHT_PX, "aspect-ratio": VIEWPORT_WIDTH_PX / VIEWPORT_HEIGHT_PX,
    "device-aspect-ratio": VIEWPORT_WIDTH_PX / VIEWPORT_HEIGHT_PX, "resolution": 1.0,
    "-webkit-device-pixel-ratio": 1.0, "device-pixel-ratio": 1.0, "color": 8.0, "color-index": 0.0,
    "monochrome": 0.0, "grid": 0.0, "orientation": "landscape", "hover": "hover", "any-hover": "hover",
    "pointer": "fine", "any-pointer": "fine", "prefers-color-scheme": "light",
    "prefers-reduced-motion": "no-preference", "prefers-reduced-transparency": "no-preference",
    "prefers-contrast": "no-preference", "forced-colors": "none", "inverted-colors": "none", "scripting": "enabled",
    "display-mode": "browser", "update": "fast", "overflow-block": "scroll", "overflow-inline": "scroll",
    "color-gamut": "srgb", "dynamic-range": "standard",
}
_SCREEN_TYPES = frozenset({"all", "screen"})


@lru_cache(maxsize=1024)
def media_matches(query: str) -> bool:
    """Whether a media query list matches a desktop screen of VIEWPORT_WIDTH_PX x VIEWPORT_HEIGHT_PX
    (an empty list matches; a feature this does not know does not)."""
    tokens = [t for t in tinycss2.parse_component_value_list(query, skip_comments=True) if t.type != "whitespace"]
    if not tokens:
        return True
    queries: list[list] = [[]]
    for t in tokens:
        if t.type == "literal" and t.value == ",":
            queries.append([])
        else:
            queries[-1].append(t)
    return any(_media_query(q) for q in queries if q)


def _media_query(tokens: list) -> bool:
    negate = False
    if tokens[0].type == "ident" and tokens[0].lower_value in ("not", "only") and len(tokens) > 1 and tokens[1].type == "ident":
        negate, tokens = tokens[0].lower_value == "not", tokens[1:]
    if tokens[0].type == "ident" and tokens[0].lower_value not in ("not",):
        ok = tokens[0].lower_value in _SCREEN_TYPES
        rest = tokens[1:]
        if rest:
            if not (rest[0].type == "ident" and rest[0].lower_value == "and"):
                return False
            ok = ok and _condition(rest[1:])
        return ok != negate
    return _condition(tokens) != negate


def _condition(tokens: list) -> bool:
    result, op, negate = None, "and", False
    for t in tokens:
        if t.type == "ident" and t.lower_value in ("and", "or"):
            op = t.lower_value
        elif t.type == "ident" and t.lower_value == "not":
            negate = True
        elif t.type == "() block":
            inner = [x for x in t.content if x.type not in ("whitespace", "comment")]
            value = (_condition(inner) if inner and (inner[0].type == "() block" or (
                inner[0].type == "ident" and inner[0].lower_value == "not")) else _feature(inner)) != negate
            negate = False
            result = value if result is None else (result and value if op == "and" else result or value)
        else:
            return False
    return bool(result)


def _media_value(t) -> float | str | None:
    if t.type == "ident":
        return t.lower_value
    if t.type == "number":
        return float(t.value)
    if t.type == "dimension":
        if t.lower_unit in ("dppx", "x"):
            return float(t.value)
        if t.lower_unit == "dpi":
            return float(t.value) / 96
        if t.lower_unit == "dpcm":
            return float(t.value) * 2.54 / 96
        return length_px(t)
    return None


def _compare(actual: float | str, op: str, expected: float | str | None) -> bool:
    if expected is None:
        return False
    if isinstance(actual, str) or isinstance(expected, str):
        return op == "=" and actual == expected
    return {"=": actual == expected, "<": actual < expected, "<=": actual <= expected, ">": actual > expected,
            ">=": actual >= expected}[op]


def _feature(tokens: list) -> bool:
    # merge "<" "=" into "<=", and "a / b" ratios into a number
    merged: list = []
    for t in tokens:
        if t.type == "literal" and t.value == "=" and merged and merged[-1] in ("<", ">"):
            merged[-1] += "="
        elif t.type == "literal" and t.value in ("<", ">", "=", ":", "/"):
            merged.append(t.value)
        else:
            merged.append(_media_value(t) if t.type != "ident" else ("name", t.lower_value))
    for i in range(len(merged) - 2, 0, -1):
        if merged[i] == "/" and isinstance(merged[i - 1], float) and isinstance(merged[i + 1], float) and merged[i + 1]:
            merged[i - 1: i + 2] = [merged[i - 1] / merged[i + 1]]
    if len(merged) == 1 and isinstance(merged[0], tuple):  # a boolean feature: (color), (hover)
        value = _MEDIA_VALUES.get(merged[0][1])
        return value not in (None, 0.0, "none")
    if len(merged) == 3 and merged[1] == ":" and isinstance(merged[0], tuple):
        name, expected = merged[0][1], merged[2]
        expected = expected[1] if isinstance(expected, tuple) else expected
        for prefix, op in (("min-", ">="), ("max-", "<="), ("-webkit-min-", ">="), ("-webkit-max-", "<=")):
            if name.startswith(prefix) and name[len(prefix):] in _MEDIA_VALUES:
                return _compare(_MEDIA_VALUES[name[len(prefix):]], op, expected)
        return name in _MEDIA_VALUES and _compare(_MEDIA_VALUES[name], "=", expected)
    # range syntax: (width >= 600px), (400px <= width < 700px)
    names = [i for i, x in enumerate(merged) if isinstance(x, tuple)]
    if len(names) != 1 or merged[names[0]][1] not in _MEDIA_VALUES:
        return False
    i, actual = names[0], _MEDIA_VALUES[merged[names[0]][1]]
    flip = {"<": ">", "<=": ">=", ">": "<", ">=": "<=", "=": "="}
    if len(merged) not in (3, 5):
        return False
    ok = True
    if i + 2 < len(merged):  # name OP value
        ok = merged[i + 1] in flip and _compare(actual, merged[i + 1], merged[i + 2])
    if i >= 2:  # value OP name
        ok = ok and merged[i - 1] in flip and _compare(actual, flip[merged[i - 1]], merged[i - 2])
    return ok
