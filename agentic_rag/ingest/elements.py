"""What a browser draws of each element, read from its tag and attributes: the one table both extraction
paths of :mod:`agentic_rag.ingest.pages` read (the tree the extractor reads, and the flat tokenizer for pages
the tree parser cannot hold), with :mod:`agentic_rag.ingest.visibility` for what the page's CSS hides, so a
page shows the same text whichever path reads it.

Not drawn, with everything inside: what the user-agent style sheet sets to ``display: none`` (``head``,
``title`` wherever it stands, ``template``, ``datalist``, ``noembed``, ``noframes``, ...), ``noscript`` (pages
are read as a browser running scripts shows them), an element with the ``hidden`` attribute (any value), a
``dialog`` that is not open and an ``input`` of type ``hidden``. Media, frames and widgets (``video``,
``canvas``, ``object``, ``iframe``, ``progress``, ...) draw what they load, never their content, which is
fallback for browsers that cannot. Content a reader opens with a click (a closed ``details``, a
``popover``) counts as drawn. ``aria-hidden`` hides from screen readers, not from the screen: its text is
kept, whatever the attribute's spelling.

Drawn from elsewhere than the element's own text: an ``input``'s value (the types that draw it as text), a
drop-down ``select``'s selected option only (a list box draws all its options), an ``iframe``'s ``srcdoc``
document (read by these same rules). In SVG only ``text`` (and HTML in a ``foreignObject``) draws text;
``defs``, ``symbol``, masks and the like are never drawn, and the presentation attributes (``display``,
``opacity``, ``fill``, ``font-size``, ``width``, ...) are read as the CSS they stand for, as is text placed
outside its drawing. Enumerated attribute values (``type``) are matched as a browser matches them:
trimmed and case-insensitive; boolean attributes (``hidden``, ``open``, ``selected``) by their presence.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

Attrs = Mapping[str, str | None]

NOT_DRAWN = frozenset({
    "head", "title", "script", "style", "template", "noscript", "noembed", "noframes", "datalist", "rp", "param",
    "source", "track", "area", "base", "link", "meta",
})
FALLBACK = frozenset({"video", "audio", "canvas", "object", "embed", "iframe", "frame", "frameset", "applet",
                      "fencedframe", "progress", "meter"})
SVG_NOT_DRAWN = frozenset({"defs", "symbol", "clippath", "mask", "pattern", "marker", "lineargradient",
                           "radialgradient", "filter", "metadata", "title", "desc", "style", "script"})
# Tags drawn unlike a plain element even without attributes (any other element with none draws as its parent)
MARKED = NOT_DRAWN | FALLBACK | {"svg", "dialog"}
# Page chrome rather than its content, which the flat path drops (the tree path's extractor finds it by its own
# heuristics); a header inside an article or section is that article's own (its headline), and is kept
BOILERPLATE = frozenset({"nav", "aside", "footer", "header"})
SECTIONING = frozenset({"article", "section", "main"})
# Elements with no content: never open (a browser ignores the slash of any other HTML element's ``<p/>``)
VOID = frozenset({"area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "param", "source",
                  "track", "wbr"})
# SVG and MathML elements, which a slash does close (``<rect/>``)
_FOREIGN = re.compile(r"svg|g|path|rect|circle|ellipse|line|poly(?:line|gon)|text|tspan|textpath|use|image|defs|symbol"
                      r"|clippath|mask|pattern|marker|(?:linear|radial)gradient|stop|filter|fe[a-z]+|foreignobject|desc"
                      r"|metadata|switch|view|animate[a-z]*|set|mpath|math|semantics|annotation(?:-xml)?|m(?:i|o|n|s|text"
                      r"|space|row|frac|sqrt|root|style|error|padded|phantom|fenced|enclose|sub|sup|subsup|under|over"
                      r"|underover|multiscripts|prescripts|table|tr|td|labeledtr|action|glyph)")
# Elements that start a line of their own
BLOCK = frozenset({"address", "article", "blockquote", "br", "dd", "details", "dialog", "div", "dl", "dt", "fieldset",
                   "figcaption", "figure", "form", "h1", "h2", "h3", "h4", "h5", "h6", "header", "hr", "li", "main",
                   "menu", "ol", "p", "pre", "section", "summary", "table", "td", "th", "tr", "ul"})

# Where an element's text is drawn: HTML, an SVG drawing (draws no text of its own), an SVG ``text``, or the
# fallback content of a medium or frame (never drawn)
HTML, SVG, SVG_TEXT, FALLBACK_CONTENT = "html", "svg", "svg text", "fallback"


def enumerated(attrs: Attrs, name: str) -> str | None:
    """An enumerated attribute's value as a browser matches it (None when absent)."""
    if name not in attrs:
        return None
    return (attrs.get(name) or "").strip().lower()


