"""The breakpoints pane: every breakpoint with its condition and hit count.

Keys (pane focused): ``enter`` enables / disables, ``delete`` removes, ``c``
edits the condition. Each change is a pdb command the app runs through the
session (so it is recorded like any action).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any, ClassVar

from rich.text import Text
from textual.binding import Binding, BindingType
from textual.message import Message
from textual.widgets import DataTable

from dgym_tui.core.safetext import one_line


@dataclass
class Row:
    """One breakpoint as listed: pdb ``number`` (None while no pdb session runs)."""

    path: str
    line: int
    condition: str | None
    enabled: bool = True
    hits: int | None = None
    number: int | None = None


def rows_from(result: Any, inspection: Any) -> list[Row]:
    """Breakpoints to list: pdb's own (with numbers and hits) when it is stopped, else the
    episode's store as the last StepResult reports it."""
    if inspection is not None:
        return [Row(b.path, b.line, b.condition, b.enabled, b.hits, b.number)
                for b in inspection.breakpoints]
    if result is None:
        return []
    return [Row(p, int(n), result.conditions.get(f"{p}:{n}")) for p, n in result.breakpoints]


#: the table's column headings
_HEADINGS = ("", "where", "condition", "hits")


def _hits_text(row: Row) -> str:
    """The hits cell of ``row`` (empty when pdb does not hold the breakpoint)."""
    return "" if row.hits is None else str(row.hits)


def _discard(cache: Any, position: int, value: object) -> None:
    """Drop the entries of a Textual ``LRUCache`` keyed by tuples holding ``value`` at
    ``position``."""
    for key in [key for key in cache.keys() if key[position] == value]:
        cache.discard(key)


class BreakpointsPane(DataTable):
    """Messages: BreakpointsPane.Command (a pdb command to run), BreakpointsPane.EditCondition."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("enter", "toggle", "Enable/disable", show=False),
        Binding("delete,backspace", "delete", "Delete", show=False),
        Binding("c", "condition", "Condition", show=False),
    ]

    DEFAULT_CSS = """
    BreakpointsPane { height: 7; background: $surface; }
    """

    @dataclass
    class Command(Message):
        """Run pdb ``command`` (e.g. ``disable 2``) through the session."""

        command: str

    @dataclass
    class EditCondition(Message):
        """Ask the person for a new condition of ``row``."""

        row: Row

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id, cursor_type="row", zebra_stripes=False)
        self.rows_shown: list[Row] = []

    def on_mount(self) -> None:
        # Text, not markup: markup would import rich's emoji table before the first frame
        self.add_columns(*(Text(heading) for heading in _HEADINGS))

    def show_rows(self, rows: list[Row]) -> None:
        """List ``rows`` (keeps the cursor row when it still exists). Rows that differ from
        those shown only in their hit counts (a stop at a breakpoint) have those cells
        changed in place."""
        if self._hits_in_place(rows):
            return
        keep = self.cursor_row
        self.rows_shown = rows
        self.clear()
        for row in rows:
            mark = Text("●" if row.enabled else "○",
                        style="bold red" if row.enabled else "dim")
            self.add_row(mark, Text(one_line(f"{row.path}:{row.line}")),  # Text: a str cell
                         Text(one_line(row.condition or "")),  # would be read as markup
                         _hits_text(row))
        if rows:
            self.move_cursor(row=min(keep, len(rows) - 1))

    def _hits_in_place(self, rows: list[Row]) -> bool:
        """Show the new hit counts of ``rows`` and return True when nothing else changed and
        the hits column keeps its width; else change nothing and return False.

        DataTable's own ``update_cell`` drops the rendering of every row and the header
        (its caches are keyed by one update counter) and redraws the whole table; here only
        the changed rows' renderings are dropped and only those rows redrawn. Uses
        DataTable's caches and row locations: Textual is pinned in constraints.txt, and
        tests/test_tui_breakpoint_hits.py checks the rows drawn and the cells shown."""
        shown = self.rows_shown
        if (len(rows) != len(shown) or not rows or len(self.ordered_columns) != len(_HEADINGS)
                or any(dataclasses.replace(row, hits=None) != dataclasses.replace(was, hits=None)
                       for row, was in zip(rows, shown, strict=True))):
            return False
        column = self.ordered_columns[-1]
        texts = [_hits_text(row) for row in rows]
        if max([column.label.cell_len, *map(len, texts)]) != column.content_width:
            return False  # a rebuild would size the column anew
        changed = [index for index, (row, was) in enumerate(zip(rows, shown, strict=True))
                   if row.hits != was.hits]
        self.rows_shown = rows
        for index in changed:
            row_key = self.ordered_rows[index].key
            self._data[row_key][column.key] = texts[index]
            _discard(self._cell_render_cache, 0, row_key)
            _discard(self._row_render_cache, 0, row_key)
            _discard(self._row_renderable_cache, 1, index)  # keyed (update count, row index)
        if changed:
            self._line_cache.clear()  # keyed by y: strips joined from the row renderings
            for index in changed:
                self.refresh_row(index)
        return True

    def _selected(self) -> Row | None:
        if not self.rows_shown or not 0 <= self.cursor_row < len(self.rows_shown):
            return None
        return self.rows_shown[self.cursor_row]

    def _numbered(self, row: Row | None) -> Row | None:
        if row is not None and row.number is None:
            self.notify("pdb is not running: start it (c or n) to change this breakpoint",
                        severity="warning")
            return None
        return row

    def action_toggle(self) -> None:  # type: ignore[override]  # a key action
        row = self._numbered(self._selected())
        if row is not None:
            self.post_message(self.Command(f"{'disable' if row.enabled else 'enable'} "
                                           f"{row.number}"))

    def action_delete(self) -> None:
        row = self._selected()
        if row is not None:
            self.post_message(self.Command(f"cl {row.path}:{row.line}"))

    def action_condition(self) -> None:
        row = self._numbered(self._selected())
        if row is not None:
            self.post_message(self.EditCondition(row))
