"""The status bar: task, step / budget, mode, tests, tokens and cost, and a busy spinner."""

from __future__ import annotations

from dataclasses import dataclass, replace

from rich.text import Text
from textual.app import ComposeResult
from textual.containers import Horizontal
from textual.widgets import LoadingIndicator, Static


@dataclass
class Status:
    """What the status bar shows.

    Attributes:
        task: task name.
        step: turns done; budget: the step budget (0: unknown).
        mode: session mode or ``"replay"``.
        passed / total: tests passed / counted in the last eval (total 0: no eval yet).
        tokens: prompt + completion tokens so far (shown only when an agent runs).
        cost: US dollars so far.
        agent: True when an agent is part of the session.
        extra: free text appended at the end (e.g. ``"done: submitted"``).
    """

    task: str = ""
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
        text = Text.assemble((f" {self.task or '-'} ", "bold"), "│ ", step, "│ ",
                             (f"{self.mode} ", "bold"), "│ ")
        if self.evaluated:
            ok = self.total > 0 and self.passed == self.total
            text.append(f"tests {self.passed}/{self.total} ", style="green" if ok else "red")
        else:
            text.append("tests -/- ")
        if self.agent:
            text.append(f"│ {self.tokens} tok ${self.cost:.4f} ")
        if self.extra:
            text.append(f"│ {self.extra}")
        return text


class StatusBar(Horizontal):
    """One-line status bar with a spinner shown while something runs."""

    DEFAULT_CSS = """
    StatusBar { height: 1; background: $panel; }
    StatusBar > #status-text { width: 1fr; height: 1; }
    StatusBar > #status-busy { width: auto; height: 1; color: $warning; }
    StatusBar > LoadingIndicator { width: 6; height: 1; min-height: 1; display: none; }
    StatusBar.-busy > LoadingIndicator { display: block; }
    """

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.status = Status()

    def compose(self) -> ComposeResult:
        yield Static(self.status.render(), id="status-text")
        yield Static("", id="status-busy")
        yield LoadingIndicator()

    def update_status(self, **changes) -> None:
        """Change some :class:`Status` fields and redraw."""
        self.status = replace(self.status, **changes)
        self.query_one("#status-text", Static).update(self.status.render())

    def set_busy(self, label: str | None) -> None:
        """Show the spinner with ``label`` (e.g. ``"eval"``), or hide it with None."""
        self.set_class(bool(label), "-busy")
        self.query_one("#status-busy", Static).update(f" {label}… " if label else "")

    @property
    def text(self) -> str:
        """The plain status line (for tests)."""
        return self.status.render().plain
