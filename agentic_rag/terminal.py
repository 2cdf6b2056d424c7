"""Text from a dataset or a page, printed to a terminal as text and never as commands to it.

A query holding ``ESC[2J`` would clear the screen, an OSC sequence would retitle the window or plant
a link, a NUL or a bidi override would hide or reorder what follows. ``terminal_safe`` shows each
such character as a visible stand-in of the same length (``ESC`` as U+241B, NUL as U+2400, C1 and
bidi controls as U+FFFD), so rich's layout and styles are unchanged. ``SafeConsole`` applies it to
everything it prints (``ask``, ``search``, ``eval``'s table, ``trace``), tables and styled text
included: the CLI's views cannot forget it. Newlines and tabs are kept.
"""

from __future__ import annotations

from typing import Iterable

from rich.console import Console, ConsoleOptions, RenderableType
from rich.segment import Segment
from rich.text import Text

_KEEP = {"\n", "\t"}
_BIDI = [0x061C, 0x200E, 0x200F, *range(0x202A, 0x202F), *range(0x2066, 0x206A)]
_STAND_INS = {
    **{c: 0x2400 + c for c in range(0x20) if chr(c) not in _KEEP},  # C0: the Control Pictures block
    0x7F: 0x2421,  # DEL
    **{c: 0xFFFD for c in range(0x80, 0xA0)},  # C1 (0x9B alone starts a CSI sequence)
    **{c: 0xFFFD for c in _BIDI},
}


def terminal_safe(text: str) -> str:
    """``text`` with every control character (but newline and tab) replaced by a visible stand-in."""
    return text.translate(_STAND_INS)


class SafeConsole(Console):
    """A rich ``Console`` that prints every text through ``terminal_safe``: strings and ``Text``
    before layout (so widths are right), and any other renderable's segments after it."""

    def render(self, renderable: RenderableType, options: ConsoleOptions | None = None) -> Iterable[Segment]:
        if isinstance(renderable, str):
            renderable = terminal_safe(renderable)
        elif isinstance(renderable, Text) and terminal_safe(renderable.plain) != renderable.plain:
            renderable = renderable.copy()
            renderable.plain = terminal_safe(renderable.plain)
        for segment in super().render(renderable, options):
            if segment.control is None and segment.text != (safe := terminal_safe(segment.text)):
                segment = Segment(safe, segment.style)
            yield segment
