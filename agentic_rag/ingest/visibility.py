"""What a browser would show of a page: the CSS a page applies, read the way a browser reads it.

Hidden text is a way to plant claims that no reader of the page sees, so extraction keeps only what a
desktop browser renders readably. The page's own style sheets (``<style>`` elements and ``data:`` style
sheet links; remote ones are never fetched) are applied to its elements by a CSS inliner (css-inline),
after the parts a browser applies but the inliner skips are rewritten into plain rules: ``@media``
blocks that match a desktop screen, ``@supports`` / ``@layer`` / ``@container`` blocks, nested rules and
``:is()`` / ``:where()``. Declarations are then read with a CSS tokenizer (tinycss2), so comments and
escapes (``display:/**/none``, ``display:non\\65``) read as a browser reads them, never as a regular
expression does.

An element is *removed* (with everything inside it) when it is not rendered or not on screen:
``display:none``, ``content-visibility:hidden``, near-zero opacity, off-screen positioning, margins,
indents or translations, a box clipped to nothing (``clip``, ``clip-path``, zero size with overflow
hidden), ``transform: scale(0)``, or what its tag and attributes do not draw (the table in
:mod:`agentic_rag.ingest.elements`: the ``hidden`` attribute, ``<template>``, media fallback, ...). An
element's own text is *unreadable* (its children may show theirs again, as in CSS) when ``visibility`` is
hidden, its rendered font is tiny, or its colour is too close to the background it is drawn on (the page's
own background colours, white by default; over an image nothing is assumed).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from functools import lru_cache

import tinycss2
import tinycss2.color4

from agentic_rag.ingest.elements import HTML, MARKED, SVG_TEXT, attribute_style, drawn, layout, outside, viewport

# The screen media queries are evaluated for: a desktop browser window (px)
VIEWPORT_WIDTH_PX = 1280
VIEWPORT_HEIGHT_PX = 800
ROOT_FONT_PX = 16.0
# Text rendered smaller than this (px, after zoom and scale) cannot be read.
MIN_READABLE_FONT_PX = 3.0
# An element this transparent (product of its and its ancestors' opacity) shows nothing.
MIN_OPACITY = 0.1
# A box moved this far (px) left of or above the page, or text indented this far, is off screen.
OFFSCREEN_PX = 500.0
# Text blurred by a filter of this radius (px) or more cannot be read.
MAX_READABLE_BLUR_PX = 4.0
# A box this small (px) with its overflow hidden shows none of its content.
MAX_CLIPPED_BOX_PX = 4.0
# Text whose WCAG contrast ratio with its background is below this cannot be read (1.0: same colour).
MIN_CONTRAST_RATIO = 1.2

# The properties read here: a style sheet's other declarations are not applied
PROPERTIES = frozenset({
    "display", "content-visibility", "visibility", "opacity", "filter", "font", "font-size", "zoom", "transform",
    "scale", "translate", "color", "-webkit-text-fill-color", "background", "background-color", "background-image",
    "position", "left", "top", "right", "bottom", "inset", "margin", "margin-left", "margin-top", "text-indent",
    "width", "height", "max-width", "max-height", "overflow", "overflow-x", "overflow-y", "clip", "clip-path",
    "background-clip", "-webkit-background-clip", "text-shadow", "content", "fill",
})
_PAGE_TAGS = frozenset({"html", "body"})  # never removed: a page that hides its body shows it once its scripts run
_WHITE = (1.0, 1.0, 1.0)


@dataclass(frozen=True, slots=True)
class Context:
    """What an element passes to its children: what is inherited, or compounds, down the tree."""

    removed: bool = False
    text_hidden: bool = False  # this element's own text (its children decide for themselves)
    invisible: bool = False  # ``visibility: hidden`` in force (inherited; ``visible`` undoes it)
    font_px: float = ROOT_FONT_PX
    zoom: float = 1.0  # ``zoom`` and ``transform: scale`` of this element and its ancestors
    opacity: float = 1.0
    color: tuple[float, float, float, float] | None = None  # None: not set by any CSS the page carries
    backdrop: tuple[float, float, float] | None = _WHITE  # None: drawn over an image or gradient
    layout: str = HTML  # where its text is drawn (elements.layout): an SVG drawing or fallback content draws none
    drawing: tuple[float, float, float, float] | None = None  # the SVG area it is drawn in (elements.viewport)

    def shows_text(self) -> bool:
        return not (self.removed or self.text_hidden) and self.layout in (HTML, SVG_TEXT)

    def draws_frame(self) -> bool:
        """Whether a frame in this context draws its document (whose own rules then judge its text)."""
        return not (self.removed or self.invisible) and self.zoom * ROOT_FONT_PX >= MIN_READABLE_FONT_PX


ROOT = Context()
GONE = Context(removed=True, text_hidden=True)


# --- declarations -------------------------------------------------------------------------------

@lru_cache(maxsize=8192)
def declarations(style: str) -> Mapping[str, tuple]:
    """The declarations in force in a ``style`` attribute: name -> value tokens (comments and
    whitespace dropped, escapes resolved); a later one wins unless an earlier one is ``!important``."""
    out: dict[str, tuple] = {}
    important: set[str] = set()
    for d in tinycss2.parse_blocks_contents(style, skip_comments=True, skip_whitespace=True):
        if d.type != "declaration" or (d.lower_name in important and not d.important):
            continue
        out[d.lower_name] = tuple(t for t in d.value if t.type not in ("whitespace", "comment"))
        if d.important:
            important.add(d.lower_name)
    for name, tokens in out.items():  # var(--x) from a custom property set in the same attribute
        if not name.startswith("--") and any(t.type == "function" and t.lower_name == "var" for t in tokens):
            out[name] = _substitute(tokens, out)
    return out


def _substitute(tokens: tuple, decls: Mapping[str, tuple], depth: int = 0) -> tuple:
    out: list = []
    for t in tokens:
        if t.type == "function" and t.lower_name == "var" and depth < 8:
            args = _args(t)
            name = args[0][0].value if args and args[0] and args[0][0].type == "ident" else ""
            value = decls.get(name.lower()) if name.startswith("--") else None
            if value is None:
                value = tuple(x for a in args[1:] for x in a)  # the fallback
            out += _substitute(value, decls, depth + 1)
        else:
            out.append(t)
    return tuple(out)


def _ident(tokens: tuple) -> str:
    return tokens[0].lower_value if len(tokens) == 1 and tokens[0].type == "ident" else ""


def _number(tokens: tuple, percent_of: float = 1.0) -> float | None:
    if len(tokens) != 1:
        return None
    t = tokens[0]
    if t.type == "number":
        return float(t.value)
    if t.type == "percentage":
        return float(t.value) / 100 * percent_of
    if t.type == "function":
        return _math(t, ROOT_FONT_PX, percent_of)
    return None


def _math(token, font_px: float, percent_of: float | None) -> float | None:
    """``calc()``, ``min()``, ``max()`` and ``clamp()`` of lengths (in px) or numbers; None when unknown."""
    if token.type == "number":
        return float(token.value)
    if token.type == "() block":
        return _arithmetic([t for t in token.content if t.type not in ("whitespace", "comment")], font_px, percent_of)
    if token.type != "function":
        return length_px(token, font_px, percent_of)
    name = token.lower_name
    if name not in ("calc", "min", "max", "clamp"):
        return None
    values = [_arithmetic(a, font_px, percent_of) for a in _args(token)]
    if not values or None in values:
        return None
    if name == "calc":
        return values[0] if len(values) == 1 else None
    if name == "clamp":
        return max(values[0], min(values[1], values[2])) if len(values) == 3 else None
    return min(values) if name == "min" else max(values)


def _arithmetic(tokens: list, font_px: float, percent_of: float | None) -> float | None:
    values, ops = [], []
    for t in tokens:
        if t.type == "literal" and t.value in ("+", "-", "*", "/"):
            ops.append(t.value)
        elif (v := _math(t, font_px, percent_of)) is None:
            return None
        else:
            values.append(v)
    if not values or len(ops) != len(values) - 1:
        return None
    terms = [values[0]]
    for op, v in zip(ops, values[1:]):
        if op == "*":
            terms[-1] *= v
        elif op == "/":
            if v == 0:
                return None
            terms[-1] /= v
        else:
            terms.append(v if op == "+" else -v)
    return sum(terms)


_ABS_PX = {"px": 1.0, "pt": 96 / 72, "pc": 16.0, "in": 96.0, "cm": 96 / 2.54, "mm": 9.6 / 2.54, "q": 2.4 / 2.54}


def length_px(token, font_px: float = ROOT_FONT_PX, percent_of: float | None = None) -> float | None:
    """A length token in px (None when it cannot be known here: ``auto``, ``calc()``, an unknown unit)."""
    if token.type == "number" and token.value == 0:
        return 0.0
    if token.type == "percentage":
        return None if percent_of is None else float(token.value) / 100 * percent_of
    if token.type in ("function", "() block"):
        return _math(token, font_px, percent_of)
    if token.type != "dimension":
        return None
    unit = token.lower_unit
    if unit in _ABS_PX:
        return float(token.value) * _ABS_PX[unit]
    if unit in ("em", "ex", "ch", "cap", "ic", "lh"):
        return float(token.value) * font_px * (1.0 if unit in ("em", "lh", "ic") else 0.5)
    if unit in ("rem", "rlh"):
        return float(token.value) * ROOT_FONT_PX
    if unit in ("vw", "vi", "svw", "lvw", "dvw", "vmax"):
        return float(token.value) / 100 * VIEWPORT_WIDTH_PX
    if unit in ("vh", "vb", "svh", "lvh", "dvh", "vmin"):
        return float(token.value) / 100 * VIEWPORT_HEIGHT_PX
    return None


_FONT_KEYWORDS = {"xx-small": 9.0, "x-small": 10.0, "small": 13.0, "medium": 16.0, "large": 18.0, "x-large": 24.0,
                  "xx-large": 32.0, "xxx-large": 48.0}


def _font_size(tokens: tuple, parent_px: float) -> float | None:
    if not tokens:
        return None
    t = tokens[0]
    if t.type == "ident":
        if t.lower_value in _FONT_KEYWORDS:
            return _FONT_KEYWORDS[t.lower_value]
        return {"smaller": parent_px / 1.2, "larger": parent_px * 1.2}.get(t.lower_value)
    return length_px(t, parent_px, parent_px)


def _font_shorthand_size(tokens: tuple, parent_px: float) -> float | None:
    """The size in ``font: [style weight] SIZE[/line-height] family`` (weights are unitless numbers, so
    only a zero among them can be a size)."""
    for t in tokens:
        if t.type in ("dimension", "percentage") or (t.type == "number" and t.value == 0) or (
                t.type == "ident" and t.lower_value in _FONT_KEYWORDS):
            return _font_size((t,), parent_px)
        if t.type == "literal" and t.value in ("/", ","):
            break
    return None


def _color(tokens: tuple) -> tuple[float, float, float, float] | str | None:
    """An sRGB colour with alpha, "current" for ``currentColor``, or None when not a known colour."""
    if len(tokens) != 1:
        return None
    return _parse_color(tinycss2.serialize(tokens))


@lru_cache(maxsize=2048)
def _parse_color(text: str) -> tuple[float, float, float, float] | str | None:
    try:
        c = tinycss2.color4.parse_color(text)
    except Exception:  # noqa: BLE001 - a colour tinycss2 cannot read is an unknown colour
        return None
    if c is None:
        return None
    if isinstance(c, str):
        return "current" if c.lower() == "currentcolor" else None
    try:
        r, g, b = (min(1.0, max(0.0, float(v))) for v in c.to("srgb").coordinates)
    except (NotImplementedError, ValueError, TypeError):
        return None
    return (r, g, b, float(c.alpha))


def _luminance(rgb: tuple[float, float, float]) -> float:
    lin = [v / 12.92 if v <= 0.04045 else ((v + 0.055) / 1.055) ** 2.4 for v in rgb]
    return 0.2126 * lin[0] + 0.7152 * lin[1] + 0.0722 * lin[2]


def contrast_ratio(a: tuple[float, float, float], b: tuple[float, float, float]) -> float:
    la, lb = sorted((_luminance(a), _luminance(b)), reverse=True)
    return (la + 0.05) / (lb + 0.05)


def _over(color: tuple[float, float, float, float], backdrop: tuple[float, float, float], alpha: float = 1.0):
    a = color[3] * alpha
    return tuple(c * a + d * (1 - a) for c, d in zip(color[:3], backdrop))


def _functions(tokens: tuple) -> list:
    return [t for t in tokens if t.type == "function"]


def _args(fn) -> list[list]:
    """A function's arguments, split at commas (whitespace-separated values stay together)."""
    out: list[list] = [[]]
    for t in fn.arguments:
        if t.type == "literal" and t.value == ",":
            out.append([])
        elif t.type not in ("whitespace", "comment"):
            out[-1].append(t)
    return [a for a in out if a]


