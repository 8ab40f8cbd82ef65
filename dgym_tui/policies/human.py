"""A person as a policy: tool calls typed as one line of text (headless front end).

The line syntax is the console's (:mod:`dgym_tui.policies.console_syntax`).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from dgym_tui.episode.policy import Policy
from dgym_tui.episode.records import EpisodeInfo, Proposal, Turn
from dgym_tui.policies.console_syntax import parse_action


class HumanTextPolicy(Policy):
    """A person typing actions at a prompt; each proposal is one parsed line.

    Args:
        read: returns the next typed line; called with the prompt text
            (default: the built-in ``input``). Raising EOFError ends input.
        write: shows a message to the person (default: ``print``).
        prompt: the prompt text.

    Attributes:
        name: ``"human"``. actor: ``"human"`` (the session records turns as
        the person's own).
    """

    name = "human"
    actor = "human"

    def __init__(self, read: Callable[[str], str] = input,
                 write: Callable[[str], None] = print, prompt: str = "dgym> ") -> None:
        self._read = read
        self._write = write
        self.prompt = prompt
        self.tool_names: list[str] = []
        self.schemas: dict[str, dict[str, Any]] = {}

    def reset(self, info: EpisodeInfo) -> None:
        """Learn the tool names and parameter schemas of the episode."""
        self.schemas = {s["function"]["name"]: s["function"].get("parameters") or {}
                        for s in info.tool_schemas}
        self.tool_names = list(self.schemas)

    def propose(self, turns: list[Turn]) -> Proposal:
        """Read lines until one parses; return it as the proposal.

        Blank lines are skipped; a line that does not parse is explained
        through ``write`` and the person is asked again.

        Raises:
            EOFError: the input ended (the front end should finish the episode).
        """
        while True:
            line = self._read(self.prompt)
            if not line.strip():
                continue
            try:
                return Proposal(action=parse_action(line, self.tool_names, self.schemas))
            except ValueError as exc:
                self._write(f"error: {exc}")
