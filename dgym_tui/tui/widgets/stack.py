"""The stack pane: pdb's frames, innermost first; enter / click selects one."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, NamedTuple

from rich.text import Text
from textual.message import Message
from textual.visual import VisualType
from textual.widgets import OptionList
from textual.widgets.option_list import Option

from dgym_tui.core.safetext import one_line

#: Frames listed at most (the innermost ones; a test runner's stack is deep).
MAX_FRAMES = 40


class _Row(NamedTuple):
    """One frame as its row shows it."""

    index: int  # type: ignore[assignment]  # pdb's stack index (shadows tuple.index)
    function: str
    where: str  # repository-relative path, or the full path of a library frame
    library: bool  # outside the repository: dim
    line: int
    here: bool  # pdb's current frame: marked

    def prompt(self) -> Text:
        text = Text("▶ " if self.here else "  ", style="bold")
        text.append(one_line(self.function), style="dim" if self.library else "bold")
        text.append(f"  {one_line(self.where)}:{self.line}", style="dim" if self.library else "")
        return text


class StackPane(OptionList):
    """The stack of the stopped pdb. Library frames (outside the repository) are dim.

    Messages:
        StackPane.FrameChosen: the person chose the frame at ``index`` (pdb's stack index).
    """

    DEFAULT_CSS = """
    StackPane { height: 9; background: $surface; border: none; padding: 0; }
    """

    @dataclass
    class FrameChosen(Message):
        """Select pdb's frame ``index`` (and move pdb there with up / down)."""

        index: int
        current: int

    def __init__(self, *, id: str | None = None) -> None:
        # compact: no focus border, so the rows do not move when a click focuses the pane
        # (else that click selected the frame above the one clicked). Set without
        # OptionList's ``compact=True``, whose class toggle restyled the pane in this
        # constructor (~0.8 ms before the first frame), before its mount styled it again.
        super().__init__(id=id)
        self.set_reactive(OptionList.compact, True)
        self.add_class("-textual-compact", update=False)
        self.inspection: Any = None
        self._rows: list[_Row] = []  # the rows shown

    def show_inspection(self, inspection: Any) -> None:
        """List ``inspection``'s frames (None: empty).

        A stop with the same frames (functions and files: a step within the function, or
        up / down) changes only the rows whose line or marker moved; the list keeps its
        size and scroll position. Any other stop rebuilds it, with the options of the rows
        it already showed.
        """
        self.inspection = inspection
        if inspection is None or not inspection.frames:
            self._rows = []
            self.clear_options()
            self.add_option(Option(Text("(no stack: pdb is not stopped)", style="dim"),
                                   disabled=True))
            return
        frames = list(enumerate(inspection.frames))[::-1][:MAX_FRAMES]
        rows = [_Row(index, frame.function, frame.relative or frame.path, frame.relative is None,
                     frame.line, index == inspection.current) for index, frame in frames]
        if [row[:4] for row in rows] != [row[:4] for row in self._rows]:
            # a row shown before keeps its option and its prompt's visual (the frames a
            # test runner's stack keeps from one stop to the next); set_options: the list
            # is not measured empty first, as clear_options does
            kept = dict(zip(self._rows, self.options, strict=True)) if self._rows else {}
            if (len(rows) > self.container_size.height and not self.show_vertical_scrollbar
                    and self.styles.overflow_y == "auto" and self._laid_out()):
                # more rows than the pane has: the scroll bar will show (Textual's own
                # test); shown first, the rows are measured once, at the width it leaves
                self.show_vertical_scrollbar = True
            self.set_options([kept.get(row) or Option(row.prompt(), id=str(row.index))
                              for row in rows])
        else:
            for position, (row, before) in enumerate(zip(rows, self._rows, strict=True)):
                if row != before:
                    self.replace_option_prompt_at_index(position, row.prompt())
        self._rows = rows
        current = next((i for i, row in enumerate(rows) if row.here), 0)
        if self.highlighted == current:
            return
        was = self.highlighted
        if was is None:  # a new list
            self.highlighted = current
            return
        if not self._laid_out():  # hidden: OptionList's own way (it draws nothing now)
            self.highlighted = current
            return
        # OptionList redraws every row when the highlight moves (a reactive repaint); here
        # only the two rows it leaves and reaches are drawn again (u / d moves it each time)
        self.set_reactive(OptionList.highlighted, current)
        for index in (was, current):
            self._refresh_option(index)
        self.scroll_to_highlight()

    def _update_lines(self) -> None:
        """OptionList's, measured again when its scroll bar appeared or went meanwhile.

        OptionList measures the new options' heights at the width it has, then shows or
        hides its scroll bar for their total; it measures again only when the pane is
        resized, and a scroll bar is not a resize: a stop that made the stack taller than
        the pane kept heights measured two cells wider, and a frame's path wrapped into
        one row more than its option was given (its line number cut off)."""
        width = self.scrollable_content_region.width
        super()._update_lines()
        if self.scrollable_content_region.width != width and self._line_cache.lines:
            self._line_cache.clear()  # once: the scroll bar follows the new total
            self._option_render_cache.clear()
            super()._update_lines()

    def _replace_option_prompt(self, index: int, prompt: VisualType) -> None:
        """OptionList's, redrawing only this option's rows when its height stays the same.

        OptionList drops every option's rendering and redraws the whole list for one new
        prompt (~0.4 ms an option); a step changes one or two rows. Uses OptionList's
        render cache (keyed by the option first) and line tables: Textual is pinned in
        constraints.txt, and tests/test_tui_stop_redraw.py checks the rows drawn."""
        option = self.get_option_at_index(index)
        if not self._laid_out():
            # hidden (the side column below 100 columns, or after ]): no width to measure
            # the prompt at, and no line tables; drop the caches, as OptionList does
            option._set_prompt(prompt)
            self._clear_caches()
            return
        height = self._heights.get(index)
        option._set_prompt(prompt)
        padding = self.get_component_styles("option-list--option").padding
        width = self.scrollable_content_region.width - self._get_left_gutter_width()
        if height != self._get_visual(option).get_height(
                self.styles, width - padding.width):  # type: ignore[arg-type]  # as Textual calls it
            self._clear_caches()  # the rows below it move: OptionList's own way
            return
        cache = self._option_render_cache
        for key in [key for key in cache.keys() if key[0] is option]:
            cache.discard(key)
        self._refresh_option(index)

    def _laid_out(self) -> bool:
        """Whether the pane has a width to draw in (False while it or the side column is
        hidden: OptionList then keeps no line tables)."""
        padding = self.get_component_styles("option-list--option").padding
        width = self.scrollable_content_region.width - self._get_left_gutter_width()
        return width - padding.width > 0

    def _refresh_option(self, index: int) -> None:
        """Draw the rows of option ``index`` again (OptionList's line tables)."""
        self.refresh_lines(self._index_to_line[index], self._heights[index])

    def on_option_list_option_selected(self, event: OptionList.OptionSelected) -> None:
        event.stop()
        if self.inspection is not None and event.option.id is not None:
            self.post_message(self.FrameChosen(int(event.option.id), self.inspection.current))