def _scale(tokens: tuple) -> float:
    """The smallest factor by which ``transform`` shrinks the element (1.0 when it does not)."""
    factors = [1.0]
    for fn in _functions(tokens):
        name, args = fn.lower_name, [t for a in _args(fn) for t in a]
        nums = [float(t.value) / (100 if t.type == "percentage" else 1) for t in args if t.type in ("number", "percentage")]
        if name in ("scale", "scalex", "scaley", "scale3d") and nums:
            factors += [abs(n) for n in nums[:2]]
        elif name == "matrix" and len(nums) >= 4:
            factors += [abs(nums[0]) + abs(nums[1]), abs(nums[2]) + abs(nums[3])]
    return min(factors)


def _translated_off(tokens: tuple, font_px: float) -> bool:
    for fn in _functions(tokens):
        if fn.lower_name in ("translate", "translatex", "translatey", "translate3d"):
            for t in (t for a in _args(fn) for t in a):
                px = length_px(t, font_px)
                if px is not None and px <= -OFFSCREEN_PX:
                    return True
    return False


def _clipped(decls: Mapping[str, tuple], font_px: float) -> bool:
    for fn in _functions(decls.get("clip", ())):
        if fn.lower_name == "rect":
            vals = [length_px(t, font_px) for a in _args(fn) for t in a]
            if len(vals) == 4 and None not in vals and (vals[2] - vals[0] <= MAX_CLIPPED_BOX_PX
                                                         or vals[1] - vals[3] <= MAX_CLIPPED_BOX_PX):
                return True
    for fn in _functions(decls.get("clip-path", ())):
        args = [t for a in _args(fn) for t in a]
        if fn.lower_name == "inset":
            sides = []
            for t in args:
                if t.type == "ident" and t.lower_value == "round":
                    break
                sides.append(float(t.value) if t.type == "percentage" else 0.0)
            if 1 <= len(sides) <= 4:  # top [right [bottom [left]]], as margin's shorthand
                top = sides[0]
                right = sides[1] if len(sides) > 1 else top
                bottom = sides[2] if len(sides) > 2 else top
                left = sides[3] if len(sides) > 3 else right
                if top + bottom >= 100 or left + right >= 100:
                    return True
        elif fn.lower_name in ("circle", "ellipse"):
            radii = [t for t in args if not (t.type == "ident" and t.lower_value == "at")][:1 if fn.lower_name == "circle" else 2]
            if radii and all(length_px(t, font_px, 0.0) == 0.0 for t in radii):
                return True
        elif fn.lower_name == "polygon":
            points = {tinycss2.serialize(a) for a in _args(fn)}
            if len(points) <= 2:
                return True
    return False


