"""Helpers for the session / trajectory / runner / CLI tests: a scripted policy
and a tiny buggy repository. (The real LLM agent is tested end to end against
the HTTP stub in test_session.py.)"""

from __future__ import annotations

from pathlib import Path

from dgym_tui.core.types import ToolCall
from dgym_tui.records import EpisodeInfo, Proposal, Usage

# pytest without third-party plugins: starts in ~0.2 s instead of seconds.
ENTRYPOINT = "env PYTEST_DISABLE_PLUGIN_AUTOLOAD=1 python -m pytest -q -p no:cacheprovider test_calc.py"
TOOLS = ("listdir", "view", "eval", "rewrite", "submit")

BUGGY = "def add(a, b):\n    return a - b\n\n\ndef mul(a, b):\n    return a * b\n"
TESTS = ("from calc import add, mul\n\n\ndef test_add():\n    assert add(2, 3) == 5\n\n\n"
         "def test_mul():\n    assert mul(2, 3) == 6\n")
FIX = ToolCall("rewrite", {"path": "calc.py", "start": 2, "end": 2, "new_code": "    return a + b"})


def write_repo(folder: Path, source: str = BUGGY, tests: str = TESTS) -> Path:
    """Write the tiny calc repository (one failing test out of two) into ``folder``."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "calc.py").write_text(source)
    (folder / "test_calc.py").write_text(tests)
    return folder


class ScriptedPolicy:
    """Proposes the given actions in order (None = an invalid reply with an error).

    ``seen`` records the turns passed to each ``propose`` call; ``info`` the
    EpisodeInfo of ``reset``.
    """

    name = "scripted"

    def __init__(self, actions: list[ToolCall | None], usage: Usage | None = None) -> None:
        self.actions = list(actions)
        self.usage = usage or Usage(100, 20, 0.001)
        self.seen: list[list] = []
        self.info: EpisodeInfo | None = None

    def reset(self, info: EpisodeInfo) -> None:
        self.info = info

    def propose(self, turns: list) -> Proposal:
        self.seen.append(list(turns))
        if not self.actions:
            raise AssertionError("the scripted policy ran out of actions")
        action = self.actions.pop(0)
        if action is None:
            return Proposal(None, reasoning="hmm", error="no tool call found in the reply",
                            usage=self.usage)
        # a fresh copy: the same ToolCall may be scripted twice
        return Proposal(ToolCall(action.name, dict(action.arguments)),
                        reasoning=f"I will call {action.name}", usage=self.usage)
