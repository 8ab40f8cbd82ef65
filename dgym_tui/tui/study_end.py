"""The last screen of a study: the participant's tasks and totals, then thanks."""

from __future__ import annotations

from typing import Any, ClassVar

from textual.app import App, ComposeResult
from textual.binding import Binding, BindingType
from textual.widgets import DataTable, Footer, Header, Static

from dgym_tui.study.summary import participant_episodes
from dgym_tui.tui.themes import load_themes


def minutes(seconds: float) -> str:
    """``seconds`` as ``mm:ss`` (whole seconds, rounded down)."""
    whole, rest = divmod(int(seconds), 60)
    return f"{whole:02d}:{rest:02d}"


class StudyEndApp(App[None]):
    """One table: per task of the participant's queue the outcome, time (pauses not
    counted), steps and pdb calls; a line with the totals. q, Enter or Escape closes.

    Args:
        study: the :class:`~dgym_tui.study.plan.Study`.
        participant: the pseudonymous id.
        theme_name: the theme (one of ours or a Textual built-in).
    """

    TITLE = "dgym-tui study"
    BINDINGS: ClassVar[list[BindingType]] = [Binding("q,enter,escape", "quit", "Close")]
    DEFAULT_CSS = """
    #study-end-title { padding: 1 2; text-style: bold; }
    #study-end-table { height: auto; margin: 0 2; }
    #study-end-totals { padding: 1 2; }
    """

    def __init__(self, study: Any, participant: str, theme_name: str = "dgym-dark") -> None:
        super().__init__()
        self.study = study
        self.participant = participant
        self.episodes = participant_episodes(study, participant)
        for theme in load_themes():
            self.register_theme(theme)
        if theme_name in self.available_themes:
            self.theme = theme_name

    def compose(self) -> ComposeResult:
        yield Header()
        yield Static(f"Study {self.study.id} is done for {self.participant}. Thank you!",
                     id="study-end-title")
        yield DataTable(id="study-end-table", cursor_type="row", zebra_stripes=True)
        yield Static(self.totals(), id="study-end-totals")
        yield Footer()

    def on_mount(self) -> None:
        self.sub_title = f"{self.participant} · {self.study.condition}"
        table = self.query_one(DataTable)
        table.add_columns("#", "task", "outcome", "time", "steps", "pdb calls")
        for number, episode in enumerate(self.episodes, 1):
            table.add_row(str(number), episode.task, episode.outcome, minutes(episode.time),
                          str(episode.steps), str(episode.pdb_calls))
        table.focus()

    def totals(self) -> str:
        """``solved S of N · total time mm:ss · steps K`` for the participant."""
        solved = sum(e.outcome == "solved" for e in self.episodes)
        return (f"solved {solved} of {len(self.episodes)} · total time "
                f"{minutes(sum(e.time for e in self.episodes))} · "
                f"steps {sum(e.steps for e in self.episodes)}\n"
                "Press q or Enter to close.")
