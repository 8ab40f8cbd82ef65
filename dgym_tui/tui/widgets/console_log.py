"""The console's scroll-back: a RichLog that wraps its lines again when its width changes
and fits pytest's separator lines (``==== FAILURES ====``) to its width.

A module of its own: Textual's RichLog imports rich.pretty and attrs (~25 ms), so the
console imports it only when the scroll-back is mounted, after the first frame.
"""

from __future__ import annotations

import re
from collections import deque
from typing import Any

from rich.text import Text
from textual.events import Resize
from textual.geometry import Size
from textual.reactive import Reactive
from textual.scrollbar import ScrollBar
from textual.widgets import RichLog

from dgym_tui.tui.widgets.line_style import StyleOncePerRender
from dgym_tui.tui.widgets.scroll_bar import SteadyScrollBar

#: A separator line of pytest's: one of ``=_-`` repeated, maybe with a title in the middle.
_RULE = re.compile(r"^([=_-])\1{2,}(?: (.+) \1{2,})?$")


def fit_rules(text: Text, width: int) -> Text:
    """``text`` with each separator line longer than ``width`` cells shortened to ``width``
    (its title kept in the middle), so that it does not wrap onto a second line. The eval
    runs at 80 columns (what the agent reads); the console is often narrower. Other lines
    are left as they are; a fitted line keeps ``text``'s base style."""
    plain = text.plain
    if width < 8 or not any(len(line) > width and _RULE.match(line)
                            for line in plain.split("\n")):
        return text
    out = Text(style=text.style, end=text.end)
    offset = 0
    for number, line in enumerate(plain.split("\n")):
        if number:
            out.append("\n")
        match = _RULE.match(line) if len(line) > width else None
        if match is None:
            out.append_text(text[offset:offset + len(line)])
        else:
            char, title = match.group(1), match.group(2) or ""
            room = width - len(title) - 2
            if not title:
                out.append(char * width)
            elif room >= 2:
                out.append(f"{char * (room // 2)} {title} {char * (room - room // 2)}")
            else:  # a title wider than the console: it wraps as it is
                out.append(title)
        offset += len(line) + 1
    return out