def closes_itself(tag: str) -> bool:
    """Whether ``<tag/>`` is a whole element in a browser, as every parser here would read it."""
    return tag in VOID or bool(_FOREIGN.fullmatch(tag))


def boilerplate(tag: str, in_section: bool) -> bool:
    return tag in BOILERPLATE and not (tag == "header" and in_section)


def drawn(tag: str, attrs: Attrs, parent_layout: str) -> bool:
    """Whether the element is drawn at all (the page's CSS may still hide it)."""
    if parent_layout == FALLBACK_CONTENT or "hidden" in attrs:
        return False
    if parent_layout != HTML:
        return tag not in SVG_NOT_DRAWN
    if tag in NOT_DRAWN or (tag == "dialog" and "open" not in attrs):
        return False
    return not (tag == "input" and enumerated(attrs, "type") == "hidden")


def layout(parent: str, tag: str) -> str:
    if parent == HTML:
        return SVG if tag == "svg" else FALLBACK_CONTENT if tag in FALLBACK else HTML
    if tag == "foreignobject":
        return HTML
    return SVG_TEXT if tag == "text" else parent


# input types whose value a browser draws as text (a password draws dots; a checkbox, file or colour a widget)
_VALUE_TYPES = frozenset({"text", "search", "url", "tel", "email", "number", "button", "submit", "reset", "date",
                          "time", "datetime-local", "month", "week"})
_INPUT_TYPES = _VALUE_TYPES | {"hidden", "password", "checkbox", "radio", "file", "image", "range", "color"}


def input_text(attrs: Attrs) -> str:
    kind = enumerated(attrs, "type") or "text"
    if kind not in _INPUT_TYPES:  # an unknown type is a text field
        kind = "text"
    return (attrs.get("value") or "") if kind in _VALUE_TYPES else ""


def shown_options(attrs: Attrs, options: list[tuple[Attrs, str]]) -> list[str]:
    """The options of a ``select`` a reader sees: a list box (``multiple``, or ``size`` over 1) shows them all,
    a drop-down its selected one (the last marked ``selected``, else the first that is not disabled)."""
    size = enumerated(attrs, "size") or ""
    if "multiple" in attrs or (size.isdigit() and int(size) > 1):
        return [text for _, text in options]
    selected = [text for a, text in options if "selected" in a]
    return selected[-1:] or [text for a, text in options if "disabled" not in a][:1]


# --- presentational attributes ----------------------------------------------------------------------

_SVG_PROPERTIES = ("display", "visibility", "opacity")
_HEX = re.compile(r"[0-9a-fA-F]{3}|[0-9a-fA-F]{6}")
# an attribute's value is one value: it can neither add a declaration nor be !important
_CSS_SYNTAX = re.compile(r"[;{}!]")
_TRANSLATE = re.compile(r"translate[xy]?\([^()]*\)", re.IGNORECASE)
_UNITLESS = re.compile(r"(?<=[(,\s])([-+]?(?:\d+\.?\d*|\.\d+))(?=[,)\s])")
_NUMBER = re.compile(r"[-+]?(?:\d+\.?\d*|\.\d+)(?:e[-+]?\d+)?", re.IGNORECASE)


def _value(raw: str | None) -> str:
    return _CSS_SYNTAX.sub(" ", raw or "").strip()


def _length(raw: str | None) -> str:
    value = _value(raw)
    return value + "px" if _NUMBER.fullmatch(value) else value


