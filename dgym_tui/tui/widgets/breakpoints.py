"""The breakpoints pane: every breakpoint with its condition and hit count.

Keys (pane focused): ``enter`` enables / disables, ``delete`` removes, ``c``
edits the condition. Each change is a pdb command the app runs through the
session (so it is recorded like any action).
"""

from __future__ import annotations

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
        self.add_columns(*(Text(heading) for heading in ("", "where", "condition", "hits")))

    def show_rows(self, rows: list[Row]) -> None:
        """List ``rows`` (keeps the cursor row when it still exists)."""
        keep = self.cursor_row
        self.rows_shown = rows
        self.clear()
        for row in rows:
            mark = Text("●" if row.enabled else "○",
                        style="bold red" if row.enabled else "dim")
            self.add_row(mark, Text(one_line(f"{row.path}:{row.line}")),  # Text: a str cell
                         Text(one_line(row.condition or "")),  # would be read as markup
                         "" if row.hits is None else str(row.hits))
        if rows:
            self.move_cursor(row=min(keep, len(rows) - 1))

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