class ConsoleLog(StyleOncePerRender, RichLog):
    """A RichLog that wraps its newest lines again when its width changes and keeps its
    newest line in view after any resize. (RichLog keeps each line at the width it was
    written at: after the terminal shrank, the ends of long lines were cut off.)

    Wrapping costs ~0.15 ms a line, so a resize wraps the newest entries up to
    :attr:`LINES_KEPT` lines again and drops the older ones from the scroll-back (one dim
    line says how many; the trajectory and the transcript keep everything)."""

    #: Lines (about) wrapped again after a resize: ~0.2 s on a loaded 2-core machine.
    LINES_KEPT = 1500

    #: Textual's own ``virtual_size`` lays the whole screen out again when it changes: each
    #: line written (a step's echo and answer) cost a reflow of ~60 widgets and a redraw of
    #: every visible scroll bar. The log's size on screen never depends on its content, so
    #: here only its own scroll bars follow (a scroll bar that appears or goes still lays
    #: the screen out: ``show_vertical_scrollbar``).
    virtual_size: Reactive[Size] = Reactive(Size(0, 0), layout=False, repaint=False)

    def __init__(self, **kwargs) -> None:
        super().__init__(**kwargs)
        self._entries: deque[Text] = deque()
        self._wrap_width = 0
        #: while :meth:`add_all` writes: the size before its first line (else None)
        self._size_before: Size | None = None
        self._adding_all = False

    @property
    def vertical_scrollbar(self) -> ScrollBar:
        """Textual's vertical scroll bar (made on first use, as Textual makes it), of a
        kind that is drawn again only when its cells change: the log grows at each step,
        which moved the thumb by less than an eighth of a cell but drew the bar's rows."""
        bar = self._vertical_scrollbar
        if bar is None:
            bar = SteadyScrollBar(vertical=True, name="vertical",
                                  thickness=self.scrollbar_size_vertical)
            bar.display = False
            self._vertical_scrollbar = bar
            self.app._start_widget(self, bar)
        return bar

    def watch_virtual_size(self, old: Size, size: Size) -> None:
        if self._adding_all:  # add_all follows the size once, after its last line
            if self._size_before is None:
                self._size_before = old
            return
        self._scroll_update(size)  # the scroll bars' visibility, length and position
        if size.height > old.height:
            # lines added at the end: only the rows that show them change (Textual redraws
            # every row of the log for a bare refresh, ~0.1 ms each)
            self.refresh_lines(old.height, size.height - old.height)
        else:
            self.refresh()

    def watch_scroll_y(self, old: float, new: float) -> None:
        """Textual's, which redraws every row of the log when it scrolls; here the rows
        whose line is already drawn are moved up (or down) with it, and only the rows that
        show another line are drawn again (a step's answer scrolls the console by its
        lines: 3 rows drawn for an ``n``, not all of them)."""
        rows = self._rows_drawn()
        super().watch_scroll_y(old, new)
        if rows is not None:
            self._keep_rows(rows, round(new) - round(old))

    def _rows_drawn(self) -> dict[int, Any] | None:
        """The log's rows drawn and still valid (row: Textual's line of it), or None when
        they cannot be moved: Textual's styles cache is not the one this was written for,
        or a row is not the line of the same number (a border or padding)."""
        cache = getattr(self, "_styles_cache", None)
        drawn, dirty = getattr(cache, "_cache", None), getattr(cache, "_dirty_lines", None)
        if not isinstance(drawn, dict) or not isinstance(dirty, set) \
                or self.content_offset != (0, 0):
            return None
        return {row: line for row, line in drawn.items() if row not in dirty}

    def _keep_rows(self, rows: dict[int, Any], shift: int) -> None:
        """After a scroll by ``shift`` lines (which marked every row to draw again): row
        ``y`` takes the line drawn at row ``y + shift`` before, and only the rows left
        without one are drawn."""
        height = self.size.height
        if not shift or abs(shift) >= height:
            return
        cache = self._styles_cache
        kept = {row: rows[row + shift] for row in range(height) if row + shift in rows}
        cache._cache = kept
        cache._dirty_lines = set(range(height)) - kept.keys()

    def add(self, text: Text) -> None:
        """Write ``text`` at the end (without scrolling), keeping it to wrap again after a
        resize."""
        self._entries.append(text)
        self.write(text, scroll_end=False)

    def add_all(self, texts: list[Text]) -> None:
        """:meth:`add` each of ``texts`` in turn, the scroll bars and the rows to draw
        following the log's size once, after the last one (each size change cost ~0.25 ms
        of Textual's scroll updates: a step's echo and answer are written together)."""
        if len(texts) < 2:
            for text in texts:
                self.add(text)
            return
        self._adding_all, self._size_before = True, None
        try:
            for text in texts:
                self.add(text)
        finally:
            self._adding_all = False
            before, self._size_before = self._size_before, None
        if before is not None and before != self.virtual_size:
            self.watch_virtual_size(before, self.virtual_size)

    def write(self, content: Any, *args: Any, **kwargs: Any) -> ConsoleLog:
        """RichLog's write; once the width is known, pytest's separator lines are fitted to
        it (:func:`fit_rules`; a resize writes the entries again, fitted anew)."""
        width = self.scrollable_content_region.width
        if isinstance(content, Text) and self._size_known and width:
            content = fit_rules(content, width)
        return super().write(content, *args, **kwargs)

    def clear(self) -> ConsoleLog:
        self._entries.clear()
        return super().clear()

    def _size_updated(self, size: Size, virtual_size: Size, container_size: Size,
                      layout: bool = True) -> bool:
        """Textual's call when a layout gives the log its size. Textual 8.2 at times sets a
        newly mounted log's size without sending it a Resize event (3 of 20 runs of the
        80x24 Debug snapshot on a loaded machine): RichLog kept every line waiting for
        that event, and the console stayed blank until the next layout change. The first
        size is taken here too."""
        changed = super()._size_updated(size, virtual_size, container_size, layout)
        if size.width and not self._size_known:
            self.call_later(self._take_first_size)
        return changed

    def _take_first_size(self) -> bool:
        """Once the log has a width: draw the lines written before it (their scroll to the
        end had no size to go by) and show the newest. True when it did (the first time)."""
        width = self.scrollable_content_region.width
        if self._size_known or not width:
            return False
        self._size_known = True  # RichLog's on_resize then has nothing left to draw
        self._wrap_width = width
        while self._deferred_renders:
            self.write(*self._deferred_renders.popleft())
        self.scroll_end(animate=False, immediate=True, x_axis=False)
        return True

    def on_resize(self, event: Resize) -> None:  # RichLog's own on_resize runs after this
        width = self.scrollable_content_region.width
        if not self._take_first_size() and width and self._wrap_width \
                and width != self._wrap_width:
            self._wrap_again(width)
        if width:
            # in this frame (the size and the lines are known now), and again after the
            # next refresh: a scroll bar that came or went changes the height shown
            self.scroll_end(animate=False, immediate=True, x_axis=False)
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
