"""The progress bar of ``dgym run``: done / running / failed, rate, ETA, cost so far."""

from __future__ import annotations

import threading
import time
from typing import TYPE_CHECKING, Any

from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    ProgressColumn,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)
from rich.text import Text

from dgym_tui.core.safetext import one_line

if TYPE_CHECKING:
    from dgym_tui.runs.runner import TaskStatus


class _RateColumn(ProgressColumn):
    """Episodes per minute since the bar started."""

    def render(self, task: Any) -> Text:
        elapsed = task.elapsed or 0.0
        rate = task.completed / elapsed * 60 if elapsed > 0 and task.completed else 0.0
        return Text(f"{rate:.1f} ep/min", style="progress.data.speed")


class RunProgress:
    """A rich progress bar over the episodes of one run; a :class:`~dgym_tui.runs.executors.local.Listener`.

    Shows episodes done / total, how many run now and how many failed (state
    ``error``), the rate (episodes per minute), the ETA and the LLM cost so
    far (US$, of finished episodes). Thread-safe: executors report from
    worker threads. Use as a context manager.

    Args:
        total: episodes this run will execute.
        console: the ``rich.console.Console`` to draw on.
        enabled: False draws nothing (``--no-progress``) but still counts.
    """

    def __init__(self, total: int, console: Any = None, enabled: bool = True) -> None:
        self._lock = threading.Lock()
        self.running: set[str] = set()
        self.done = self.failed = self.resolved = 0
        self.cost = 0.0
        self.started_at = time.monotonic()
        self._bar = Progress(
            TextColumn("[bold]episodes"), BarColumn(), MofNCompleteColumn(),
            TextColumn("{task.fields[counts]}"), _RateColumn(), TextColumn("ETA"),
            TimeRemainingColumn(), TimeElapsedColumn(), TextColumn("{task.fields[last]}", markup=False),
            console=console, disable=not enabled, transient=False)
        self._id = self._bar.add_task("episodes", total=total, counts=self._counts(), last="")

    def __enter__(self) -> RunProgress:
        self._bar.__enter__()
        return self

    def __exit__(self, *exc: Any) -> None:
        self._bar.__exit__(*exc)

    def _counts(self) -> str:
        return (f"{len(self.running)} running, {self.failed} failed, "
                f"{self.resolved} resolved, ${self.cost:.4f}")

    def started(self, name: str) -> None:
        """Count ``name`` as running."""
        with self._lock:
            self.running.add(name)
            self._bar.update(self._id, counts=self._counts())

    def finished(self, status: TaskStatus) -> None:
        """Count ``status`` as done (failed when its state is ``error``), add its cost."""
        with self._lock:
            self.running.discard(status.task)
            self.done += 1
            self.failed += status.state == "error"
            self.resolved += bool(status.resolved)
            self.cost += status.cost
            mark = "resolved" if status.resolved else status.state
            self._bar.update(self._id, advance=1, counts=self._counts(),
                             last=one_line(f"{status.task}: {mark}"))  # a folder's name: data
