"""The status bar: task, sandbox, step / budget, mode, tests, tokens and cost, and a busy
spinner with its label and, after a second, the seconds it has run (of its limit, if any)."""

from __future__ import annotations

import time
from dataclasses import dataclass, replace
from typing import ClassVar

from rich.text import Text
from textual.app import ComposeResult, RenderResult
from textual.containers import Horizontal
from textual.reactive import Reactive, reactive
from textual.timer import Timer
from textual.widget import Widget
from textual.widgets import LoadingIndicator

from dgym_tui.core.safetext import one_line


@dataclass
class Status:
    """What the status bar shows.

    Attributes:
        task: task name.
        sandbox: the terminal in force (``"bwrap"``, ``"docker"``, ``"local"``: shown in
            red as unsandboxed); "" shows nothing (a replay).
        step: turns done; budget: the step budget (0: unknown).
        mode: session mode or ``"replay"``.
        passed / total: tests passed / counted in the last eval (total 0: no eval yet).
        tokens: prompt + completion tokens so far (shown only when an agent runs).
        cost: US dollars so far.
        agent: True when an agent is part of the session.
        extra: free text shown after the task (e.g. ``"done: submitted"``, a study's clock).
    """

    task: str = ""
    sandbox: str = ""
    step: int = 0
    budget: int = 0
    mode: str = "human"
    passed: int = 0
    total: int = 0
    evaluated: bool = False
    tokens: int = 0
    cost: float = 0.0
    agent: bool = False
    extra: str = ""

    def render(self) -> Text:
        """Return the status line as Rich Text."""
        step = f"step {self.step}/{self.budget} " if self.budget else f"step {self.step} "
        text = Text.assemble((f" {one_line(self.task) or '-'} ", "bold"), "│ ")
        if self.extra:  # early: the line is cut at the screen's edge (a study's clock at 80 columns)
            text.append(f"{self.extra} │ ")
        if self.sandbox == "local":
            text.append("local: unsandboxed ", style="bold red")
            text.append("│ ")
        elif self.sandbox:
            text.append(f"{self.sandbox} │ ")
        text.append_text(Text.assemble(step, "│ ", (f"{self.mode} ", "bold"), "│ "))
        if self.evaluated:
            ok = self.total > 0 and self.passed == self.total
            text.append(f"tests {self.passed}/{self.total} ", style="green" if ok else "red")
        else:
            text.append("tests -/- ")
        if self.agent:
            text.append(f"│ {self.tokens} tok ${self.cost:.4f} ")
        return text


class StatusLine(Widget):
    """The status text, and the busy label at its right end in the theme's warning colour.

    One widget of fixed size (the bar's width less the spinner's): a change of either text
    redraws one row and never lays the screen out again.
    """

    COMPONENT_CLASSES: ClassVar[set[str]] = {"status-line--busy"}
    DEFAULT_CSS = """
    StatusLine { width: 1fr; height: 1; }
    StatusLine > .status-line--busy { color: $warning; }
    """

    text: Reactive[Text] = reactive(Text, layout=False)
    busy: Reactive[str] = reactive("", layout=False)
    #: when the busy label was set (time.monotonic()) and its limit in seconds (None: none)
    since: float = 0.0
    limit: float | None = None

    def render(self) -> Text:
        if not self.busy:
            return self.text
        elapsed = int(time.monotonic() - self.since)
        clock = "" if elapsed < 1 else (
            f" {elapsed}/{self.limit:g} s" if self.limit else f" {elapsed} s")
        label = Text(f" {self.busy}…{clock} ",
                     style=self.get_component_rich_style("status-line--busy"))
        room = max(self.size.width - label.cell_len, 0)
        line = self.text.copy()
        line.truncate(room, overflow="ellipsis", pad=True)
        return line + label


class StatusSpinner(LoadingIndicator):
    """Textual's LoadingIndicator, blank and still while nothing runs: starting or stopping
    it redraws its six cells and lays nothing out again."""

    spinning: Reactive[bool] = reactive(False)

    def on_mount(self) -> None:
        self.watch_spinning(self.spinning)  # LoadingIndicator starts its frames when mounted

    def watch_spinning(self, spinning: bool) -> None:
        self.auto_refresh = 1 / 16 if spinning else None  # LoadingIndicator's own rate

    def render(self) -> RenderResult:
        return super().render() if self.spinning else ""


class StatusBar(Horizontal):
    """One-line status bar; while something runs, its label and a spinner at the right.

    Starting or stopping the spinner changes no widget's size: a step's end lays the
    screen out only when something else changed size.
    """

    DEFAULT_CSS = """
    StatusBar { height: 1; background: $panel; }
    StatusBar > StatusSpinner { width: 6; height: 1; min-height: 1; }
    """

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.status = Status()
        self._clock: Timer | None = None  # redraws the busy label's seconds
        # made once: a step changes both (a query each was a walk of the bar's children)
        self._line = StatusLine(id="status-text")
        self._spinner = StatusSpinner()

    def compose(self) -> ComposeResult:
        yield self._line
        yield self._spinner

    def on_mount(self) -> None:
        self._line.text = self.status.render()

    def update_status(self, **changes) -> None:
        """Change some :class:`Status` fields and redraw."""
        self.status = replace(self.status, **changes)
        self._line.text = self.status.render()

    def set_busy(self, label: str | None, limit: float | None = None) -> None:
        """Show the spinner with ``label`` (e.g. ``"eval"``), or hide it with None. A new
        label starts its clock: after a second the bar shows the seconds it has run
        (``12 s``; with ``limit``, the seconds it may run: ``12/120 s``)."""
        line = self._line
        if label and (label != line.busy or limit != line.limit):
            line.since, line.limit = time.monotonic(), limit
        line.busy = label or ""
        self._spinner.spinning = bool(label)
        if label and self._clock is None:
            self._clock = self.set_interval(1, self._tick)
        elif not label and self._clock is not None:
            self._clock.stop()
            self._clock = None

    def _tick(self) -> None:
        self._line.refresh()

    @property
    def text(self) -> str:
        """The plain status line (for tests)."""
        return self.status.render().plain
