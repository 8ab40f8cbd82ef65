"""Episodes of the run browser as step lists that follow their file: one, or two side by side.

:class:`EpisodePane` shows one trajectory's steps (number, actor, action,
first line of the observation) and the whole selected step below; it reads the
file with :class:`dgym_tui.episode.follow.TrajectoryFollower` whenever a thread
watching it (:class:`dgym_tui.episode.follow.FileWatch`: inotify, else every
:data:`FOLLOW_SECONDS`) sees a write, so an episode that ``dgym run`` is still
writing gains its new steps as they are flushed (the cursor stays on the last
step while it was there; a finished episode opens at its first step; the watch
ends at the footer). :class:`EpisodeScreen` holds one pane, :class:`CompareScreen` two, whose
cursors move together: step N beside step N.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, ClassVar

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.message import Message
from textual.screen import Screen
from textual.widgets import DataTable, Footer, Static
from textual.worker import get_current_worker

from dgym_tui.core.safetext import one_line, strip_controls
from dgym_tui.episode.follow import FileWatch, TrajectoryFollower
from dgym_tui.tui.replay_model import applied_notes

#: Seconds between looks at a followed trajectory where there is no inotify (with it, a
#: flushed step is read at once).
FOLLOW_SECONDS = 0.25
#: Characters of an action or observation shown in the step table.
CELL_CHARS = 60


def action_text(action: Any) -> str:
    """``name(arg=value, ...)`` of a recorded action; ``(no action)`` for None."""
    if not isinstance(action, dict):
        return "(no action)"
    arguments = action.get("arguments") or {}
    args = ", ".join(f"{k}={json.dumps(v, ensure_ascii=False)}" for k, v in arguments.items()) \
        if isinstance(arguments, dict) else json.dumps(arguments)
    return f"{action.get('name', '?')}({args})"


def _cut(text: str) -> str:
    line = text.strip().split("\n", 1)[0]
    return line if len(line) <= CELL_CHARS else line[:CELL_CHARS - 1] + "…"


class EpisodePane(Vertical):
    """One trajectory: a title line, its steps, the selected step in full.

    Args:
        path: the trajectory file (it may still be written, or not exist yet).
        label: the title (e.g. ``task · agent × model``).
    """

    DEFAULT_CSS = """
    EpisodePane { width: 1fr; }
    EpisodePane .pane-title { height: 1; background: $boost; padding: 0 1; }
    EpisodePane DataTable { height: 1fr; }
    EpisodePane .pane-step { height: 1fr; border-top: solid $primary; padding: 0 1; }
    """

    def __init__(self, path: Path, label: str, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.follower = TrajectoryFollower(path)
        self.label = label
        self.live: bool | None = None  # still being written when first read (None: not read yet)

    def compose(self) -> ComposeResult:
        yield Static(self.label, classes="pane-title", markup=False)
        table: DataTable[str] = DataTable(cursor_type="row", zebra_stripes=True)
        for heading in ("step", "actor", "action", "observation"):
            table.add_column(heading, key=heading)
        yield table
        with VerticalScroll(classes="pane-step"):
            yield Static("", markup=False)

    @property
    def table(self) -> DataTable:
        """The step table."""
        return self.query_one(DataTable)

    class Changed(Message):
        """The followed file was written (posted from the watching thread)."""

    def on_mount(self) -> None:
        self.follow()
        if self.follower.footer is None:
            self.run_worker(self._watch, thread=True, group="follow")

    def _watch(self) -> None:
        """Thread: wait for writes to the file (inotify, else every :data:`FOLLOW_SECONDS`)
        and post :class:`Changed`; ends with the pane or once the footer was read."""
        worker = get_current_worker()
        watch = FileWatch(self.follower.path)
        # inotify wakes at once; its timeout is only a safety net (a missed event)
        timeout = FOLLOW_SECONDS if watch.polls else 4 * FOLLOW_SECONDS
        try:
            while not worker.is_cancelled and self.follower.footer is None:
                if watch.wait(timeout) or not watch.polls:
                    self.post_message(self.Changed())
        finally:
            watch.close()

    def on_episode_pane_changed(self, event: Changed) -> None:
        event.stop()
        self.follow()

    def follow(self) -> None:
        """Add the steps flushed since the last look; keep the cursor on the last if it was."""
        table = self.table
        at_end = table.row_count == 0 or table.cursor_row >= table.row_count - 1
        new = self.follower.poll()
        if self.live is None:
            self.live = self.follower.footer is None
        if table.row_count > len(self.follower.steps):  # the file was rewritten
            table.clear()
            new = self.follower.steps
        for record in new:
            observation = record.get("observation")
            table.add_row(*(Text(strip_controls(cell)) for cell in (  # recorded text: data
                str(record.get("step", "?")), str(record.get("actor", "")),
                _cut(action_text(record.get("action"))),
                _cut(observation if isinstance(observation, str) else ""))))
        if new and at_end and self.live:
            table.move_cursor(row=table.row_count - 1, animate=False)
        self._show_title()
        if new or table.row_count == 0:
            self.show_step(table.cursor_row)

    def _show_title(self) -> None:
        f = self.follower
        if f.footer is not None:
            state = "resolved" if f.footer.get("resolved") else "not resolved"
            state += f", {f.footer.get('reason') or 'ended'}"
            if applied_notes(f.footer):
                state += ", applied to the original (w)"
        elif f.header is None:
            state = "no trajectory yet"
        else:
            state = "running: following new steps"
        text = f"{self.label} · {len(f.steps)} step(s) · {state}"
        self.query_one(".pane-title", Static).update(
            Text(one_line(text + (f" · {f.problem}" if f.problem else ""))))

    def show_step(self, number: int) -> None:
        """Show step record ``number`` (0-based) in full below the table."""
        body = self.query_one(".pane-step Static", Static)
        steps = self.follower.steps
        if not 0 <= number < len(steps):
            body.update("(no step)")
            return
        record = steps[number]
        parts = [f"step {record.get('step', number + 1)} · {record.get('actor', '')}"]
        if record.get("reasoning"):
            parts.append(f"reasoning: {record['reasoning']}")
        parts.append(f"action: {action_text(record.get('action'))}")
        observation = record.get("observation")
        parts.append(observation if isinstance(observation, str) else "")
        step = record.get("step")
        parts.extend(applied_notes(self.follower.footer, step if isinstance(step, int) else -1))
        body.update(Text(strip_controls("\n".join(parts))))

    def on_data_table_row_highlighted(self, event: DataTable.RowHighlighted) -> None:
        self.show_step(event.cursor_row)


class EpisodeScreen(Screen[None]):
    """One episode's steps, following its file; ``esc`` goes back.

    Args:
        path: the trajectory file.
        label: the title line.
    """

    BINDINGS: ClassVar[list[BindingType]] = [Binding("escape", "app.pop_screen", "Back")]

    def __init__(self, path: Path, label: str) -> None:
        super().__init__()
        self.path, self.label = path, label

    def compose(self) -> ComposeResult:
        yield EpisodePane(self.path, self.label)
        yield Footer()


class CompareScreen(Screen[None]):
    """Two episodes side by side, steps aligned by index; ``esc`` goes back.

    Args:
        left / right: ``(trajectory file, title)`` of each side.
    """

    BINDINGS: ClassVar[list[BindingType]] = [Binding("escape", "app.pop_screen", "Back")]

    def __init__(self, left: tuple[Path, str], right: tuple[Path, str]) -> None:
        super().__init__()
        self.sides = (left, right)

    def compose(self) -> ComposeResult:
        with Horizontal():
            for number, (path, label) in enumerate(self.sides):
                yield EpisodePane(path, label, id=f"side-{number}")
        yield Footer()

    def on_data_table_row_highlighted(self, event: DataTable.RowHighlighted) -> None:
        """Move the other side's cursor to the same step index (when it has that step)."""
        for pane in self.query(EpisodePane):
            table = pane.table
            if table is not event.data_table and table.cursor_row != event.cursor_row \
                    and event.cursor_row < table.row_count:
                table.move_cursor(row=event.cursor_row, animate=False)
