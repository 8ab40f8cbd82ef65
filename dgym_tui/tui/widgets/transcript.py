"""The transcript: one entry per turn (reasoning, proposed action, decision, observation)."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any, ClassVar

from rich.style import Style
from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import VerticalScroll
from textual.widgets import Static

from dgym_tui.core.safetext import strip_controls

#: Observations longer than this many lines are folded (a click expands them).
FOLD_LINES = 6
#: Only the most recent turns are mounted; older ones are summarised in one line.
MAX_SHOWN = 25


def format_action(action: Any) -> str:
    """Return ``name(arg=value, ...)`` for a ToolCall, ``$ command`` for a bash call
    (or ``-`` for None)."""
    if action is None:
        return "-"
    args = action.arguments
    if action.name == "bash" and isinstance(args, dict) and isinstance(args.get("command"), str):
        return "$ " + args["command"]
    if isinstance(args, str):
        return f"{action.name}({args})"
    inner = ", ".join(f"{k}={json.dumps(v, ensure_ascii=False)}" for k, v in args.items())
    return f"{action.name}({inner})"


def render_turn(turn: Any, expanded: bool = False) -> Text:
    """Return the transcript text of one turn (a session ``Turn``).

    Observations longer than :data:`FOLD_LINES` lines are folded to their first
    lines unless ``expanded``; the fold marker carries a click action
    ``fold(<turn index>)`` handled by the transcript's body widget.
    """
    t = turn  # every text below may come from a model, a person or a trajectory file: data
    text = Text(f"#{t.index} {t.actor} · {t.decision}", style="bold")
    if t.result is not None and t.result.error:
        text.append("  (refused)", style="red")
    if t.reasoning:
        text.append("\n" + strip_controls(t.reasoning.strip()), style="italic")
    if t.proposed is not None and (t.action is None
                                   or t.proposed.to_dict() != t.action.to_dict()):
        text.append("\nproposed: " + strip_controls(format_action(t.proposed)))
    if t.action is not None:
        text.append("\naction:   " + strip_controls(format_action(t.action)), style="bold")
    if t.note:
        text.append("\nnote:     " + strip_controls(t.note), style="italic")
    if t.error:
        text.append("\ninvalid:  " + strip_controls(t.error), style="red")
    lines = _observation_lines(t)
    if not lines:
        return text
    folded = len(lines) > FOLD_LINES and not expanded
    text.append("\n" + "\n".join(lines[:FOLD_LINES - 1] if folded else lines), style="dim")
    if len(lines) > FOLD_LINES:
        text.append("\n")
        text.append(f"▶ {len(lines) - FOLD_LINES + 1} more lines (click)" if folded else "▼ fold",
                    style=Style(bold=True, meta={"@click": f"fold({int(t.index)})"}))
    return text


def _observation_lines(turn: Any) -> list[str]:
    """The lines of ``turn``'s observation (none without a result)."""
    observation = strip_controls(turn.result.observation if turn.result is not None
                                 else "").rstrip("\n")
    return observation.split("\n") if observation else []


class _Body(Static):
    """The shown turns' text. A fold marker's click runs :meth:`action_fold` here (Textual
    runs ``@click`` actions on the widget that drew the text), handed to the transcript."""

    def action_fold(self, index: int) -> None:
        """Expand or fold the observation of turn ``index`` (1-based)."""
        transcript = self.parent
        if isinstance(transcript, Transcript):
            transcript.toggle(int(index))


