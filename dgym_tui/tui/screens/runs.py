"""The run browser: ``dgym-tui RUN_DIR...`` shows every episode of run folders as a table.

Keys: ``enter`` opens the episode in the replay viewer (the app returns its
trajectory; :func:`browse_runs` opens it and comes back here on ``esc``/``q``;
served in a browser, where the app cannot hand over to another, it opens the
step list of ``w`` instead), ``w`` watches the episode's steps (following a
running one), ``c`` compares it side by side with another episode of the same
task, ``s`` sorts by the cursor's column (again: reversed), ``u`` shows
unresolved episodes only, ``/`` filters by text (task, agent, model, end
reason, review), ``r`` reviews the shown episodes' patches from the cursor on
(:mod:`dgym_tui.tui.screens.review`), ``a`` / ``x`` / ``n`` review the episode
(accept / reject / needs-work, with a note) into the run's ``reviews.jsonl``,
``q`` quits.
The folders are re-indexed once a second (:class:`dgym_tui.runs.index.RunIndex`
re-reads only changed episodes), so a run still being written fills in.
"""

from __future__ import annotations

import threading
from pathlib import Path
from typing import ClassVar

from rich.text import Text
from textual import work
from textual.app import App, ComposeResult
from textual.binding import Binding, BindingType
from textual.screen import Screen
from textual.widgets import DataTable, Footer, Input, Static

from dgym_tui.core.safetext import one_line
from dgym_tui.runs.index import COLUMNS, EpisodeRow, RunIndex, summarize
from dgym_tui.tui.screens.episode import CompareScreen, EpisodeScreen
from dgym_tui.tui.screens.review import (
    VERDICT_BINDINGS,
    ReviewScreen,
    ask_verdict,
    episode_label,
)

#: Seconds between re-indexes of the folders (a run being written fills in).
REFRESH_SECONDS = 1.0
#: Rows put in the table before the first paint (more than a screen holds), then per refresh.
FIRST_ROWS, MORE_ROWS = 100, 200