_VERTICAL = frozenset({"top", "bottom", "margin-top"})


def _offscreen(decls: Mapping[str, tuple], font_px: float) -> bool:
    def off(name: str, token) -> bool:
        v = length_px(token, font_px, VIEWPORT_HEIGHT_PX if name in _VERTICAL else VIEWPORT_WIDTH_PX)
        return v is not None and v <= -OFFSCREEN_PX

    def side(name: str) -> bool:
        tokens = decls.get(name, ())
        return len(tokens) == 1 and off(name, tokens[0])

    if _ident(decls.get("position", ())) in ("absolute", "fixed", "relative", "sticky"):
        if any(side(name) for name in ("left", "top", "right", "bottom")):
            return True
        if any(off("left", t) for t in decls.get("inset", ())):
            return True
    if any(side(name) for name in ("margin-left", "margin-top", "text-indent")):
        return True
    margin = decls.get("margin", ())
    if margin and (off("margin-top", margin[0]) or off("margin-left", margin[3] if len(margin) > 3 else margin[-1])):
        return True
    return _translated_off(decls.get("transform", ()), font_px) or _translated_off(decls.get("translate", ()), font_px)


def _zero_box(decls: Mapping[str, tuple], font_px: float) -> bool:
    overflow = {t.lower_value for name in ("overflow", "overflow-x", "overflow-y") for t in decls.get(name, ())
                if t.type == "ident"}
    if not overflow & {"hidden", "clip"}:
        return False
    for name in ("width", "height", "max-width", "max-height"):
        tokens = decls.get(name, ())
        if len(tokens) == 1 and (v := length_px(tokens[0], font_px)) is not None and v <= MAX_CLIPPED_BOX_PX:
            return True
    return False