class Transcript(VerticalScroll, can_focus=True):
    """The episode's turns, newest at the bottom; only the last MAX_SHOWN are rendered.

    All shown turns are drawn by ONE Static (mounting a widget per turn made
    opening a long trajectory slow); a click on a fold marker expands or
    folds that turn's observation. From the keyboard (transcript focused):
    ``enter`` expands or folds the newest folded turn's observation,
    ``Z`` expands or folds all of them.
    """

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("enter", "fold_last", "Expand/fold", show=False),
        Binding("Z,shift+z", "fold_all", "Expand/fold all", show=False),
    ]

    DEFAULT_CSS = """
    Transcript { padding: 0 1; }
    Transcript:focus { background: $boost; }
    Transcript > #transcript-earlier { color: $text-muted; }
    Transcript > #transcript-body { height: auto; }
    """

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self._turns: Sequence[Any] = []
        #: Indexes of the turns whose long observation is expanded.
        self.expanded: set[int] = set()
        self._cache: dict[tuple[int, int, bool], Text] = {}
        self._stale = False  # turns added while the tab was hidden: drawn when it shows

    def compose(self) -> ComposeResult:
        yield Static("", id="transcript-earlier")
        yield _Body("", id="transcript-body")

    @property
    def shown(self) -> list[Any]:
        """The turns currently drawn (the last MAX_SHOWN)."""
        return list(self._turns[-MAX_SHOWN:])

    @property
    def text(self) -> str:
        """The transcript as plain text (for tests)."""
        return self._body_text().plain

    def _turn_text(self, turn: Any) -> Text:
        key = (id(turn), int(turn.index), turn.index in self.expanded)
        text = self._cache.get(key)
        if text is None:
            text = render_turn(turn, key[2])
            self._cache[key] = text
        return text

    def _body_text(self) -> Text:
        return Text("\n\n").join(self._turn_text(t) for t in self.shown)

    def _redraw(self, scroll: bool = True) -> None:
        hidden = len(self._turns) - len(self.shown)
        self.query_one("#transcript-earlier", Static).update(
            f"… {hidden} earlier turns" if hidden > 0 else "")
        self.query_one("#transcript-body", Static).update(self._body_text())
        if len(self._cache) > 4 * MAX_SHOWN:
            keep = {id(t) for t in self.shown}
            self._cache = {k: v for k, v in self._cache.items() if k[0] in keep}
        if scroll:
            self.call_after_refresh(self.scroll_end, animate=False)

    def add_turn(self, turn: Any) -> None:
        """Append ``turn`` (a session Turn) and scroll to it. While the transcript's tab is
        hidden, it is drawn when the tab shows (each draw lays the whole screen out again:
        a hidden tab would slow every pdb stop down)."""
        if not isinstance(self._turns, list):
            self._turns = list(self._turns)
        self._turns.append(turn)
        if self.is_mounted and not self.is_on_screen:
            self._stale = True
            return
        self._redraw()

    def on_show(self) -> None:
        if self._stale:
            self._stale = False
            self._redraw()

    def set_turns(self, turns: Sequence[Any]) -> None:
        """Show ``turns`` (oldest first); only the last MAX_SHOWN are rendered.

        A list is copied; another sequence (e.g. replay's lazy turns) is kept
        as it is, so only the shown turns are ever read from it.
        """
        self._turns = list(turns) if isinstance(turns, list) else turns
        self._redraw()

    def toggle(self, index: int) -> None:
        """Expand or fold the observation of turn ``index`` (1-based)."""
        self.expanded ^= {index}
        self._redraw(scroll=False)

    def _foldable(self) -> list[int]:
        return [int(t.index) for t in self.shown if len(_observation_lines(t)) > FOLD_LINES]

    def action_fold_last(self) -> None:
        """Expand the newest folded turn; when every one is expanded, fold the newest."""
        foldable = self._foldable()
        folded = [i for i in foldable if i not in self.expanded]
        if folded:
            self.toggle(folded[-1])
        elif foldable:
            self.toggle(foldable[-1])

    def action_fold_all(self) -> None:
        """Expand every shown long observation, or fold them all when all are expanded."""
        foldable = set(self._foldable())
        if foldable <= self.expanded:
            self.expanded -= foldable
        else:
            self.expanded |= foldable
        self._redraw(scroll=False)