class RunsScreen(Screen[None]):
    """The table of episodes, its summary line and the filter box.

    Args:
        paths: run folders, or folders holding run folders.
        open_in_app: ``enter`` shows the step list here instead of returning the episode.
        cursor: ``(run, episode)`` to put the cursor on at start.
    """

    DEFAULT_CSS = """
    RunsScreen #runs-summary { height: 1; padding: 0 1; background: $boost; }
    RunsScreen #runs-filter { display: none; }
    RunsScreen #runs-filter.shown { display: block; }
    RunsScreen DataTable { height: 1fr; }
    """
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("enter", "open", "Open"),
        Binding("w", "watch", "Steps"),
        Binding("c", "compare", "Compare"),
        Binding("r", "review_queue", "Review"),
        Binding("s", "sort", "Sort"),
        Binding("u", "unresolved", "Unresolved"),
        Binding("slash", "filter", "Filter"),
        *VERDICT_BINDINGS,
        Binding("q", "app.quit", "Quit"),
    ]

    def __init__(self, paths: list[Path], open_in_app: bool = False,
                 cursor: tuple[Path, str] | None = None) -> None:
        super().__init__()
        self.start_cursor = cursor
        self.index = RunIndex(list(paths))
        self.open_in_app = open_in_app
        self.sort_column: str | None = None
        self.sort_reverse = False
        self.unresolved_only = False
        self.text_filter = ""
        self.shown: list[EpisodeRow] = []
        self._drawn: dict[str, tuple[str, ...]] = {}  # row key -> the cells in the table
        self._generation = 0  # how often the table was filled anew (stops stale batches)
        self._lock = threading.Lock()  # one refresh of the index at a time

    def compose(self) -> ComposeResult:
        yield Static("", id="runs-summary", markup=False)
        yield Input(placeholder="filter: text in task, agent, model, end reason or review "
                    "(enter to apply, empty to clear)", id="runs-filter")
        table: DataTable[str] = DataTable(id="runs-table", cursor_type="row", zebra_stripes=True)
        for attr, heading in COLUMNS:
            table.add_column(heading, key=attr)
        yield table
        yield Footer()

    def on_mount(self) -> None:
        self.index.refresh()
        self.show_rows()
        self.query_one(DataTable).focus()
        self.set_interval(REFRESH_SECONDS, self._reindex_in_thread)

    @work(thread=True, exclusive=True, group="reindex")
    def _reindex_in_thread(self) -> None:
        """The timer's: re-index in a thread (the UI stays responsive over big folders)."""
        with self._lock:
            changed = self.index.refresh()
        if changed:
            self.app.call_from_thread(self.show_rows)

    def reindex(self) -> None:
        """Re-read changed episodes now; repaint only when something changed."""
        with self._lock:
            changed = self.index.refresh()
        if changed:
            self.show_rows()

    # ------------------------------------------------------------ table content
    def _visible(self) -> list[EpisodeRow]:
        rows = self.index.rows
        if self.unresolved_only:
            rows = [r for r in rows if not r.resolved]
        if self.text_filter:
            needle = self.text_filter.lower()
            rows = [r for r in rows if needle in " ".join(
                (r.task, r.agent, r.model, r.benchmark, r.reason, r.state, r.verdict,
                 r.note, r.episode)).lower()]
        if self.sort_column is not None:
            column = self.sort_column
            rows = sorted(rows, key=lambda r: r.sort_key(column), reverse=self.sort_reverse)
        return rows

    def show_rows(self) -> None:
        """Fill the table from the index (filter and sort applied); keep the cursor's episode.

        When the shown episodes are the same ones in the same order (maybe with new ones
        at the end), only changed cells are updated and new rows appended. Otherwise the
        table is filled anew: the first :data:`FIRST_ROWS` rows (and the cursor's) at once,
        the rest :data:`MORE_ROWS` at a time after each screen refresh, so a big folder
        paints at once and the app answers keys while the rest comes in.
        """
        table = self.query_one(DataTable)
        current, column = self.current_row(), table.cursor_column
        before = [self._key(r) for r in self.shown]
        self.shown = self._visible()
        keys = [self._key(r) for r in self.shown]
        self._show_summary()
        if before and keys[:len(before)] == before and table.row_count == len(before):
            for number, row in enumerate(self.shown[:len(before)]):
                cells = self._cells(row)
                if cells != self._drawn.get(keys[number]):
                    for (attr, _), old, text in zip(COLUMNS, self._drawn[keys[number]], cells,
                                                    strict=True):
                        if old != text:
                            table.update_cell(keys[number], attr, Text(text))
                    self._drawn[keys[number]] = cells
            self._add_rows(len(before), len(keys), self._generation)
            return
        table.clear()
        self._drawn.clear()
        self._generation += 1
        if self.start_cursor is not None:  # back from the replay viewer: the episode it showed
            current = next((r for r in self.shown if (r.run, r.episode) == self.start_cursor),
                           current)
            self.start_cursor = None
        number = self.shown.index(current) if current in self.shown else 0
        self._add_rows(0, max(FIRST_ROWS, number + 1), self._generation)
        table.move_cursor(row=number, column=column, animate=False)

    @staticmethod
    def _key(row: EpisodeRow) -> str:
        return f"{row.run}/{row.episode}"

    @staticmethod
    def _cells(row: EpisodeRow) -> tuple[str, ...]:
        return tuple(one_line(row.cell(attr)) for attr, _ in COLUMNS)  # names, reasons: data

    def _add_rows(self, start: int, end: int, generation: int) -> None:
        """Add shown rows ``start:end``; schedule the next batch after a refresh."""
        if generation != self._generation:  # the table was filled anew meanwhile
            return
        table = self.query_one(DataTable)
        for row in self.shown[start:end]:
            cells = self._cells(row)
            self._drawn[self._key(row)] = cells
            table.add_row(*map(Text, cells), key=self._key(row))
        if end < len(self.shown):
            self.call_after_refresh(self._add_rows, end, end + MORE_ROWS, generation)

    def _show_summary(self) -> None:
        totals = summarize(self.shown)
        if not self.index.rows:
            text = ("no episodes yet in " + ", ".join(str(p) for p in self.index.paths)
                    + f" (checked every {REFRESH_SECONDS:g} s)")
        else:
            text = (f"{totals['episodes']} episode(s) · resolved {totals['resolved']} "
                    f"({totals['success_rate']:.0%} of ended) · mean steps "
                    f"{totals['mean_steps']:.1f} · cost ${totals['cost']:.4f}")
            if totals["running"]:
                text += f" · {totals['running']} running"
            if totals["problems"]:
                text += f" · {totals['problems']} with problems"
            shown = ["unresolved only" if self.unresolved_only else "",
                     f"filter {self.text_filter!r}" if self.text_filter else "",
                     f"sorted by {self.sort_column}{' (reversed)' if self.sort_reverse else ''}"
                     if self.sort_column else ""]
            if any(shown):
                text += " · " + ", ".join(s for s in shown if s)
        self.query_one("#runs-summary", Static).update(text)

    def current_row(self) -> EpisodeRow | None:
        """The episode under the cursor, or None (empty table)."""
        table = self.query_one(DataTable)
        if not self.shown or table.cursor_row < 0 or table.cursor_row >= len(self.shown):
            return None
        return self.shown[table.cursor_row]

    # ------------------------------------------------------------------ actions
    def action_open(self) -> None:
        row = self.current_row()
        if row is None:
            return
        if not row.trajectory.is_file():
            self.notify(f"{row.episode}: no trajectory to open", severity="warning")
            return
        if self.open_in_app:
            self.action_watch()
            return
        self.app.exit(row)

    def action_watch(self) -> None:
        row = self.current_row()
        if row is not None:
            self.app.push_screen(EpisodeScreen(row.trajectory, episode_label(row)))

    def action_compare(self) -> None:
        """Side by side with the next shown episode of the same task (after the cursor, cycling)."""
        row = self.current_row()
        if row is None:
            return
        start = self.shown.index(row)
        others = [r for r in self.shown[start + 1:] + self.shown[:start] if r.task == row.task]
        if not others:
            self.notify(f"no other episode of {row.task} to compare with", severity="warning")
            return
        self.app.push_screen(CompareScreen((row.trajectory, episode_label(row)),
                                           (others[0].trajectory, episode_label(others[0]))))

    def action_review_queue(self) -> None:
        row = self.current_row()
        if row is not None:
            self.app.push_screen(ReviewScreen(self.shown, self.shown.index(row)),
                                 lambda _: self.reindex())

    def on_data_table_row_selected(self, event: DataTable.RowSelected) -> None:
        event.stop()
        self.action_open()

    def action_sort(self) -> None:
        table = self.query_one(DataTable)
        column = COLUMNS[max(table.cursor_column, 0)][0]
        self.sort_reverse = (not self.sort_reverse) if column == self.sort_column else False
        self.sort_column = column
        self.show_rows()

    def on_data_table_header_selected(self, event: DataTable.HeaderSelected) -> None:
        event.stop()
        self.query_one(DataTable).move_cursor(column=event.column_index)
        self.action_sort()

    def action_unresolved(self) -> None:
        self.unresolved_only = not self.unresolved_only
        self.show_rows()

    def action_filter(self) -> None:
        box = self.query_one("#runs-filter", Input)
        box.add_class("shown")
        box.value = self.text_filter
        box.focus()

    def on_input_submitted(self, event: Input.Submitted) -> None:
        if event.input.id != "runs-filter":
            return
        event.stop()
        self.text_filter = event.value.strip()
        event.input.remove_class("shown")
        self.query_one(DataTable).focus()
        self.show_rows()

    def action_verdict(self, verdict: str) -> None:
        row = self.current_row()
        if row is not None:
            ask_verdict(self, row, verdict, self.reindex)


