"""The review queue: each episode's patch, its trajectory one key away, and a verdict.

:class:`ReviewScreen` goes through a list of episodes (the run browser's
shown rows: e.g. resolved only, or all). It shows the episode's ``patch.diff``;
``t`` opens its trajectory (:class:`~dgym_tui.tui.screens.episode.EpisodeScreen`,
``esc`` comes back), ``a`` / ``x`` / ``n`` record accept / reject / needs-work
with a note in the run's ``reviews.jsonl`` (:func:`dgym_tui.runs.reviews.append_review`)
and move to the next episode, ``]`` / ``[`` skip forward / back, ``esc`` ends.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import ClassVar

from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.screen import Screen
from textual.widgets import Footer, Static

from dgym_tui.core.safetext import one_line
from dgym_tui.runs.index import EpisodeRow
from dgym_tui.runs.reviews import append_review, read_reviews
from dgym_tui.tui.screens.episode import EpisodeScreen
from dgym_tui.tui.screens.modals import PromptScreen
from dgym_tui.tui.widgets.diff_view import DiffView


class NoteScreen(PromptScreen):
    """Ask for a review note; dismisses with the note ("" allowed) or None (cancelled)."""

    DEFAULT_CSS = """
    NoteScreen > Vertical { width: 80; }
    NoteScreen .modal-title { text-style: none; margin-bottom: 0; }
    """

    def __init__(self, title: str) -> None:
        super().__init__(title, "note (enter to save, esc to cancel)")


#: The keys of a verdict (``action_verdict(verdict)`` of the screen that has them).
VERDICT_BINDINGS: list[BindingType] = [
    Binding("a", "verdict('accept')", "Accept"),
    Binding("x", "verdict('reject')", "Reject"),
    Binding("n", "verdict('needs-work')", "Needs work"),
]


def episode_label(row: EpisodeRow) -> str:
    """``task (agent × model, episode)``: how a screen names an episode."""
    return f"{row.task} ({row.agent} × {row.model}, {row.episode})"


def ask_verdict(screen: Screen, row: EpisodeRow, verdict: str,
                saved: Callable[[], None]) -> None:
    """Ask for a note, then append ``verdict`` on ``row`` to its run's ``reviews.jsonl``;
    call ``saved`` after writing (nothing happens when the note is cancelled).

    The reviewer's name is the app's ``reviewer`` (``--reviewer`` / ``$DGYM_REVIEWER``);
    without one it is asked for first, once per app (empty: reviews stay anonymous)."""
    app = screen.app

    def save(note: str | None) -> None:
        if note is None:
            return
        try:
            append_review(row.run, row.episode, verdict, note, getattr(app, "reviewer", ""))
        except (OSError, ValueError) as exc:
            screen.notify(f"review not saved: {exc}", severity="error")
            return
        saved()

    def named(name: str | None) -> None:
        if name is None:
            return
        app.reviewer = one_line(name)  # type: ignore[attr-defined]
        app.push_screen(NoteScreen(f"{verdict}: {episode_label(row)}"), save)

    if getattr(app, "reviewer", None) is None:
        app.push_screen(PromptScreen("Your name as reviewer (saved with each verdict in "
                                     "reviews.jsonl; --reviewer or DGYM_REVIEWER sets it)",
                                     "a name or pseudonym; empty: anonymous"), named)
        return
    named(app.reviewer)  # type: ignore[attr-defined]


def _patch_of(row: EpisodeRow) -> str:
    """The episode's ``patch.diff``, or a saved session's footer patch ("" when none)."""
    if row.patch_file is not None:
        try:
            return row.patch_file.read_text(encoding="utf-8", errors="replace")
        except OSError:
            return ""
    from dgym_tui.episode.trajectory import TrajectoryError, read_trajectory

    try:
        patch = (read_trajectory(row.trajectory).footer or {}).get("patch")
    except TrajectoryError:
        return ""
    return patch if isinstance(patch, str) else ""


class ReviewScreen(Screen[None]):
    """Review the patches of ``rows`` one by one, starting at ``start``.

    Args:
        rows: the episodes to review, in order.
        start: index of the first one shown.
    """

    DEFAULT_CSS = """
    ReviewScreen #review-title { height: auto; background: $boost; padding: 0 1; }
    ReviewScreen DiffView { height: 1fr; }
    """
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("t", "trajectory", "Trajectory"),
        *VERDICT_BINDINGS,
        Binding("right_square_bracket", "move(1)", "Next"),
        Binding("left_square_bracket", "move(-1)", "Previous"),
        Binding("escape", "app.pop_screen", "Back"),
    ]

    def __init__(self, rows: list[EpisodeRow], start: int = 0) -> None:
        super().__init__()
        self.rows = list(rows)
        self.number = min(max(start, 0), max(len(self.rows) - 1, 0))

    def compose(self) -> ComposeResult:
        yield Static("", id="review-title", markup=False)
        yield DiffView(id="review-diff")
        yield Footer()

    def on_mount(self) -> None:
        self.show()

    @property
    def row(self) -> EpisodeRow | None:
        """The episode under review (None: nothing to review)."""
        return self.rows[self.number] if self.rows else None

    def show(self) -> None:
        """Show the current episode's title, latest verdict and patch."""
        title = self.query_one("#review-title", Static)
        diff = self.query_one(DiffView)
        row = self.row
        if row is None:
            title.update("nothing to review")
            diff.set_patch("")
            return
        review = read_reviews(row.run).get(row.episode)
        verdict = f"{review['verdict']}" + (f" ({review['note']})" if review.get("note") else "") \
            if review else "not reviewed"
        resolved = {True: "resolved", False: "not resolved", None: row.state}[row.resolved]
        title.update(one_line(f"review {self.number + 1}/{len(self.rows)}: {episode_label(row)} · "
                              f"{resolved} · {row.steps if row.steps is not None else '?'} steps · "
                              f"verdict: {verdict}"))
        diff.set_patch(_patch_of(row))

    def action_move(self, delta: int) -> None:
        if self.rows:
            self.number = (self.number + delta) % len(self.rows)
            self.show()

    def action_trajectory(self) -> None:
        if self.row is not None:
            self.app.push_screen(EpisodeScreen(self.row.trajectory, episode_label(self.row)))

    def action_verdict(self, verdict: str) -> None:
        if self.row is None:
            return

        def saved() -> None:
            if self.number < len(self.rows) - 1:
                self.number += 1
            self.show()

        ask_verdict(self, self.row, verdict, saved)
