"""One base style per frame for widgets that draw line by line.

Textual's ``RichLog`` and ``Tree`` ask for the widget's ``rich_style`` once per line they
draw; each time Textual walks the widget's ancestors and merges their styles (~0.1 ms
a line here). A step's frame redraws every visible line of the console (it scrolled) and
of the variables: half of the console's drawing was that walk (docs/performance.md).
Within one ``render_lines`` call nothing can change the style, so it is computed once.
"""

from __future__ import annotations

from rich.style import Style
from textual.geometry import Region
from textual.strip import Strip


class StyleOncePerRender:
    """Mixin for a Textual widget (put it first in the bases): ``rich_style`` is computed
    once per :meth:`render_lines` call and reused for each line drawn in it; outside a
    call it is Textual's own."""

    _style_in_render: Style | None = None

    def render_lines(self, crop: Region) -> list[Strip]:
        self._style_in_render = None
        self._style_in_render = self.rich_style
        try:
            return super().render_lines(crop)  # type: ignore[misc]
        finally:
            self._style_in_render = None

    @property
    def rich_style(self) -> Style:
        cached = self._style_in_render
        if cached is not None:
            return cached
        return super().rich_style  # type: ignore[misc]


__all__ = ["StyleOncePerRender"]