class RunsApp(App[EpisodeRow | None]):
    """The run browser as an app; exits with the episode to open (None: quit).

    Args:
        paths: run folders, or folders holding run folders.
        cursor: the episode to put the cursor on at start (back from the replay viewer).
        theme_name: the start theme (None: Textual's default).
        open_in_app: ``enter`` shows the episode's steps in this app (served in a browser).
        reviewer: the name verdicts are saved under; None: asked at the first verdict.
    """

    TITLE = "dgym-tui runs"

    def __init__(self, paths: list[Path], cursor: tuple[Path, str] | None = None,
                 theme_name: str | None = None, open_in_app: bool = False,
                 reviewer: str | None = None) -> None:
        super().__init__()
        self.reviewer = reviewer
        self.paths = list(paths)
        self.open_in_app = open_in_app
        self.cursor = cursor
        self.theme_name = theme_name

    def on_mount(self) -> None:
        if self.theme_name:
            from dgym_tui.tui.themes import load_themes

            for theme in load_themes():
                self.register_theme(theme)
            self.theme = self.theme_name
        self.push_screen(RunsScreen(self.paths, self.open_in_app, self.cursor))


def browsed_replay(row: EpisodeRow, theme_name: str = "dgym-dark") -> App:
    """The replay viewer of ``row``'s trajectory, where ``esc`` (or ``q``) goes back to the runs.

    Raises:
        TrajectoryError: the trajectory cannot be read.
    """
    import dgym_tui.tui.app as app_module
    from dgym_tui.episode.trajectory import read_trajectory
    from dgym_tui.tui.app import DgymApp
    from dgym_tui.tui.replay.screen import ReplayScreen
    from dgym_tui.tui.replay_model import ReplayModel

    class BrowsedScreen(ReplayScreen):
        BINDINGS: ClassVar[list[BindingType]] = [Binding("escape", "quit_app", "Back to runs")]

    class BrowsedReplay(DgymApp):
        # CSS_PATH is read relative to the class's module: point at the app's own
        CSS_PATH = str(Path(app_module.__file__).parent / str(DgymApp.CSS_PATH))
        REPLAY_SCREEN = BrowsedScreen

    return BrowsedReplay(replay=ReplayModel(read_trajectory(row.trajectory)), ask_apply=False,
                         theme_name=theme_name)


def browse_runs(paths: list[Path], theme_name: str = "dgym-dark",
                reviewer: str | None = None) -> int:
    """Run the run browser; open episodes in the replay viewer and come back, until quit.
    ``reviewer``: the name verdicts are saved under (None: asked at the first verdict).

    Returns:
        The exit code (0 on a normal quit).
    """
    from dgym_tui.episode.trajectory import TrajectoryError
    from dgym_tui.tui.serve import is_served

    if is_served():  # one app per browser tab: its end closes the tab's session
        app = RunsApp(paths, theme_name=theme_name, open_in_app=True, reviewer=reviewer)
        app.run()
        return int(app.return_code or 0)
    cursor = None
    while True:
        browser = RunsApp(paths, cursor, theme_name, reviewer=reviewer)
        row = browser.run()
        reviewer = browser.reviewer  # asked once, kept across the replays
        if row is None:
            return int(browser.return_code or 0)
        cursor = (row.run, row.episode)
        try:
            viewer = browsed_replay(row, theme_name)
        except TrajectoryError as exc:
            print(f"dgym-tui: {str(exc).splitlines()[0]}")
            continue
        viewer.run()

