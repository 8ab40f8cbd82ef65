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
MAX_SHOWN = 40


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
    TurnEntry .turn-head { text-style: bold; }
    TurnEntry .turn-reasoning { color: $text-muted; }
    TurnEntry Collapsible { padding: 0; border-top: none; }
    TurnEntry Collapsible Contents { padding: 0 0 0 2; }
    """

    def __init__(self, turn: Any) -> None:
        super().__init__()
        self.turn = turn

    def compose(self) -> ComposeResult:
        t = self.turn
        head = Text(f"#{t.index} {t.actor} · {t.decision}")
        if t.result is not None and t.result.error:
            head.append("  (refused)", style="red")
        yield Static(head, classes="turn-head")
        if t.reasoning:
            yield Static(Text(t.reasoning.strip()), classes="turn-reasoning")
        if t.proposed is not None and (t.action is None or t.proposed.to_dict() != t.action.to_dict()):
            yield Static(Text("proposed: " + format_action(t.proposed)))
        if t.action is not None:
            yield Static(Text("action:   " + format_action(t.action), style="bold"))
        if t.note:
            yield Static(Text("note:     " + t.note, style="italic"))
        observation = t.result.observation if t.result is not None else ""
        if observation:
            lines = observation.rstrip("\n").split("\n")
            if len(lines) > FOLD_LINES:
                yield Collapsible(Static(Text(observation.rstrip("\n"))),
                                  title=f"observation ({len(lines)} lines)", collapsed=True)
            else:
                yield Static(Text(observation.rstrip("\n"), style="dim"))


class Transcript(VerticalScroll):
    """All turns of the episode, newest at the bottom (only the last MAX_SHOWN mounted)."""

    DEFAULT_CSS = """
    Transcript { padding: 0 1; }
    Transcript > #transcript-earlier { color: $text-muted; }
    """

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self._count = 0
        self._shown: list[int] = []

    def compose(self) -> ComposeResult:
        yield Static("", id="transcript-earlier")

    def _update_earlier(self) -> None:
        hidden = self._count - len(self.query(TurnEntry))
        self.query_one("#transcript-earlier", Static).update(
            f"… {hidden} earlier turns" if hidden > 0 else "")

    def add_turn(self, turn: Any) -> None:
        """Append ``turn`` (a session Turn) and scroll to it."""
        self._count += 1
        self.mount(TurnEntry(turn))
        entries = self.query(TurnEntry)
        if len(entries) > MAX_SHOWN:
            entries.first().remove()
        self._update_earlier()
        self.call_after_refresh(self.scroll_end, animate=False)

    def set_turns(self, turns: list[Any]) -> None:
        """Replace the content by ``turns`` (oldest first); only the last MAX_SHOWN are mounted."""
        self.query(TurnEntry).remove()
        self._count = len(turns)
        shown = turns[-MAX_SHOWN:]
        if shown:
            self.mount_all([TurnEntry(t) for t in shown])
        self._update_earlier()
        self.call_after_refresh(self.scroll_end, animate=False)
