"""A scroll bar that is drawn again only when what it shows changed.

Textual redraws a scroll bar whenever its position or the length of what it scrolls
changes. The console's grows by a few lines at each step and follows its end, so its thumb
stays in the same eighths of a cell for many steps, yet each step's frame drew its rows
again (~0.7 ms of the app's thread at load 4, docs/performance.md).
:class:`SteadyScrollBar` draws what Textual would and hands back the same rows as long as
the bar's cells (Textual's own ``ScrollBarRender.render_bar``), its colours and the
screen's line filters are the same.
"""

from __future__ import annotations

from typing import Any

from rich.style import Style
from textual.geometry import Region
from textual.scrollbar import ScrollBar, ScrollBarRender
from textual.strip import Strip


class SteadyScrollBar(ScrollBar):
    """Textual's ``ScrollBar``, whose rows are kept while they would be drawn the same."""

    _drawn: tuple[Any, list[Strip]] | None = None

    def render_lines(self, crop: Region) -> list[Strip]:
        look = self._look(crop)
        drawn = self._drawn
        if look is not None and drawn is not None and drawn[0] == look:
            return drawn[1]
        strips = super().render_lines(crop)
        self._drawn = None if look is None else (look, strips)
        return strips

    def _look(self, crop: Region) -> tuple[Any, ...] | None:
        """What the bar's rows in ``crop`` depend on: its size, its cells as Textual lays
        them out, their colours and the line filters; None when that cannot be told (a
        renderer other than Textual's own: always drawn)."""
        bar = self.render()
        if type(bar) is not ScrollBarRender or not isinstance(bar.style, Style):
            return None
        width, height = self.size
        length, thickness = (height, width) if self.vertical else (width, height)
        style = bar.style
        cells = ScrollBarRender.render_bar(
            size=length, virtual_size=bar.virtual_size, window_size=bar.window_size,
            position=bar.position, thickness=thickness, vertical=bar.vertical,
            **({"back_color": style.bgcolor} if style.bgcolor else {}),
            **({"bar_color": style.color} if style.color else {}))
        return (crop, self.size, style, tuple(cells.segments), self.background_colors,
                tuple(self.get_line_filters()), self.styles.opacity)


__all__ = ["SteadyScrollBar"]
