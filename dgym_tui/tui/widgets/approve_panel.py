"""The approve panel: the agent's proposed action with its arguments and the decision keys."""

from __future__ import annotations

import json
from typing import Any

from rich.text import Text
from textual.app import ComposeResult
from textual.containers import VerticalScroll
from textual.markup import escape
from textual.widgets import Static

from dgym_tui.core.safetext import one_line, strip_controls

KEYS_HINT = ("[a] approve  [e] edit  [R] reject with note  [t] take over  [g] go (auto; "
             "[space] pauses)  ·  pdb keys n s c r u d b work too")
ERROR_KEYS_HINT = "[m] ask again now  [t] take over  [g] go (auto)"


class ApprovePanel(VerticalScroll):
    """Shows a pending :class:`~dgym_tui.episode.records.Proposal`; hidden when there is none."""

    DEFAULT_CSS = """
    ApprovePanel { height: auto; max-height: 14; border: round $accent; display: none;
                   padding: 0 1; }
    ApprovePanel.-shown { display: block; }
    /* docked: the keys stay on the panel's last rows while a long proposal scrolls above */
    ApprovePanel > #approve-keys { color: $accent; text-style: bold; dock: bottom; }
    ApprovePanel > #approve-reasoning { color: $text-muted; }
    """

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.proposal: Any = None

    def compose(self) -> ComposeResult:
        yield Static("", id="approve-reasoning")
        yield Static("", id="approve-action")
        yield Static(KEYS_HINT, id="approve-keys", markup=False)

    def show(self, proposal: Any, step: int) -> None:
        """Show ``proposal`` (a Proposal) as the candidate for 1-based ``step``; the title
        names the MCP client of an outside agent's call (``raw["external"]["client"]``)."""
        self.proposal = proposal
        # an outside agent's call (dgym mcp) names the client that sent it
        client = ((proposal.raw or {}).get("external") or {}).get("client")
        who = one_line(str(client))[:60] if client else "agent"
        self.border_title = f"{escape(who)} proposes step {step}"
        self.query_one("#approve-reasoning", Static).update(Text(strip_controls(proposal.reasoning.strip())))
        if proposal.action is None:
            body = Text(strip_controls(f"no valid action: {proposal.error}"), style="red")
        else:
            args = proposal.action.arguments
            pretty = args if isinstance(args, str) else json.dumps(args, indent=2,
                                                                   ensure_ascii=False)
            body = Text(proposal.action.name, style="bold")
            body.append("\n" + strip_controls(pretty))  # a model's (or client's) text: data
        self.query_one("#approve-action", Static).update(body)
        self.query_one("#approve-keys", Static).update(KEYS_HINT)
        self.add_class("-shown")

    def show_error(self, text: str, failures: int, retry_in: float) -> None:
        """Show that asking the agent failed (``failures`` times in a row) and when it is
        asked again (``retry_in`` seconds)."""
        self.proposal = None
        self.border_title = "the agent failed"
        times = f" ({failures} times in a row)" if failures > 1 else ""
        self.query_one("#approve-reasoning", Static).update(
            Text(f"asking again in {retry_in:.0f} s{times}"))
        self.query_one("#approve-action", Static).update(Text(strip_controls(text), style="red"))
        self.query_one("#approve-keys", Static).update(ERROR_KEYS_HINT)
        self.add_class("-shown")

    def hide(self) -> None:
        """Hide the panel and forget the proposal."""
        self.proposal = None
        self.remove_class("-shown")
