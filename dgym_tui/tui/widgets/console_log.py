"""The console's scroll-back: a RichLog that wraps its lines again when its width changes.

A module of its own: Textual's RichLog imports rich.pretty and attrs (~25 ms), so the
console imports it only when the scroll-back is mounted, after the first frame.
"""

from __future__ import annotations

from collections import deque

from rich.text import Text
from textual.events import Resize
from textual.widgets import RichLog


class ConsoleLog(RichLog):
    """A RichLog that wraps its newest lines again when its width changes and keeps its
    newest line in view after any resize. (RichLog keeps each line at the width it was
    written at: after the terminal shrank, the ends of long lines were cut off.)

    Wrapping costs ~0.15 ms a line, so a resize wraps the newest entries up to
    :attr:`LINES_KEPT` lines again and drops the older ones from the scroll-back (one dim
    line says how many; the trajectory and the transcript keep everything)."""

    #: Lines (about) wrapped again after a resize: ~0.2 s on a loaded 2-core machine.
    LINES_KEPT = 1500

    def __init__(self, **kwargs) -> None:
        super().__init__(**kwargs)
        self._entries: deque[Text] = deque()
        self._wrap_width = 0

    def add(self, text: Text) -> None:
        """Write ``text`` at the end (without scrolling), keeping it to wrap again after a
        resize."""
        self._entries.append(text)
        self.write(text, scroll_end=False)

    def clear(self) -> ConsoleLog:
        self._entries.clear()
        return super().clear()

    def on_resize(self, event: Resize) -> None:  # RichLog's own on_resize runs after this
        width = self.scrollable_content_region.width
        if width and self._wrap_width and width != self._wrap_width:
            self._wrap_again(width)
        if width and self._wrap_width:
            self.scroll_end(animate=False, immediate=False)
        self._wrap_width = width or self._wrap_width

    def _wrap_again(self, width: int) -> None:
        kept: list[Text] = []
        lines = 0
        for text in reversed(self._entries):
            if lines >= self.LINES_KEPT:
                break
            kept.append(text)
            lines += sum(len(line) // width + 1 for line in text.plain.split("\n"))
        dropped = len(self._entries) - len(kept)
        self.clear()
        if dropped:
            self.add(Text(f"[{dropped} older entries dropped when the console was resized]",
                          style="dim italic"))
        for text in reversed(kept):
            self.add(text)