def _background(decls: Mapping[str, tuple]):
    """The element's own background: an sRGB colour with alpha (its colour, which is what shows where
    the image does not load, or a gradient of one colour), "image" when it paints only an image or a
    gradient (what lies under the text is then unknown), or None when it sets none."""
    for name in ("background-color", "background"):
        for t in decls.get(name, ()):
            c = _color((t,))
            if isinstance(c, tuple):
                return c
    for name in ("background", "background-image"):
        for t in decls.get(name, ()):
            if t.type == "url" or (t.type == "function" and t.lower_name in ("url", "image", "image-set")):
                return "image"
            if t.type == "function" and "gradient" in t.lower_name:
                stops = {c for a in _args(t) for x in a if isinstance(c := _color((x,)), tuple)}
                return stops.pop() if len(stops) == 1 else "image"
    return None


@dataclass(frozen=True, slots=True)
class _Effect:
    """What a ``style`` attribute does, given the font size it inherits (cached: pages repeat styles)."""

    gone: bool  # not rendered or not on screen, whatever its ancestors do
    font_px: float
    zoom: float
    opacity: float
    visibility: str
    color: tuple[float, float, float, float] | None
    background: tuple[float, float, float, float] | str | None


@lru_cache(maxsize=8192)
def _effect(style: str, parent_font_px: float, svg: bool = False) -> _Effect | None:
    decls = declarations(style)
    if not decls:
        return None
    size = _font_size(decls["font-size"], parent_font_px) if "font-size" in decls else (
        _font_shorthand_size(decls["font"], parent_font_px) if "font" in decls else None)
    font = parent_font_px if size is None else size
    zoom = _scale(decls.get("transform", ())) * _scale(decls.get("scale", ()))
    if (z := _number(decls.get("zoom", ()))) is not None:
        zoom *= max(0.0, z)
    opacity = 1.0
    if (o := _number(decls.get("opacity", ()))) is not None:
        opacity *= max(0.0, o)
    blurred = False
    for fn in _functions(decls.get("filter", ())):
        arg = tuple(t for a in _args(fn) for t in a)
        if fn.lower_name == "opacity" and (o := _number(arg)) is not None:
            opacity *= max(0.0, o)
        elif fn.lower_name == "blur" and len(arg) == 1 and (b := length_px(arg[0], font)) is not None:
            blurred = blurred or b >= MAX_READABLE_BLUR_PX
    gone = (blurred or _ident(decls.get("display", ())) == "none" or _ident(decls.get("content-visibility", ())) == "hidden"
            or _offscreen(decls, font) or _zero_box(decls, font) or _clipped(decls, font))
    color = None
    for name in ("fill",) if svg else ("color", "-webkit-text-fill-color"):  # SVG text is painted by its fill
        c = (0.0, 0.0, 0.0, 0.0) if _ident(decls.get(name, ())) == "none" else _color(decls.get(name, ()))
        if isinstance(c, tuple):
            color = c
    painted = any(_ident(decls.get(n, ())) == "text" for n in ("background-clip", "-webkit-background-clip"))
    if painted or (decls.get("text-shadow") and _ident(decls["text-shadow"]) != "none"):
        color = None  # the glyphs are painted by the background or drawn by their shadow: colour unknown
    return _Effect(gone, font, zoom, opacity, _ident(decls.get("visibility", ())), color, _background(decls))


