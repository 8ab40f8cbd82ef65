"""The transcript: one entry per turn (reasoning, proposed action, decision, observation)."""

from __future__ import annotations

import json
from typing import Any

from rich.text import Text
from textual.app import ComposeResult
from textual.containers import Vertical, VerticalScroll
from textual.widgets import Collapsible, Static

#: Observations longer than this many lines are folded (expandable).
FOLD_LINES = 6
#: Only the most recent turns are mounted; older ones are summarised in one line.
MAX_SHOWN = 25


def format_action(action: Any) -> str:
    """Return ``name(arg=value, ...)`` for a ToolCall (or ``-`` for None)."""
    if action is None:
        return "-"
    args = action.arguments
    if isinstance(args, str):
        return f"{action.name}({args})"
    inner = ", ".join(f"{k}={json.dumps(v, ensure_ascii=False)}" for k, v in args.items())
    return f"{action.name}({inner})"


class TurnEntry(Vertical):
    """One turn of the episode."""

    DEFAULT_CSS = """
    TurnEntry { height: auto; margin-bottom: 1; }
    TurnEntry Collapsible { padding: 0; border-top: none; }
    TurnEntry Collapsible Contents { padding: 0 0 0 2; }
    """

    def __init__(self, turn: Any) -> None:
        super().__init__()
        self.turn = turn

    def compose(self) -> ComposeResult:
        # One Static for the summary keeps the widget count (and layout time) low.
        t = self.turn
        text = Text(f"#{t.index} {t.actor} · {t.decision}", style="bold")
        if t.result is not None and t.result.error:
            text.append("  (refused)", style="red")
        if t.reasoning:
            text.append("\n" + t.reasoning.strip(), style="italic")
        if t.proposed is not None and (t.action is None
                                       or t.proposed.to_dict() != t.action.to_dict()):
            text.append("\nproposed: " + format_action(t.proposed))
        if t.action is not None:
            text.append("\naction:   " + format_action(t.action), style="bold")
        if t.note:
            text.append("\nnote:     " + t.note, style="italic")
        observation = (t.result.observation if t.result is not None else "").rstrip("\n")
        lines = observation.split("\n") if observation else []
        if lines and len(lines) <= FOLD_LINES:
            text.append("\n" + observation, style="dim")
        yield Static(text)
        if len(lines) > FOLD_LINES:
            yield Collapsible(Static(Text(observation)),
                              title=f"observation ({len(lines)} lines)", collapsed=True)


class Transcript(VerticalScroll):
    """All turns of the episode, newest at the bottom (only the last MAX_SHOWN mounted)."""

    DEFAULT_CSS = """
    Transcript { padding: 0 1; }
    Transcript > #transcript-earlier { color: $text-muted; }
    """

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self._count = 0
        self._turns: list[Any] = []

    def compose(self) -> ComposeResult:
        yield Static("", id="transcript-earlier")

    def _update_earlier(self, mounted: int | None = None) -> None:
        if mounted is None:
            mounted = len(self.query(TurnEntry))
        hidden = self._count - mounted
        self.query_one("#transcript-earlier", Static).update(
            f"… {hidden} earlier turns" if hidden > 0 else "")

    def add_turn(self, turn: Any) -> None:
        """Append ``turn`` (a session Turn) and scroll to it."""
        self._count += 1
        self._turns.append(turn)
        self.mount(TurnEntry(turn))
        entries = self.query(TurnEntry)
        if len(entries) > MAX_SHOWN:
            entries.first().remove()
        self._update_earlier()
        self.call_after_refresh(self.scroll_end, animate=False)

    def set_turns(self, turns: list[Any]) -> None:
        """Show ``turns`` (oldest first); only the last MAX_SHOWN are mounted.

        One step forward or back (replay) only mounts / removes one entry.
        """
        turns = list(turns)
        current = self._turns
        if len(turns) == len(current) + 1 and all(a is b for a, b in zip(turns, current)):
            self.add_turn(turns[-1])
            return
        entries = self.query(TurnEntry)
        if (len(turns) == len(current) - 1 and len(entries) > MAX_SHOWN // 2
                and all(a is b for a, b in zip(turns, current))):
            entries.last().remove()
            self._turns.pop()
            self._count -= 1
            self._update_earlier(len(entries) - 1)
            return
        entries.remove()
        self._turns = turns
        self._count = len(turns)
        shown = turns[-MAX_SHOWN:]
        if shown:
            self.mount_all([TurnEntry(t) for t in shown])
        self._update_earlier(len(shown))
        self.call_after_refresh(self.scroll_end, animate=False)