def attribute_style(tag: str, attrs: Attrs, layout_: str) -> str:
    """The CSS an element's presentational attributes stand for; it goes before the element's own ``style``,
    which overrides it, as the page's CSS overrides these attributes in a browser. Frames and SVG drawings clip
    what overflows them."""
    if layout_ == HTML and tag not in ("iframe", "font") and not attrs.get("bgcolor"):
        return ""
    out = []
    if tag in ("iframe", "svg"):  # and a drawing's fill starts black, whatever colour its HTML has
        out.append("overflow:hidden" if tag == "iframe" else "overflow:hidden;fill:#000")
        out += [f"{name}:{_length(attrs.get(name))}" for name in ("width", "height") if attrs.get(name)]
    if layout_ in (SVG, SVG_TEXT):
        out += [f"{name}:{_value(attrs.get(name))}" for name in _SVG_PROPERTIES if attrs.get(name)]
        if attrs.get("font-size"):
            out.append(f"font-size:{_length(attrs.get('font-size'))}")
        if attrs.get("transform"):  # SVG's translate() takes plain numbers, user units: px here
            out.append("transform:" + _TRANSLATE.sub(lambda m: _UNITLESS.sub(r"\1px", m.group()),
                                                     _value(attrs.get("transform"))))
        if attrs.get("fill-opacity"):
            out.append(f"opacity:{_value(attrs.get('fill-opacity'))}")
        if attrs.get("fill"):
            out.append(f"fill:{_value(attrs.get('fill'))}")
    if attrs.get("bgcolor"):
        out.append(f"background-color:{_color(attrs.get('bgcolor'))}")
    if tag == "font" and attrs.get("color"):
        out.append(f"color:{_color(attrs.get('color'))}")
    return ";".join(out) + ";" if out else ""


def _color(raw: str | None) -> str:
    value = _value(raw)
    return f"#{value}" if _HEX.fullmatch(value) else value


# --- SVG drawings -----------------------------------------------------------------------------------------

def _numbers(raw: str | None) -> list[float]:
    return [float(n) for n in _NUMBER.findall(raw or "")]


def viewport(attrs: Attrs) -> tuple[float, float, float, float] | None:
    """The area an ``svg`` draws, in its own units: its ``viewBox``, else its width and height in px (None when
    they are not plain numbers: a percentage of a box not known here)."""
    box = _numbers(attrs.get("viewbox"))
    if len(box) == 4 and box[2] > 0 and box[3] > 0:
        return (box[0], box[1], box[2], box[3])
    size = [_numbers(attrs.get(name, "300" if name == "width" else "150")) for name in ("width", "height")]
    if all(len(s) == 1 for s in size) and not any("%" in (attrs.get(n) or "") for n in ("width", "height")):
        return (0.0, 0.0, size[0][0], size[1][0])
    return None


def outside(attrs: Attrs, box: tuple[float, float, float, float] | None, font_px: float, far_px: float,
            tag: str = "text") -> bool:
    """Whether SVG text is placed outside its drawing, which clips it away: past the edge its text runs away
    from (``far_px`` past an edge it runs towards: its length is not known here), a line or more below it, or
    a ``<text>`` whose baseline is on or above its top edge (no ``y`` puts it at 0): only the descenders
    show. ``box`` is None where an ancestor's transform moved the coordinates: no judgement then. A
    ``<tspan>`` without coordinates continues its text, wherever that is."""
    if box is None or (tag != "text" and not {"x", "y", "dx", "dy"} & set(attrs)):
        return False
    x, y = (sum(next(iter(_numbers(attrs.get(a))), 0.0) for a in names) for names in (("x", "dx"), ("y", "dy")))
    left, top, width, height = box
    anchor = enumerated(attrs, "text-anchor") or "start"
    runs_left, runs_right = anchor in ("middle", "end"), anchor in ("start", "middle")
    off = x >= left + width + (far_px if runs_left else 0.0) or x <= left - (far_px if runs_right else 0.0)
    above = y <= top if tag == "text" else y <= top - font_px
    return off or above or y >= top + height + font_px