def context(parent: Context, tag: str, attrs: Mapping[str, str | None]) -> Context:
    """The context of an element: whether it is removed or its own text unreadable, and what its
    children inherit. What its tag and attributes draw is read from :mod:`agentic_rag.ingest.elements`."""
    if parent.removed:
        return GONE
    if not attrs and parent.layout == HTML and tag not in MARKED:  # most elements: nothing of their own
        return parent
    if not (tag in _PAGE_TAGS or drawn(tag, attrs, parent.layout)):
        return GONE
    lay = layout(parent.layout, tag)
    box = viewport(attrs) if tag == "svg" else None if lay != HTML and "transform" in attrs else parent.drawing
    style = attribute_style(tag, attrs, lay) + (attrs.get("style") or "")
    eff = _effect(style, parent.font_px, lay != HTML) if style else None
    if lay == SVG_TEXT and outside(attrs, parent.drawing, eff.font_px if eff else parent.font_px, OFFSCREEN_PX, tag):
        return GONE
    if eff is None:
        return parent if (lay, box) == (parent.layout, parent.drawing) else replace(parent, layout=lay, drawing=box)
    opacity = parent.opacity * eff.opacity
    if tag not in _PAGE_TAGS and (eff.gone or opacity < MIN_OPACITY):
        return GONE
    invisible = {"hidden": True, "collapse": True, "visible": False}.get(eff.visibility, parent.invisible)
    backdrop = parent.backdrop
    if eff.background == "image":
        backdrop = None
    elif isinstance(eff.background, tuple) and eff.background[3] > 0:
        bg = eff.background
        backdrop = bg[:3] if bg[3] >= 1 or backdrop is None else _over(bg, backdrop)
    color = eff.color or parent.color
    zoom = parent.zoom * eff.zoom
    hidden = invisible or _unreadable(eff.font_px * zoom, color, opacity, backdrop)
    return Context(False, hidden, invisible, eff.font_px, zoom, opacity, color, backdrop, lay, box)


@lru_cache(maxsize=4096)
def _unreadable(font_px: float, color, opacity: float, backdrop) -> bool:
    """Whether text is too small, too transparent or too close to its background to read. The text's
    colour is known only where the page's CSS sets it (an external style sheet may set any)."""
    if font_px < MIN_READABLE_FONT_PX:
        return True
    if color is None:
        return False
    if color[3] * opacity < MIN_OPACITY:
        return True
    return backdrop is not None and contrast_ratio(_over(color, backdrop), backdrop) < MIN_CONTRAST_RATIO
