"""The Debug tab: where pdb stands, the variables, the stack and the breakpoints panes."""

from __future__ import annotations

from typing import Any

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.containers import Vertical
from textual.events import Click
from textual.widgets import Static

from dgym_tui.core.safetext import one_line
from dgym_tui.tui.widgets.breakpoints import BreakpointsPane, rows_from
from dgym_tui.tui.widgets.stack import StackPane
from dgym_tui.tui.widgets.variables import VariablesPane


def where_text(inspection: Any) -> Text:
    """The selected frame, or a note with its full path:line when it lies outside the
    repository (the line wraps: a side column is narrower than a site-packages path)."""
    frame = inspection.frame if inspection is not None else None
    if frame is None:
        return Text("pdb is not stopped", style="dim")
    if frame.relative is None:
        return Text(f"frame outside the repository: {one_line(frame.path)}:{frame.line}",
                    style="bold yellow")
    return Text(f"{frame.function} · {one_line(frame.relative)}:{frame.line}", style="bold")


class DebugPanel(Vertical):
    """Variables (1fr), stack and breakpoints, stacked as in pudb. Each pane keeps its own
    state; :meth:`show` hands them one stop's inspection."""

    DEFAULT_CSS = """
    DebugPanel { height: 1fr; }
    DebugPanel > #debug-where { height: 1; padding: 0 1; background: $panel; }
    DebugPanel > #debug-where.-outside { height: auto; max-height: 4; }
    DebugPanel > .pane-title { height: 1; padding: 0 1; color: $text-muted;
                               background: $panel; }
    DebugPanel > #variables-box { height: 1fr; background: $surface; }
    DebugPanel > #variables-box:focus-within { background-tint: $foreground 5%; }
    """

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        # the panes :meth:`show` hands each stop to, made once (a query each was a walk of
        # the tab's widgets at every step)
        self._where = Static(where_text(None), id="debug-where")
        self._variables = VariablesPane(id="variables")
        self._stack = StackPane(id="stack")
        self._breakpoints = BreakpointsPane(id="breakpoints")

    def compose(self) -> ComposeResult:
        yield self._where
        # the tree is as tall as its rows, in a box that fills the pane's room: a stop
        # that rebuilds the tree (another frame) draws its rows, not the pane's blank rows
        with Vertical(id="variables-box"):
            yield self._variables
        yield Static("stack (enter: select)", classes="pane-title")
        yield self._stack
        yield Static("breakpoints (enter: on/off · del · c: condition)", classes="pane-title")
        yield self._breakpoints

    @on(Click, "#variables-box")
    def _focus_variables(self) -> None:
        """A click below the variables' rows focuses them, as a click in the pane did."""
        self._variables.focus()

    def show(self, inspection: Any, result: Any, replay: bool = False) -> None:
        """Show one stop: ``inspection`` (None: pdb not stopped / not recorded) and the
        StepResult ``result`` for the breakpoints when pdb holds none."""
        note = where_text(inspection)
        if replay:
            note = Text("replay: variables and stack are not recorded; f forks here",
                        style="dim")
        # one row of fixed size (no layout of the whole screen for it), except the note of
        # a frame outside the repository: its path wraps (the side column is narrow)
        where = self._where
        outside = not replay and inspection is not None and inspection.frame is not None \
            and inspection.frame.relative is None
        where.update(note, layout=outside or where.has_class("-outside"))
        where.set_class(outside, "-outside")
        self._variables.show_inspection(inspection)
        self._stack.show_inspection(inspection)
        rows, pane = rows_from(result, inspection), self._breakpoints
        if rows != pane.rows_shown:  # most stops change no breakpoint: no table rebuilt
            pane.show_rows(rows)

    def show_breakpoints(self, result: Any) -> None:
        """Refresh the breakpoints from ``result`` after a step that was not pdb's (the
        other panes keep the last stop)."""
        pane = self._breakpoints
        if not any(row.number is not None for row in pane.rows_shown):
            pane.show_rows(rows_from(result, None))
